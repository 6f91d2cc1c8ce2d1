"""JaxEncoder and the jax aggregator: the chunked, blocked JAX path equals the
NumPy pipeline, labels are exact, and the distance product asks for full
float32 precision."""

from __future__ import annotations

import re
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from photo_descriptors import assert_same_nearest, photo_problem

import vlad
from vlad._extras import install_command
from vlad.backends import _layout as layout
from vlad.backends.jax import _kernels as jax_kernels
from vlad.backends.jax._batches import plan_batch
from vlad.core.aggregators._loop import aggregate_loop

jax = pytest.importorskip("jax")


@pytest.fixture(scope="module")
def problem():
    sets = vlad.datasets.make_descriptor_sets(30, 60, 16, ragged=True, seed=4)
    return sets, vlad.fit_codebook(sets, 6, seed=0)


def assert_vectors_equal(result, expected, tolerance=1e-5):
    assert result.shape == expected.shape and result.dtype == expected.dtype
    np.testing.assert_allclose(result, expected, rtol=0, atol=tolerance)


# Each setting compiles its own kernel (about 0.5 s): every step on and off,
# not every combination (tests/test_torch_encoding.py runs all 16); all off and
# all on in the default run, the mixed ones with the slow tests.
@pytest.mark.parametrize(
    ("power", "intra", "l2", "mass"),
    [
        (1.0, False, False, False),
        pytest.param(1.0, True, True, False, marks=pytest.mark.slow),
        pytest.param(0.5, False, True, True, marks=pytest.mark.slow),
        pytest.param(0.5, True, False, False, marks=pytest.mark.slow),
        (0.5, True, True, True),
    ],
)
def test_equals_encode(problem, power, intra, l2, mass):
    sets, codebook = problem
    options = {"power": power, "intra": intra, "l2": l2, "mass": mass}
    expected = vlad.encode(sets, codebook, **options)
    result = vlad.JaxEncoder(codebook, **options)(sets)
    scale = np.abs(expected).max()
    assert_vectors_equal(result, expected, 1e-5 * scale)
    assert np.all(result[sets.lengths == 0] == 0)


# Few examples of few shapes: each new shape class compiles (about 0.3 s).
@pytest.mark.slow  # each example compiles anew: seconds in all
@settings(max_examples=15)
@given(
    lengths=st.lists(st.integers(0, 200), min_size=1, max_size=6),
    n_clusters=st.sampled_from([1, 7]),
    seed=st.integers(0, 2**16),
)
def test_ragged_sets_equal_encode(lengths, n_clusters, seed):
    rng = np.random.default_rng(seed)
    arrays = [
        rng.gamma(1.0, 1.0, (length, 12)).astype(np.float32) for length in lengths
    ]
    sets = vlad.DescriptorSets.from_list(arrays, n_features=12)
    centers = rng.gamma(1.0, 1.0, (n_clusters, 12)).astype(np.float32)
    expected = vlad.encode(sets, centers)
    assert_vectors_equal(vlad.JaxEncoder(centers)(sets), expected)


