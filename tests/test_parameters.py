"""One specification per parameter (vlad.core._parameters): a bad value gets one
message from the function, the estimator and the command line alike."""

from __future__ import annotations

import math

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.utils._param_validation import InvalidParameterError

import vlad
from vlad.cli._main import main
from vlad.core._kmeans import KMEANS_BACKENDS
from vlad.core._parameters import (
    ENCODING_PARAMETERS,
    KMEANS_PARAMETERS,
    POWER,
    Parameter,
)
from vlad.estimators._parameters import constraints
from vlad.images._detectors import DETECTORS
from vlad.images._extractors import FEATURES
from vlad.images._learned import LEARNED_EXTRACTORS, LEARNED_PARAMETERS
from vlad.images._sift import DESCRIPTOR_PARAMETERS

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
#: The command line's name of each option, where it is not --NAME.
FLAGS = {"n_nearest": "--nearest"}
#: Everything a command needs besides the option under test; click stops at
#: the bad value, before it reads any of them.
REST = {
    "encode": [PHOTO, "-c", PHOTO, "-o", "unused.npy"],
    "fit": [PHOTO, "-o", "unused.npz"],
    "extract": [PHOTO, "-o", "unused.npz"],
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
    if parameter.kind is str:
        return words.filter(lambda text: text not in parameter.choices)
    strangers = words.filter(not_a_number)
    if parameter.kind is int:
        numbers = st.integers(max_value=int(parameter.low) - 1)
        return st.one_of(numbers, strangers)
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
    with pytest.raises((TypeError, ValueError)) as raised:
        function(**{name: value})
    assert str(raised.value) == message
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
        assert result.output.splitlines()[-1] == (
            f"Error: Invalid value for {flag!r}: {message}"
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
    ],
)
def test_expectations_in_words(parameter, words):
    assert parameter.expectation == words


def test_scikit_learn_constraints_agree_with_the_specification():
    """Each constraint accepts what the specification accepts, on the edges."""
    from sklearn.utils._param_validation import make_constraint

    for parameter in (*ENCODING_PARAMETERS, *KMEANS_PARAMETERS, *DESCRIPTOR_PARAMETERS):
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
