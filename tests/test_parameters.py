"""One specification per parameter (vlad.core._parameters): a bad value gets one
message from the function, the estimator and the command line alike, and the
range's edges are where the specification says."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.utils._param_validation import InvalidParameterError

import vlad
from vlad.asmk._quantizer import EXACT
from vlad.cli._main import main
from vlad.core import _parameters
from vlad.core._kmeans import KMEANS_BACKENDS
from vlad.core._parameters import (
    ASMK_PARAMETERS,
    ENCODING_PARAMETERS,
    FACTORY,
    KMEANS_PARAMETERS,
    MULTIPLE_ASSIGNMENT,
    N_JOBS,
    POWER,
    SEARCH_PARAMETERS,
    VERIFICATION_PARAMETERS,
    K,
    Parameter,
)
from vlad.errors import ParameterError, ParameterTypeError, VladError
from vlad.estimators._parameters import constraints
from vlad.images._detectors import DETECTORS
from vlad.images._extractors import FEATURES
from vlad.images._learned import LEARNED_EXTRACTORS, LEARNED_PARAMETERS
from vlad.images._sift import DESCRIPTOR_PARAMETERS
from vlad.verification._geometry import (
    EPIPOLAR_THRESHOLD,
    GEOMETRIC_MODELS,
    MINIMAL_MATCHES,
    POSITION_SIDE,
    REPROJECTION_THRESHOLD,
)
from vlad.verification._matching import MATCHINGS
from vlad.verification._spatial import SMALLEST_MAX_KEYPOINTS

PHOTO = "data/chelsea.jpg"
SETS = vlad.datasets.make_descriptor_sets(3, 10, 4, seed=0)
CODEBOOK = vlad.fit_codebook(SETS, 2, seed=0)


def encode(**settings):
    vlad.encode(SETS, CODEBOOK, **settings)


def fit_codebook(**settings):
    vlad.fit_codebook(SETS, **{"n_clusters": 2, **settings})


def extract(**settings):
    vlad.extract_images(PHOTO, settings, n_jobs=1)


def extract_learned(**settings):
    vlad.extract_images(PHOTO, {"features": "aliked", **settings}, n_jobs=1)


def fit_encoder(**settings):
    vlad.VLADEncoder(**{"n_clusters": 2, **settings}).fit(SETS)


def fit_extractor(**settings):
    vlad.SIFTExtractor(**settings).fit()


def verify(**settings):
    # The settings are checked before the query and the database.
    vlad.verification.spatial_rerank(
        np.zeros((3, 4)), np.zeros((3, 4)), [0], None, **settings
    )


def build_asmk(**settings):
    vlad.asmk.build_asmk_index(SETS, CODEBOOK, **settings)


ASMK_INDEX = vlad.asmk.build_asmk_index(SETS, CODEBOOK)


def search_asmk(**settings):
    ASMK_INDEX.search(SETS, **settings)


def build_index(**settings):
    vlad.search.build_index(np.eye(3, 4, dtype=np.float32), **settings)


ESTIMATORS = {fit_encoder: "VLADEncoder", fit_extractor: "SIFTExtractor"}

# Each specified parameter: the function, the estimator (None where no
# estimator takes it) and the command line (None for a flag, which cannot be
# given a bad value) that take it.
CALLERS = {
    **{
        parameter.name: (encode, fit_encoder, ["encode"], parameter)
        for parameter in ENCODING_PARAMETERS
    },
    **{
        parameter.name: (fit_codebook, None, ["fit"], parameter)
        for parameter in KMEANS_PARAMETERS
    },
    **{
        parameter.name: (extract, fit_extractor, ["extract"], parameter)
        for parameter in DESCRIPTOR_PARAMETERS
    },
}
CALLERS["n_clusters"] = (fit_codebook, fit_encoder, ["fit"], CALLERS["n_clusters"][3])
CALLERS["sample"] = (fit_codebook, fit_encoder, ["fit"], CALLERS["sample"][3])
CALLERS["reduce_jpeg"] = (extract, None, ["extract"], CALLERS["reduce_jpeg"][3])
# The functions and the command line take learned features too; the SIFT
# estimator OpenCV's alone (see test_the_sift_estimator_takes_opencvs_features).
CALLERS["features"] = (extract, None, ["extract"], FEATURES)
# The learned features' own options; "model" is the library's alone.
CALLERS.update(
    {
        parameter.name: (extract_learned, None, ["extract"], parameter)
        for parameter in LEARNED_PARAMETERS
        if parameter.name in ("detection_threshold", "batch_size")
    }
)
CALLERS.update(
    {
        parameter.name: (verify, None, ["search"], parameter)
        for parameter in VERIFICATION_PARAMETERS
    }
)
CALLERS.update(
    {
        parameter.name: (build_asmk, None, ["index"], parameter)
        for parameter in ASMK_PARAMETERS
    }
)
CALLERS["n_jobs"] = (encode, fit_encoder, ["encode"], N_JOBS)
CALLERS["k"] = (search_asmk, None, ["search"], K)
CALLERS["multiple_assignment"] = (search_asmk, None, ["search"], MULTIPLE_ASSIGNMENT)
CALLERS["factory"] = (build_index, None, ["index"], FACTORY)
CALLERS["parameters"] = (build_index, None, ["index"], SEARCH_PARAMETERS)
#: The command line's name of each option, where it is not --NAME.
FLAGS = {
    "n_nearest": "--nearest",
    "n_jobs": "--jobs",
    "model": "--geometry",
    "reprojection_threshold": "--inlier-threshold",
    "depth": "--rerank-depth",
    "k": "--top",
}
#: Everything a command needs besides the option under test; click stops at
#: the bad value, before it reads any of them.
REST = {
    "encode": [PHOTO, "-c", PHOTO, "-o", "unused.npy"],
    "fit": [PHOTO, "-o", "unused.npz"],
    "extract": [PHOTO, "-o", "unused.npz"],
    "search": ["data", PHOTO],
    "index": [PHOTO, "-o", "unused"],
}


def not_a_number(text: str) -> bool:
    for kind in (int, float):
        try:
            kind(text)
        except ValueError:
            continue
        return False
    return True


words = st.text(st.characters(min_codepoint=33, max_codepoint=126), min_size=1)


def bad_values(parameter: Parameter) -> st.SearchStrategy:
    """Values ``parameter`` refuses, as the command line would pass them
    (numbers, or text) where it takes any."""
    if parameter.kind is bool:
        return st.sampled_from(["yes", 1, 0.0, "True"])
    if parameter.kind is str and not parameter.choices:
        return st.sampled_from(["", " ", "\t"])
    if parameter.kind is str:
        return words.filter(lambda text: text not in parameter.choices)
    strangers = words.filter(not_a_number)
    specials = [value for value, _ in parameter.specials]
    if parameter.kind is int:
        numbers = st.integers(max_value=int(parameter.low) - 1)
        return st.one_of(numbers.filter(lambda n: n not in specials), strangers)
    low, high = parameter.low, parameter.high
    numbers = st.one_of(
        st.floats(max_value=low, exclude_max=parameter.low_closed),
        st.floats(min_value=high, exclude_min=parameter.high_closed)
        if high is not None
        else st.just(math.inf),
        st.sampled_from([math.nan, math.inf, -math.inf]),
    )
    return st.one_of(numbers, strangers)


@pytest.mark.parametrize("name", sorted(CALLERS))
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_bad_value_gets_one_message_everywhere(name, data):
    function, estimator, command, parameter = CALLERS[name]
    value = data.draw(bad_values(parameter))
    message = parameter.message(value)
    assert message == f"{name} must be {parameter.expectation}; got {value!r}"
    with pytest.raises(ParameterError) as raised:
        function(**{name: value})
    assert str(raised.value) == message
    # A wrong type is a TypeError too, a value out of range a ValueError alone.
    wrong_type = isinstance(raised.value, ParameterTypeError)
    assert wrong_type == isinstance(raised.value, TypeError)
    if estimator is not None:
        with pytest.raises(InvalidParameterError) as raised:
            estimator(**{name: value})
        # scikit-learn's frame (check_estimator requires it) around the same
        # expectation and the same value.
        assert str(raised.value) == (
            f"The {name!r} parameter of {ESTIMATORS[estimator]} must be "
            f"{parameter.expectation}. Got {value!r} instead."
        )
    if parameter.kind is not bool:
        flag = FLAGS.get(name, "--" + name.replace("_", "-"))
        result = CliRunner().invoke(
            main, [*command, f"{flag}={value}", *REST[command[0]]]
        )
        assert result.exit_code == 2, result.output
        names = f"'-j' / {flag!r}" if name == "n_jobs" else repr(flag)
        assert result.output.splitlines()[-1] == (
            f"Error: Invalid value for {names}: {message}"
        )


def test_the_choices_are_the_registries():
    specified = {parameter.name: parameter for parameter in DESCRIPTOR_PARAMETERS}
    assert set(specified["features"].choices) == set(DETECTORS)
    assert set(FEATURES.choices) == set(DETECTORS) | set(LEARNED_EXTRACTORS)
    backends = {parameter.name: parameter for parameter in KMEANS_PARAMETERS}
    assert set(backends["backend"].choices) == {"auto", *KMEANS_BACKENDS}
    assert vlad.core._nearest.ASSIGNMENTS == ("hard", "multiple", "soft")


def test_the_sift_estimator_takes_opencvs_features():
    with pytest.raises(InvalidParameterError) as raised:
        fit_extractor(features="aliked")
    assert str(raised.value) == (
        "The 'features' parameter of SIFTExtractor must be one of ['akaze', 'orb', "
        "'sift']. Got 'aliked' instead."
    )


@pytest.mark.parametrize(
    ("parameter", "words"),
    [
        (POWER, "a number in (0, 1]"),
        (Parameter("n", int, 1, "", low=1), "an integer >= 1"),
        (Parameter("n", int, 1, "", low=0, none=True), "None or an integer >= 0"),
        (
            Parameter("w", float, 1.0, "", low=0, closed="neither"),
            "a positive finite number",
        ),
        (Parameter("r", float, 0.5, "", low=0, high=1), "a number in [0, 1]"),
        (Parameter("b", bool, None, "", none=True), "True, False or None"),
        (Parameter("s", str, "a", "", choices=("a", "b")), "one of ['a', 'b']"),
        (N_JOBS, "None, -1 (every core) or an integer >= 1"),
        (
            _parameters.VERIFY_KEYPOINTS,
            "None, 0 (every keypoint) or an integer >= 8",
        ),
        (FACTORY, "None or a faiss index_factory string"),
        (Parameter("t", str, "x", ""), "a non-empty string"),
    ],
)
def test_expectations_in_words(parameter, words):
    assert parameter.expectation == words


def test_scikit_learn_constraints_agree_with_the_specification():
    """Each constraint accepts what the specification accepts, on the edges."""
    from sklearn.utils._param_validation import make_constraint

    for parameter in (*LIBRARY_PARAMETERS, *DESCRIPTOR_PARAMETERS):
        allowed = [make_constraint(c) for c in constraints(parameter)]
        samples = [None, True, False, "x", *parameter.choices, -1, 0, 1, 0.5, 2.5]
        for value in samples:
            try:
                parameter.check(value)
                accepted = True
            except (TypeError, ValueError):
                accepted = False
            if isinstance(value, bool) and parameter.kind is not bool:
                continue  # scikit-learn's numbers take bools; the check does not
            if parameter.kind is int and isinstance(value, float):
                continue
            assert any(c.is_satisfied_by(value) for c in allowed) == accepted, (
                parameter.name,
                value,
            )


@given(st.floats(0, 1, exclude_min=True))
def test_good_values_pass_unchanged(power):
    assert POWER.check(power) == power
    assert type(POWER.check(np.float32(0.5))) is float


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("n_jobs", 0),
        ("ratio", 2),
        ("min_inliers", -1),
        ("verify_keypoints", 3),
        ("alpha", -1),
        ("threshold", 1),
        ("k", 0),
        ("multiple_assignment", 0),
        ("depth", -1),
        ("matching", "knn"),
        ("model", "rigid"),
        ("reprojection_threshold", 0),
    ],
)
def test_the_same_bad_value_gets_the_same_message_everywhere(name, value):
    """The values that once got two messages, or none of the specification's."""
    function, estimator, command, parameter = CALLERS[name]
    message = f"{name} must be {parameter.expectation}; got {value!r}"
    with pytest.raises(ParameterError, match=f"^{re.escape(message)}$"):
        function(**{name: value})
    if estimator is not None:
        with pytest.raises(InvalidParameterError) as raised:
            estimator(**{name: value})
        assert f"must be {parameter.expectation}. Got {value!r} instead." in str(
            raised.value
        )
    flag = FLAGS.get(name, "--" + name.replace("_", "-"))
    result = CliRunner().invoke(main, [*command, flag, str(value), *REST[command[0]]])
    assert result.exit_code == 2
    assert result.output.splitlines()[-1].endswith(
        f": {parameter.message(parameter.kind(value))}"
    )


