"""Every aggregator against the loop oracle and an independent float64 reference."""

from __future__ import annotations

import re
import sys
import tracemalloc

import numpy as np
import pytest
from conftest import (
    DTYPES,
    aggregator_param,
    max_relative_error,
    ragged_problems,
    reference_residuals,
)
from hypothesis import assume, given
from hypothesis import strategies as st

import vlad
from vlad._extras import install_command
from vlad.core.aggregators import _segments as segments
from vlad.core.aggregators import choose_aggregator, resolve_aggregator

#: JAX compiles anew for every shape, a second or more each: its cases run with
#: the slow tests (tests/test_jax_encoding.py keeps it in the default run).
ALL = [aggregator_param(name, slow=("jax",)) for name in vlad.AGGREGATORS]
FAST = [
    aggregator_param(name, slow=("jax",))
    for name in vlad.AGGREGATORS
    if name != "masked"
]


def tolerance(dtype) -> float:
    return 1e-5 if dtype == np.float32 else 1e-12


@pytest.mark.parametrize("method", ALL)
@given(problem=ragged_problems())
def test_matches_loop_and_float64_reference(method, problem):
    descriptors, labels, offsets, centers = problem
    result = vlad.aggregate(descriptors, labels, offsets, centers, aggregator=method)
    oracle = vlad.aggregate(descriptors, labels, offsets, centers, aggregator="loop")
    reference = reference_residuals(descriptors, labels, offsets, centers)

    assert result.dtype == descriptors.dtype
    assert result.shape == (len(offsets) - 1, *centers.shape)
    # Absolute slack proportional to the largest possible sum, so a wrong
    # answer (off by a whole descriptor or centre) cannot pass.
    magnitude = np.abs(descriptors).max(initial=0) + np.abs(centers).max()
    atol = tolerance(descriptors.dtype) * magnitude * max(1, len(labels))
    np.testing.assert_allclose(
        result, reference, rtol=tolerance(descriptors.dtype), atol=atol
    )
    np.testing.assert_allclose(
        result, oracle, rtol=tolerance(descriptors.dtype), atol=atol
    )


@pytest.mark.parametrize("method", ALL)
@given(problem=ragged_problems())
def test_empty_images_and_centres_are_exact_zeros(method, problem):
    descriptors, labels, offsets, centers = problem
    result = vlad.aggregate(descriptors, labels, offsets, centers, aggregator=method)
    n_images, n_clusters = len(offsets) - 1, len(centers)
    images = np.repeat(np.arange(n_images), np.diff(offsets))
    counts = np.bincount(images * n_clusters + labels, minlength=n_images * n_clusters)
    empty = counts.reshape(n_images, n_clusters) == 0
    assert np.all(result[empty] == 0)


@pytest.mark.parametrize("method", ALL)
@pytest.mark.parametrize("dtype", DTYPES)
def test_hand_computed(method, dtype):
    descriptors = np.array([[1, 2], [3, 4], [5, 6], [7, 8]], dtype=dtype)
    centers = np.array([[1, 1], [0, 0], [10, 10]], dtype=dtype)
    labels = np.array([0, 0, 1, 0])
    offsets = np.array([0, 2, 2, 4])  # image 1 has no descriptors
    expected = np.array(
        [
            [[2, 4], [0, 0], [0, 0]],  # (1-1, 2-1) + (3-1, 4-1)
            [[0, 0], [0, 0], [0, 0]],
            [[6, 7], [5, 6], [0, 0]],  # (7-1, 8-1); (5, 6) - (0, 0)
        ],
        dtype=dtype,
    )
    result = vlad.aggregate(descriptors, labels, offsets, centers, aggregator=method)
    np.testing.assert_array_equal(result, expected)


@pytest.mark.parametrize("method", ALL)
@pytest.mark.parametrize("dtype", DTYPES)
def test_no_images_and_no_descriptors(method, dtype):
    centers = np.ones((3, 2), dtype=dtype)
    no_images = vlad.aggregate(
        np.empty((0, 2), dtype), [], [0], centers, aggregator=method
    )
    assert no_images.shape == (0, 3, 2) and no_images.dtype == dtype
    empty = vlad.aggregate(
        np.empty((0, 2), dtype), [], [0, 0, 0], centers, aggregator=method
    )
    assert empty.shape == (2, 3, 2)
    assert np.all(empty == 0)


