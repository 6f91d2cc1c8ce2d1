"""assign_nearest and assignment_weights against brute force and hand values."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import DTYPES
from hypothesis import given
from hypothesis import strategies as st

import vlad


@given(
    n_rows=st.integers(0, 40),
    n_clusters=st.integers(1, 9),
    n_features=st.integers(1, 6),
    n_nearest=st.integers(1, 9),
    dtype=st.sampled_from(DTYPES),
    seed=st.integers(0, 2**32 - 1),
    chunk_bytes=st.sampled_from([1, 64, 1 << 20]),
)
def test_matches_brute_force(
    n_rows, n_clusters, n_features, n_nearest, dtype, seed, chunk_bytes
):
    n_nearest = min(n_nearest, n_clusters)
    rng = np.random.default_rng(seed)
    descriptors = rng.standard_normal((n_rows, n_features)).astype(dtype)
    centers = rng.standard_normal((n_clusters, n_features)).astype(dtype)
    labels, distances = vlad.assign_nearest(
        descriptors, centers, n_nearest, chunk_bytes=chunk_bytes
    )
    assert labels.shape == distances.shape == (n_rows, n_nearest)
    for row, x in enumerate(descriptors.astype(np.float64)):
        exact = [float(np.sum((x - c) ** 2)) for c in centers.astype(np.float64)]
        order = sorted(range(n_clusters), key=lambda k: (exact[k], k))[:n_nearest]
        # Near-ties may be ordered either way by float rounding.
        np.testing.assert_allclose(
            sorted(exact[k] for k in labels[row]),
            [exact[k] for k in order],
            rtol=1e-5,
            atol=1e-5,
        )
        np.testing.assert_allclose(
            distances[row], [exact[k] for k in labels[row]], rtol=1e-12
        )
    if n_rows:
        np.testing.assert_array_equal(labels[:, 0], vlad.assign(descriptors, centers))


@given(
    distances=st.lists(
        st.lists(st.floats(0, 1e6), min_size=3, max_size=3), min_size=1, max_size=5
    ),
    assignment=st.sampled_from(["hard", "multiple", "soft"]),
    kernel_width=st.floats(1e-3, 1e3),
)
def test_weights_sum_to_one_and_favour_the_nearest(distances, assignment, kernel_width):
    distances = np.sort(np.array(distances), axis=1)
    weights = vlad.assignment_weights(distances, assignment, kernel_width)
    np.testing.assert_allclose(weights.sum(axis=1), 1.0)
    assert np.all(weights >= 0)
    assert np.all(np.diff(weights, axis=1) <= 1e-12)  # never more for a farther one


def test_hand_computed_weights():
    # d = (1, 2, 5), width 1: exp(0), exp(-1/2), exp(-2), normalised.
    raw = np.exp([0.0, -0.5, -2.0])
    np.testing.assert_allclose(
        vlad.assignment_weights([[1.0, 2.0, 5.0]], "soft"), [raw / raw.sum()]
    )
    # The weights depend on distance ratios only: the descriptors' scale is moot.
    np.testing.assert_allclose(
        vlad.assignment_weights([[1e-6, 2e-6, 5e-6]], "soft"), [raw / raw.sum()]
    )
    assert vlad.assignment_weights([[0.0, 0.0, 3.0]], "soft").tolist() == [
        [0.5, 0.5, 0.0]
    ]
    assert vlad.assignment_weights([[1.0, 2.0]], "hard").tolist() == [[1.0, 0.0]]
    assert vlad.assignment_weights([[1.0, 2.0, 3.0, 4.0]], "multiple").tolist() == [
        [0.25] * 4
    ]


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match=r"n_nearest must be at most the number"):
        vlad.assign_nearest(np.zeros((2, 2)), np.eye(2), 3)
    with pytest.raises(ValueError, match="n_nearest must be an integer >= 1"):
        vlad.assign_nearest(np.zeros((2, 2)), np.eye(2), 0)
    with pytest.raises(ValueError, match="NaN or infinite"):
        vlad.assign_nearest([[np.nan, 0.0]], np.eye(2), 2)
    with pytest.raises(ValueError, match="assignment must be one of"):
        vlad.assignment_weights([[1.0]], "fuzzy")
    with pytest.raises(ValueError, match="kernel_width must be a positive"):
        vlad.assignment_weights([[1.0]], "soft", kernel_width=-1.0)
    with pytest.raises(ValueError, match="distances must have shape"):
        vlad.assignment_weights([1.0, 2.0])