@pytest.mark.slow  # compiles anew; test_equals_encode is the default run's
def test_many_chunks_equal_encode(problem, monkeypatch):
    """Chunks of 256 rows: full chunks, an overlapping last chunk, images that
    straddle chunks."""
    sets, codebook = problem
    monkeypatch.setattr(layout, "CHUNK_BYTES", 256 * 16 * 4)
    plan = plan_batch(sets.offsets, 16, 4, 6)
    assert plan.chunk_rows == 256 and len(plan.chunks) > 3
    assert plan.chunks[-1][1] > 0  # the last chunk overlaps
    for options in ({}, {"mass": True, "power": 0.5}):
        expected = vlad.encode(sets, codebook, **options)
        assert_vectors_equal(vlad.JaxEncoder(codebook, **options)(sets), expected)
    labels = vlad.assign(sets.descriptors, codebook.centers)
    residuals = vlad.aggregate(
        sets.descriptors, labels, sets.offsets, codebook.centers, "jax"
    )
    reference = aggregate_loop(
        sets.descriptors.astype(np.float64),
        labels,
        sets.offsets,
        codebook.centers.astype(np.float64),
    )
    np.testing.assert_allclose(residuals, reference, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize(
    "power", [pytest.param(p, marks=pytest.mark.slow) for p in (1.0, 0.2)]
)
def test_residual_norm_equals_encode(problem, monkeypatch, power):
    sets, codebook = problem
    options = {"residual_norm": True, "power": power, "intra": False, "l2": False}
    expected = vlad.encode(sets, codebook, aggregator="loop", **options)
    assert_vectors_equal(vlad.JaxEncoder(codebook, **options)(sets), expected, 1e-4)
    monkeypatch.setattr(layout, "CHUNK_BYTES", 256 * 16 * 4)  # several chunks
    assert_vectors_equal(vlad.JaxEncoder(codebook, **options)(sets), expected, 1e-4)


def test_refuses_multiple_assignment(problem):
    _, codebook = problem
    with pytest.raises(ValueError, match="JaxEncoder supports assignment='hard'"):
        vlad.JaxEncoder(codebook, assignment="soft")


# A photo's 128-dimensional descriptors compile kernels of their own, about a
# second: with the slow tests (test_labels_equal_assign below uses the photo).
@pytest.mark.slow
def test_one_real_photo_equals_encode():
    descriptors, codebook = photo_problem()
    expected = vlad.encode([descriptors], codebook)
    assert_vectors_equal(vlad.JaxEncoder(codebook)([descriptors]), expected)


@pytest.mark.slow  # compiles anew; test_equals_encode is the default run's
def test_labels_equal_assign():
    descriptors, codebook = photo_problem()
    synthetic = vlad.datasets.make_descriptor_sets(20, 500, 128, seed=3).descriptors
    for x, centers in [
        (descriptors, codebook.centers),
        (synthetic, synthetic[::97][:64]),
    ]:
        arrays = (x, np.ascontiguousarray(-2 * centers.T), (centers**2).sum(1))
        labels, _ = jax.jit(jax_kernels.nearest_centers)(*arrays)
        assert_same_nearest(labels, vlad.assign(x, centers), x, centers)


def test_distance_product_asks_for_highest_precision(problem):
    sets, codebook = problem
    centers = codebook.centers
    plan = plan_batch(sets.offsets, 16, 4, 6)
    state = jax_kernels.zero_state(plan.n_segments, 16, np.float32)
    chunk = np.zeros((plan.chunk_rows, 16), np.float32)
    arrays = (centers, np.ascontiguousarray(-2 * centers.T), (centers**2).sum(1))
    text = (
        jax_kernels.encode_chunk()
        .lower(state, chunk, 0, 0, plan.layout, arrays)
        .as_text()
    )
    products = [line for line in text.splitlines() if "dot_general" in line]
    assert len(products) == 1
    assert re.search(r"precision = \[HIGHEST, HIGHEST\]", products[0])


# float32, the dtype of test_equals_encode's problem, with the slow tests (its
# kernels compile anew here); float64, which must not leave 64-bit mode on, by
# default.
@pytest.mark.parametrize(
    "dtype", [pytest.param(np.float32, marks=pytest.mark.slow), np.float64]
)
def test_dtype_follows_the_descriptors(problem, dtype):
    sets, codebook = problem
    sets = vlad.DescriptorSets(sets.descriptors.astype(dtype), sets.offsets)
    result = vlad.JaxEncoder(codebook)(sets)
    expected = vlad.encode(sets, codebook)
    tolerance = 1e-5 if dtype == np.float32 else 1e-12
    assert_vectors_equal(result, expected, tolerance)
    assert not jax.config.jax_enable_x64  # float64 did not leave 64-bit mode on


# 300,000 rows: with the slow tests (the default run checks the aggregator's
# accuracy alone in tests/test_aggregators.py).
@pytest.mark.slow
def test_float32_accuracy_when_one_image_is_huge():
    """300,000 descriptors in one image, summed in float32 by blocks: within
    1e-5 of the float64 loop reference, for the encoder and the aggregator."""
    rng = np.random.default_rng(1)
    descriptors = rng.gamma(0.5, 40.0, size=(300_000, 8)).astype(np.float32)
    centers = descriptors[::100_000][:3].copy()
    labels = vlad.assign(descriptors, centers)
    offsets = np.array([0, descriptors.shape[0]])
    reference = aggregate_loop(
        descriptors.astype(np.float64), labels, offsets, centers.astype(np.float64)
    ).reshape(1, -1)
    raw = {"power": 1.0, "intra": False, "l2": False}
    encoded = vlad.JaxEncoder(centers, **raw)([descriptors])
    aggregated = vlad.aggregate(descriptors, labels, offsets, centers, "jax")
    for result in (encoded, aggregated.reshape(1, -1)):
        error = np.linalg.norm(result - reference) / np.linalg.norm(reference)
        assert error <= 1e-5


@pytest.mark.slow  # compiles anew; test_equals_encode is the default run's
def test_keep_on_device_returns_the_same_vectors_as_a_jax_array(problem):
    sets, codebook = problem
    on_device = vlad.JaxEncoder(codebook, keep_on_device=True)(sets)
    assert isinstance(on_device, jax.Array) and on_device.shape == (30, 96)
    np.testing.assert_array_equal(
        np.asarray(on_device), vlad.JaxEncoder(codebook)(sets)
    )


def test_compiles_once_per_size_class(problem):
    sets, codebook = problem
    encoder = vlad.JaxEncoder(codebook)
    kernel = jax_kernels.encode_one_chunk()
    encoder(vlad.DescriptorSets(sets.descriptors[:100], [0, 50, 100]))
    compiled = kernel._cache_size()
    for n_rows, n_images in [(200, 2), (256, 2), (30, 2)]:  # one size class
        offsets = np.linspace(0, n_rows, n_images + 1).astype(np.int64)
        encoder(vlad.DescriptorSets(sets.descriptors[:n_rows], offsets))
    assert kernel._cache_size() == compiled


def test_no_images_and_empty_images(problem):
    _, codebook = problem
    encoder = vlad.JaxEncoder(codebook)
    empty = vlad.DescriptorSets(np.empty((0, 16), np.float32), [0])
    assert encoder(empty).shape == (0, 96)
    blank = vlad.DescriptorSets(np.empty((0, 16), np.float32), [0, 0, 0])
    np.testing.assert_array_equal(encoder(blank), np.zeros((2, 96), np.float32))


@pytest.mark.parametrize(
    ("sets", "message"),
    [
        ([np.ones((3, 5), np.float32)], "descriptors have 5 features but"),
        ([np.full((2, 16), np.nan, np.float32)], "NaN or infinite"),
        ([np.full((2, 16), 1e37, np.float32)], "overflow"),
    ],
)
def test_bad_input_gets_a_clear_error(problem, sets, message):
    _, codebook = problem
    with pytest.raises(ValueError, match=message):
        vlad.JaxEncoder(codebook)(sets)


def test_bad_settings_get_a_clear_error(problem):
    _, codebook = problem
    with pytest.raises(ValueError, match="aggregator must be 'auto' or 'jax'"):
        vlad.JaxEncoder(codebook, aggregator="numba")
    with pytest.raises(TypeError, match="keep_on_device must be True or False"):
        vlad.JaxEncoder(codebook, keep_on_device="yes")


def test_missing_jax_gives_install_hint(problem, monkeypatch):
    monkeypatch.setitem(sys.modules, "jax", None)
    with pytest.raises(ImportError, match=re.escape(install_command("jax"))):
        vlad.JaxEncoder(problem[1])