VERIFIERS = {
    "spatial_rerank": verify,
    "rerank_spatially": lambda **settings: vlad.verification.rerank_spatially(
        None, None, None, **settings
    ),
    "inlier_matches": lambda **settings: vlad.verification.inlier_matches(
        np.zeros((3, 2)), np.eye(3, 8), np.zeros((3, 2)), np.eye(3, 8), **settings
    ),
}


@pytest.mark.parametrize("verifier", sorted(VERIFIERS))
@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("ratio", 0),
        ("ratio", 1.5),
        ("matching", "best"),
        ("model", "rigid"),
        ("reprojection_threshold", -1.0),
        ("verify_keypoints", 7),
        ("verify_keypoints", -1),
        ("min_inliers", 0),
        ("depth", -1),
    ],
)
def test_every_verifier_says_the_same(verifier, name, value):
    if verifier == "inlier_matches" and name in ("min_inliers", "depth"):
        pytest.skip("inlier_matches takes neither")
    specified = {parameter.name: parameter for parameter in VERIFICATION_PARAMETERS}
    with pytest.raises(ParameterError) as raised:
        VERIFIERS[verifier](**{name: value})
    assert str(raised.value) == specified[name].message(value)


def test_the_deprecated_keypoint_cap_warns_and_means_the_same():
    with pytest.warns(DeprecationWarning, match="^max_keypoints was renamed"):
        with pytest.raises(ParameterError, match="^verify_keypoints must be"):
            vlad.verification.rerank_spatially(None, None, None, max_keypoints=3)


