"""Nearest-centre assignment against an exact float64 brute force."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import DTYPES
from hypothesis import assume, given
from hypothesis import strategies as st

import vlad


def brute_force_labels(descriptors, centers) -> np.ndarray:
    """Exact float64 argmin of the full squared distances, ties to the lowest."""
    difference = (
        np.asarray(descriptors, np.float64)[:, None, :]
        - np.asarray(centers, np.float64)[None]
    )
    return np.argmin((difference**2).sum(axis=-1), axis=1)


@st.composite
def well_separated(draw):
    """Centres on a coarse grid, descriptors close to one of them."""
    n_clusters = draw(st.integers(1, 20))
    n_features = draw(st.integers(1, 16))
    n_descriptors = draw(st.integers(0, 300))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    centers = rng.permutation(np.arange(n_clusters * 3))[:n_clusters, None] * 10.0
    centers = centers + rng.integers(-3, 3, size=(n_clusters, n_features)) * 100.0
    # Distinct centres: equal ones tie, and BLAS may round equal columns apart
    # (a tie's winner then depends on the chunk, not on the code under test).
    assume(len(np.unique(centers, axis=0)) == n_clusters)
    owners = rng.integers(0, n_clusters, size=n_descriptors)
    descriptors = centers[owners] + rng.uniform(-2, 2, (n_descriptors, n_features))
    return descriptors, centers


@pytest.mark.parametrize("dtype", DTYPES)
@given(problem=well_separated())
def test_matches_exact_float64_argmin(dtype, problem):
    descriptors, centers = problem
    labels = vlad.assign(descriptors.astype(dtype), centers.astype(dtype))
    assert labels.dtype == np.intp
    np.testing.assert_array_equal(labels, brute_force_labels(descriptors, centers))


@given(problem=well_separated(), chunk_bytes=st.integers(1, 5000))
def test_chunking_does_not_change_labels(problem, chunk_bytes):
    descriptors, centers = problem
    np.testing.assert_array_equal(
        vlad.assign(descriptors, centers, chunk_bytes=chunk_bytes),
        vlad.assign(descriptors, centers),
    )


def test_random_sift_like_descriptors_match_brute_force():
    sets = vlad.datasets.make_descriptor_sets(20, 100, 128, seed=3)
    centers = sets.descriptors[::37][:32]
    np.testing.assert_array_equal(
        vlad.assign(sets.descriptors.astype(np.float64), centers.astype(np.float64)),
        brute_force_labels(sets.descriptors, centers),
    )


def test_ties_go_to_the_lowest_index():
    centers = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])
    descriptors = np.array([[0.0, 0.0], [2.0, 0.0], [0.5, 0.5]])
    assert vlad.assign(descriptors, centers).tolist() == [0, 0, 0]


def test_no_descriptors():
    labels = vlad.assign(np.empty((0, 3)), np.ones((2, 3)))
    assert labels.shape == (0,)


@pytest.mark.parametrize(
    ("descriptors", "centers", "message"),
    [
        (np.ones((2, 3)), np.ones((2, 4)), "descriptors have 3 features but"),
        ([[0.0, 1.0], [np.nan, 1.0]], np.ones((2, 2)), "NaN or infinite values.*row 1"),
        ([[0.0, 1.0], [np.inf, 1.0]], np.ones((2, 2)), "NaN or infinite values.*row 1"),
        (np.ones((2, 2)), [[np.nan, 1.0]], "centers contains 1 NaN"),
        (np.ones(3), np.ones((2, 3)), "must be a 2-D array"),
        (np.ones((2, 3)), np.ones((0, 3)), "at least one centre"),
        (np.ones((2, 0)), np.ones((2, 0)), "at least one feature"),
    ],
)
def test_bad_input_gets_a_clear_error(descriptors, centers, message):
    with pytest.raises(ValueError, match=message):
        vlad.assign(descriptors, centers)


@pytest.mark.parametrize(
    ("chunk_bytes", "error"), [(0, ValueError), (-1, ValueError), (1.5, TypeError)]
)
def test_chunk_bytes_must_be_a_positive_integer(chunk_bytes, error):
    with pytest.raises(error, match="chunk_bytes"):
        vlad.assign(np.ones((2, 3)), np.ones((2, 3)), chunk_bytes=chunk_bytes)


@pytest.mark.parametrize(
    ("dtype", "magnitude"),
    [(np.float32, 3e38), (np.float32, 1e-40), (np.float64, 1e308)],
)
def test_extreme_magnitudes_are_assigned_as_the_same_values_scaled(dtype, magnitude):
    rng = np.random.default_rng(0)
    unit_descriptors = rng.uniform(-1, 1, (50, 4))
    unit_centers = rng.uniform(-1, 1, (6, 4))
    descriptors = (unit_descriptors * magnitude).astype(dtype)
    centers = (unit_centers * magnitude).astype(dtype)
    expected = brute_force_labels(
        descriptors.astype(np.float64) / magnitude,
        centers.astype(np.float64) / magnitude,
    )
    np.testing.assert_array_equal(vlad.assign(descriptors, centers), expected)