@pytest.mark.parametrize("method", ALL)
def test_integer_descriptors_compute_in_float32(method):
    descriptors = np.array([[1, 2], [3, 4]], dtype=np.uint8)
    result = vlad.aggregate(descriptors, [0, 0], [0, 2], [[0, 0]], aggregator=method)
    assert result.dtype == np.float32
    np.testing.assert_array_equal(result, [[[4, 6]]])


@pytest.mark.slow
@pytest.mark.parametrize("method", FAST)
def test_float32_accuracy_on_a_million_sift_like_descriptors(method, large_sift):
    """Relative error <= 1e-5 per image against float64 at N = 1e6, K = 64."""
    sets, centers, labels, reference = large_sift
    _, function = resolve_aggregator(method)
    result = function(sets.descriptors, labels, sets.offsets, centers)
    assert max_relative_error(result, reference) <= 1e-5


@pytest.mark.slow
def test_masked_float32_accuracy_on_sift_like_descriptors():
    sets = vlad.datasets.make_descriptor_sets(50, 1000, 128, seed=1)
    centers = sets.descriptors[:: len(sets.descriptors) // 64][:64].copy()
    labels = vlad.assign(sets.descriptors, centers)
    reference = reference_residuals(sets.descriptors, labels, sets.offsets, centers)
    result = vlad.AGGREGATORS["masked"](sets.descriptors, labels, sets.offsets, centers)
    assert max_relative_error(result, reference) <= 1e-5


@pytest.mark.parametrize("method", ALL)
def test_float32_accuracy_when_one_image_is_huge(method, huge_image):
    """A single image of 300,000 descriptors: long sums in one segment."""
    descriptors, offsets, centers, labels, reference = huge_image
    result = resolve_aggregator(method)[1](descriptors, labels, offsets, centers)
    assert max_relative_error(result, reference) <= 1e-5


@pytest.fixture(scope="module")
def huge_image():
    rng = np.random.default_rng(0)
    descriptors = rng.gamma(0.5, 40.0, size=(300_000, 8)).astype(np.float32)
    offsets = np.array([0, 300_000])
    centers = descriptors[::100_000][:3].copy()
    labels = vlad.assign(descriptors, centers)
    reference = reference_residuals(descriptors, labels, offsets, centers)
    return descriptors, offsets, centers, labels, reference


@pytest.fixture(scope="module")
def large_sift():
    sets = vlad.datasets.make_descriptor_sets(1000, 1000, 128, seed=0)
    centers = sets.descriptors[:: len(sets.descriptors) // 64][:64].copy()
    labels = vlad.assign(sets.descriptors, centers)
    reference = reference_residuals(sets.descriptors, labels, sets.offsets, centers)
    return sets, centers, labels, reference


@pytest.mark.slow
def test_naive_float32_cumsum_would_fail_the_accuracy_bound():
    """The accuracy test can fail: the essay's unblocked float32 running sum
    misses the 1e-5 bound on the same kind of data."""
    sets = vlad.datasets.make_descriptor_sets(200, 1000, 128, seed=0)
    centers = sets.descriptors[:: len(sets.descriptors) // 64][:64].copy()
    labels = vlad.assign(sets.descriptors, centers)
    segments = np.repeat(np.arange(len(sets)), sets.lengths) * 64 + labels
    order = np.argsort(segments, kind="stable")
    running = np.cumsum(sets.descriptors[order], axis=0)  # float32, one pass
    running = np.vstack([np.zeros((1, 128), np.float32), running])
    counts = np.bincount(segments, minlength=len(sets) * 64)
    ends = np.cumsum(counts)
    sums = (running[ends] - running[ends - counts]).reshape(len(sets), 64, 128)
    naive = sums - counts.reshape(len(sets), 64, 1) * centers
    reference = reference_residuals(sets.descriptors, labels, sets.offsets, centers)
    assert max_relative_error(naive, reference) > 1e-5


@pytest.mark.parametrize("method", ["masked", "ragged-cumsum"])
def test_chunked_aggregators_keep_a_bounded_working_set(method, monkeypatch):
    budget = 1 << 20
    monkeypatch.setattr(segments, "WORKING_SET_BYTES", budget)
    for module in ("masked", "ragged_cumsum"):
        name = f"vlad.core.aggregators._{module}.WORKING_SET_BYTES"
        monkeypatch.setattr(name, budget)
    sets = vlad.datasets.make_descriptor_sets(40, 500, 32, seed=0)
    centers = sets.descriptors[:16].copy()
    labels = vlad.assign(sets.descriptors, centers)
    _, function = resolve_aggregator(method)
    tracemalloc.start()
    try:
        result = function(sets.descriptors, labels, sets.offsets, centers)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    output = result.nbytes * 2  # float64 accumulator + float32 result
    index_arrays = labels.nbytes * 4  # per-row image ids, segment ids, order
    assert peak <= output + index_arrays + 4 * budget
    reference = reference_residuals(sets.descriptors, labels, sets.offsets, centers)
    assert max_relative_error(result, reference) <= 1e-5


def test_callable_method_is_used():
    def zeros(descriptors, labels, offsets, centers):
        return np.zeros((len(offsets) - 1, *centers.shape), descriptors.dtype)

    result = vlad.aggregate(np.ones((2, 3)), [0, 0], [0, 2], np.ones((1, 3)), zeros)
    assert np.all(result == 0)


@pytest.mark.parametrize("method", ALL)
@given(
    problem=ragged_problems(),
    bad=st.sampled_from([np.nan, np.inf, -np.inf]),
    position=st.integers(0, 10**6),
)
def test_non_finite_descriptors_get_a_clear_error(method, problem, bad, position):
    """The sums are checked instead of the descriptors: a NaN or inf anywhere,
    in any image and centre, still gives the error."""
    descriptors, labels, offsets, centers = problem
    assume(descriptors.size > 0)
    descriptors = descriptors.copy()
    descriptors.flat[position % descriptors.size] = bad
    with pytest.raises(ValueError, match=r"descriptors contains? .*NaN or infinite"):
        vlad.aggregate(descriptors, labels, offsets, centers, aggregator=method)


@pytest.mark.parametrize("method", ALL)
def test_sums_too_large_for_float32_get_a_clear_error(method):
    descriptors = np.full((2, 3), 3e38, np.float32)
    with pytest.raises(ValueError, match=r"residual sums .*overflow"):
        vlad.aggregate(descriptors, [0, 0], [0, 2], np.zeros((1, 3)), method)


def test_callable_aggregator_gets_its_input_checked():
    def zeros(descriptors, labels, offsets, centers):
        return np.zeros((len(offsets) - 1, *centers.shape), descriptors.dtype)

    descriptors = np.array([[1.0, np.nan, 0.0], [0.0, 0.0, 0.0]])
    with pytest.raises(ValueError, match="descriptors contains 1 NaN"):
        vlad.aggregate(descriptors, [0, 0], [0, 2], np.ones((1, 3)), zeros)


def test_auto_resolves_to_an_available_aggregator():
    name = choose_aggregator(10_000, 64, 128)
    assert name in vlad.available_aggregators() and name != "auto"


def test_auto_prefers_numba_at_every_size():
    pytest.importorskip("numba")
    for n_descriptors in (0, 1000, 10**7):
        assert choose_aggregator(n_descriptors, 64, 128) == "numba"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"descriptors": np.ones((3, 4))}, "descriptors have 4 features but"),
        ({"descriptors": np.ones((3,))}, "descriptors must be a 2-D array"),
        ({"descriptors": np.array([[1.0, np.nan], [1, 1], [1, 1]])}, "contains 1 NaN"),
        ({"descriptors": np.array([[1.0, np.inf]] * 3)}, "contains 3 NaN or infinite"),
        ({"descriptors": np.array([["a", "b"]] * 3)}, "must hold real numbers"),
        ({"centers": np.array([[np.nan, 0.0], [0, 0]])}, "centers contains 1 NaN"),
        ({"offsets": [0, 2]}, r"end at the number of descriptors \(3\)"),
        ({"offsets": [1, 3]}, "must start at 0"),
        ({"offsets": [0, 2, 1, 3]}, "non-decreasing"),
        ({"offsets": [[0, 3]]}, "1-D array"),
        ({"offsets": [0.0, 3.0]}, "offsets must hold integers"),
        ({"labels": [0, 1, 2]}, r"labels must lie in \[0, 2\).*from 0 to 2"),
        ({"labels": [0, -1, 1]}, r"labels must lie in \[0, 2\)"),
        ({"labels": [0, 1]}, r"labels must have shape \(3,\)"),
        ({"labels": [0.0, 1.0, 1.0]}, "labels must hold integers"),
        ({"aggregator": "fastest"}, "Unknown aggregator 'fastest'; expected one of"),
    ],
)
def test_bad_input_gets_a_clear_error(kwargs, message):
    arguments = {
        "descriptors": np.ones((3, 2)),
        "labels": [0, 1, 1],
        "offsets": [0, 1, 3],
        "centers": np.zeros((2, 2)),
        "aggregator": "loop",
    }
    arguments.update(kwargs)
    with pytest.raises((ValueError, TypeError), match=message):
        vlad.aggregate(**arguments)