LIBRARY_PARAMETERS = [
    parameter
    for parameter in vars(_parameters).values()
    if isinstance(parameter, Parameter)
]
NUMBERS = [
    parameter
    for parameter in (*LIBRARY_PARAMETERS, *DESCRIPTOR_PARAMETERS, *LEARNED_PARAMETERS)
    if parameter.kind in (int, float)
]


def within(parameter: Parameter, value) -> bool:
    """The reference: plain comparisons with the bounds, and the specials."""
    if any(value == special for special, _ in parameter.specials):
        return True
    if parameter.kind is float and not math.isfinite(value):
        return False
    low, high = parameter.low, parameter.high
    above = low is None or value > low or (value == low and parameter.low_closed)
    below = high is None or value < high or (value == high and parameter.high_closed)
    return above and below


def near_a_bound(parameter: Parameter) -> st.SearchStrategy:
    """Values at, just inside and just outside each bound and special."""
    edges = [
        edge
        for edge in (parameter.low, parameter.high)
        + tuple(value for value, _ in parameter.specials)
        if edge is not None
    ]
    if parameter.kind is int:
        return st.sampled_from(edges).flatmap(
            lambda edge: st.integers(int(edge) - 2, int(edge) + 2)
        )
    return st.sampled_from(edges).flatmap(
        lambda edge: st.one_of(
            st.just(float(edge)),
            st.just(float(np.nextafter(edge, -np.inf))),
            st.just(float(np.nextafter(edge, np.inf))),
            st.floats(edge - 1, edge + 1),
        )
    )


