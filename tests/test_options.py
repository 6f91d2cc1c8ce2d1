"""EncodingOptions, the one n_jobs rule and the deprecated names."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st
from photos import DATA
from sklearn.utils._param_validation import InvalidParameterError

import vlad
from vlad.cli._main import main

fields = st.fixed_dictionaries(
    {},
    optional={
        "aggregator": st.sampled_from(sorted(vlad.AGGREGATORS)),
        "power": st.floats(0, 1, exclude_min=True),
        "intra": st.booleans(),
        "l2": st.booleans(),
        "mass": st.booleans(),
    },
)


@given(fields)
def test_a_record_round_trips_through_json(settings):
    options = vlad.EncodingOptions(**settings)
    record = json.loads(json.dumps(options.record()))
    assert vlad.EncodingOptions.from_record(record) == options
    assert record == {**vlad.EncodingOptions().record(), **settings}


variants = st.fixed_dictionaries(
    {
        "residual_norm": st.booleans(),
        "assignment": st.sampled_from(["hard", "multiple", "soft"]),
        "kernel_width": st.floats(1e-3, 1e3),
    },
    optional={"n_nearest": st.integers(1, 8), "power": st.floats(0.1, 1)},
)


@given(variants)
def test_a_record_of_encoding_variants_round_trips_through_json(settings):
    if settings["assignment"] == "hard":
        settings.pop("n_nearest", None)
    options = vlad.EncodingOptions(**settings)
    record = json.loads(json.dumps(options.record()))
    assert vlad.EncodingOptions.from_record(record) == options
    assert record.get("residual_norm", False) == settings["residual_norm"]
    assert record.get("assignment", "hard") == settings["assignment"]
    default_nearest = 1 if settings["assignment"] == "hard" else 2
    assert record.get("n_nearest", 1) == settings.get("n_nearest", default_nearest)


def test_a_record_without_the_variants_loads_as_plain_vlad():
    old = {"aggregator": "auto", "power": 0.5, "intra": True, "l2": True, "mass": False}
    options = vlad.EncodingOptions.from_record(old)
    assert options == vlad.EncodingOptions(power=0.5)
    assert not options.residual_norm and options.assignment == "hard"
    assert options.n_nearest == 1
    assert options.record() == old


def test_a_new_assignment_takes_its_own_default_n_nearest():
    soft = vlad.EncodingOptions.resolve(None, assignment="soft")
    assert soft.n_nearest == 2
    assert vlad.EncodingOptions.resolve(soft, assignment="hard").n_nearest == 1
    four = vlad.EncodingOptions.resolve(soft, n_nearest=4)
    assert vlad.EncodingOptions.resolve(four, kernel_width=2.0).n_nearest == 4


@pytest.mark.parametrize(
    ("settings", "error", "message"),
    [
        ({"power": 0}, ValueError, r"power must be a number in \(0, 1\]; got 0"),
        ({"power": 1.5}, ValueError, "got 1.5"),
        ({"power": math.nan}, ValueError, "got nan"),
        ({"power": "0.5"}, TypeError, "got '0.5'"),
        ({"power": True}, TypeError, "got True"),
        ({"intra": "yes"}, TypeError, "intra must be True or False; got 'yes'"),
        ({"l2": 1}, TypeError, "l2 must be True or False"),
        ({"aggregator": "fastest"}, ValueError, "Unknown aggregator 'fastest'"),
        ({"aggregator": 3}, ValueError, "Unknown aggregator 3"),
    ],
)
def test_bad_settings_are_named(settings, error, message):
    with pytest.raises(error, match=message):
        vlad.EncodingOptions(**settings)


def test_options_are_frozen_and_replaceable():
    options = vlad.EncodingOptions()
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.power = 0.5
    assert dataclasses.replace(options, power=0.5).power == 0.5
    with pytest.raises(ValueError, match="power"):
        dataclasses.replace(options, power=2.0)


def test_numpy_values_become_plain_python():
    options = vlad.EncodingOptions(power=np.float32(0.5), intra=np.bool_(False))
    assert type(options.power) is float and options.intra is False


def test_resolve_applies_settings_over_options():
    base = vlad.EncodingOptions(power=0.5, intra=False)
    assert vlad.EncodingOptions.resolve(base) is base
    assert vlad.EncodingOptions.resolve(base, intra=True) == vlad.EncodingOptions(
        power=0.5, intra=True
    )
    assert vlad.EncodingOptions.resolve(None) == vlad.EncodingOptions()
    with pytest.raises(TypeError, match="unknown encoding setting.*powr"):
        vlad.EncodingOptions.resolve(None, powr=0.5)
    with pytest.raises(TypeError, match="options must be an EncodingOptions; got dict"):
        vlad.EncodingOptions.resolve({"power": 0.5})


def test_from_record_refuses_what_is_not_a_mapping():
    with pytest.raises(ValueError, match="must be a mapping; got str"):
        vlad.EncodingOptions.from_record("auto")


def test_a_function_as_aggregator_is_recorded_by_name():
    options = vlad.EncodingOptions(aggregator=vlad.AGGREGATORS["loop"])
    assert options.record()["aggregator"].endswith("aggregate_loop")


@pytest.fixture(scope="module")
def problem():
    sets = vlad.datasets.make_descriptor_sets(6, 30, 8, ragged=True, seed=3)
    return sets, vlad.fit_codebook(sets, 4, seed=0)


def test_encode_takes_options_or_settings_alike(problem):
    sets, codebook = problem
    options = vlad.EncodingOptions(power=0.5, intra=False, mass=True)
    by_options = vlad.encode(sets, codebook, options)
    by_settings = vlad.encode(sets, codebook, power=0.5, intra=False, mass=True)
    mixed = vlad.encode(sets, codebook, vlad.EncodingOptions(power=0.5), intra=False,
                        mass=True)  # fmt: skip
    np.testing.assert_array_equal(by_options, by_settings)
    np.testing.assert_array_equal(by_options, mixed)
    with pytest.raises(TypeError, match="unknown encoding setting"):
        vlad.encode(sets, codebook, method="loop")


def test_encode_images_reports_its_options(tmp_path):
    codebook = vlad.Codebook(np.random.default_rng(0).random((2, 128)))
    result = vlad.encode_images(DATA / "chelsea.jpg", codebook, power=0.5, n_jobs=1)
    assert result.encoding == vlad.EncodingOptions(power=0.5)
    assert result.record()["encoding"] == result.encoding.record()


def test_jax_encoder_refuses_another_aggregator():
    with pytest.raises(ValueError, match="aggregator must be 'auto' or 'jax'"):
        vlad.JaxEncoder(np.eye(2), aggregator="numba")


def test_vlad_encoder_gathers_its_parameters_as_options():
    encoder = vlad.VLADEncoder(4, power=0.5, mass=True)
    assert encoder.encoding_options == vlad.EncodingOptions(power=0.5, mass=True)


BAD_N_JOBS = [0, -2, 1.5, True]


@pytest.mark.parametrize("n_jobs", BAD_N_JOBS)
def test_every_function_refuses_the_same_n_jobs(problem, n_jobs):
    sets, codebook = problem
    calls = [
        lambda: vlad.encode(sets, codebook, n_jobs=n_jobs),
        lambda: vlad.assign(sets.descriptors, codebook.centers, n_jobs=n_jobs),
        lambda: vlad.extract_images(DATA / "chelsea.jpg", n_jobs=n_jobs),
        lambda: vlad.encode_images(DATA / "chelsea.jpg", np.eye(2, 128), n_jobs=n_jobs),
    ]
    for call in calls:
        with pytest.raises((TypeError, ValueError), match="n_jobs must be None, -1"):
            call()


@pytest.mark.parametrize("n_jobs", BAD_N_JOBS)
def test_every_estimator_refuses_the_same_n_jobs_when_fitted(problem, n_jobs):
    sets, _ = problem
    for call in (
        lambda: vlad.VLADEncoder(2, n_jobs=n_jobs).fit(sets),
        lambda: vlad.VLADEncoder(2, n_jobs=n_jobs).partial_fit(sets),
        lambda: vlad.VLADEncoder.from_codebook(np.eye(2, 8), n_jobs=n_jobs),
        lambda: vlad.SIFTExtractor(n_jobs=n_jobs).fit(),
    ):
        with pytest.raises((InvalidParameterError, TypeError), match="n_jobs"):
            call()


@pytest.mark.parametrize("n_jobs", [None, -1, 1, 2])
def test_every_caller_accepts_the_same_n_jobs(problem, n_jobs):
    sets, codebook = problem
    expected = vlad.encode(sets, codebook)
    np.testing.assert_array_equal(vlad.encode(sets, codebook, n_jobs=n_jobs), expected)
    encoder = vlad.VLADEncoder.from_codebook(codebook, n_jobs=n_jobs)
    np.testing.assert_array_equal(encoder.fit(sets).transform(sets), expected)
    vlad.SIFTExtractor(n_jobs=n_jobs).fit()


@pytest.mark.parametrize("jobs", ["0", "-2", "x"])
def test_the_command_line_refuses_the_same_n_jobs(jobs):
    result = CliRunner().invoke(
        main, ["extract", str(DATA), "-o", "unused.npz", "-j", jobs]
    )
    assert result.exit_code == 2
    assert "-j" in result.output or "--jobs" in result.output


def test_the_names_deprecated_in_0_2_are_gone(problem):
    sets, codebook = problem
    labels = vlad.assign(sets.descriptors, codebook.centers)
    arguments = (sets.descriptors, labels, sets.offsets, codebook.centers)
    with pytest.raises(TypeError, match="method"):
        vlad.aggregate(*arguments, method="loop")
    with pytest.raises(ValueError, match="algorithm must be one of"):
        vlad.fit_codebook(sets, 3, algorithm="full", seed=1)