def test_missing_jax_gives_install_hint(monkeypatch):
    monkeypatch.setitem(sys.modules, "jax", None)
    with pytest.raises(ImportError, match=re.escape(install_command("jax"))):
        vlad.aggregate(
            np.ones((2, 2)), [0, 0], [0, 2], np.ones((1, 2)), aggregator="jax"
        )


def test_missing_torch_gives_install_hint(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(ImportError, match=re.escape(install_command("torch"))):
        vlad.aggregate(
            np.ones((2, 2)), [0, 0], [0, 2], np.ones((1, 2)), aggregator="torch"
        )
    with pytest.raises(ImportError, match=re.escape(install_command("torch"))):
        vlad.TorchEncoder(np.ones((1, 2)))
    assert "torch" not in vlad.available_aggregators()


@pytest.mark.parametrize("method", ["numba", "auto"])
def test_missing_numba_gives_install_hint(method, monkeypatch):
    monkeypatch.setitem(sys.modules, "numba", None)
    arguments = (np.ones((2, 2)), [0, 0], [0, 2], np.ones((1, 2)))
    if method == "auto":  # falls back to an aggregator that needs no numba
        assert choose_aggregator(10**6, 64, 128) == "sparse"
        np.testing.assert_array_equal(vlad.aggregate(*arguments, aggregator="auto"), 0)
        np.testing.assert_array_equal(vlad.encode([arguments[0]], arguments[3]), 0)
        return
    with pytest.raises(ImportError, match=re.escape(install_command("numba"))):
        vlad.aggregate(*arguments, aggregator=method)
    with pytest.raises(ImportError, match=re.escape(install_command("numba"))):
        vlad.encode([arguments[0]], arguments[3], aggregator=method)


def test_jax_compiles_once_per_size_class():
    pytest.importorskip("jax")
    from vlad.backends.jax import _kernels as jax_kernels

    centers = np.ones((4, 8), np.float32)
    kernels = (jax_kernels.aggregate_one_chunk(),)
    for n_rows, n_images in [(100, 3), (200, 3), (250, 4)]:  # one size class
        descriptors = np.ones((n_rows, 8), np.float32)
        offsets = np.linspace(0, n_rows, n_images + 1).astype(np.int64)
        result = vlad.aggregate(
            descriptors, np.zeros(n_rows, int), offsets, centers, "jax"
        )
        np.testing.assert_array_equal(result, aggregate_loop_sums(offsets, centers))
        if n_rows == 100:
            compiled = [kernel._cache_size() for kernel in kernels]
    assert [kernel._cache_size() for kernel in kernels] == compiled


def aggregate_loop_sums(offsets, centers):
    """Residual sums of all-ones descriptors labelled 0: each image's count
    times ``1 - centers[0]`` in its first block."""
    expected = np.zeros((len(offsets) - 1, *centers.shape), np.float32)
    expected[:, 0] = np.diff(offsets)[:, None] * (1 - centers[0])
    return expected