@pytest.mark.parametrize("parameter", NUMBERS, ids=lambda parameter: parameter.name)
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_the_edges_of_each_range(parameter, data):
    value = data.draw(near_a_bound(parameter))
    try:
        checked = parameter.check(value)
    except ParameterError as error:
        assert not within(parameter, value)
        assert str(error) == parameter.message(value)
    else:
        assert within(parameter, value)
        assert checked == value and type(checked) is parameter.kind


def test_the_specification_agrees_with_the_registries():
    assert _parameters.MATCHING.choices == tuple(sorted(MATCHINGS))
    assert _parameters.GEOMETRY.choices == tuple(GEOMETRIC_MODELS)
    assert _parameters.VERIFY_KEYPOINTS.low == SMALLEST_MAX_KEYPOINTS
    assert SMALLEST_MAX_KEYPOINTS == max(MINIMAL_MATCHES.values())
    assert _parameters.QUANTIZER.default == EXACT
    # The inlier threshold's help gives the defaults the library takes.
    help = _parameters.INLIER_THRESHOLD.help
    assert f"keypoints {POSITION_SIDE:g} pixels across" in help
    assert f"{EPIPOLAR_THRESHOLD:g} for fundamental" in help
    assert f"{REPROJECTION_THRESHOLD:g} for the others" in help


def test_each_name_is_specified_once():
    names = [parameter.name for parameter in LIBRARY_PARAMETERS]
    assert len(names) == len(set(names))
    assert not set(names) & {parameter.name for parameter in DESCRIPTOR_PARAMETERS}


def test_parameter_errors_are_vlad_errors_of_both_builtins():
    with pytest.raises(ParameterTypeError) as raised:
        N_JOBS.check(1.5)
    assert isinstance(raised.value, (VladError, TypeError, ValueError))
    with pytest.raises(ParameterError) as raised:
        N_JOBS.check(-2)
    assert not isinstance(raised.value, TypeError)
    assert isinstance(raised.value, VladError)
