"""The fused assign + aggregate pass behind encode's numba path."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import DTYPES, reference_residuals
from hypothesis import given
from hypothesis import strategies as st

import vlad
from vlad.backends.numba._fused import fused_residuals
from vlad.core._encoding import image_blocks

pytest.importorskip("numba")


@st.composite
def ragged_sets(draw):
    n_images = draw(st.integers(0, 8))
    lengths = draw(st.lists(st.integers(0, 40), min_size=n_images, max_size=n_images))
    n_features = draw(st.integers(1, 6))
    n_clusters = draw(st.integers(1, 6))
    dtype = draw(st.sampled_from(DTYPES))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    offsets = np.zeros(n_images + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    descriptors = rng.normal(size=(int(offsets[-1]), n_features)).astype(dtype)
    centers = rng.normal(size=(n_clusters, n_features)).astype(dtype)
    return descriptors, offsets, centers


@given(problem=ragged_sets(), chunk_bytes=st.integers(1, 2000))
def test_matches_assign_then_reference_aggregation(problem, chunk_bytes):
    """Any chunking (chunks ending mid-image, empty images anywhere)."""
    descriptors, offsets, centers = problem
    n_images, (n_clusters, n_features) = len(offsets) - 1, centers.shape
    residuals = np.full((n_images, n_clusters, n_features), np.nan, descriptors.dtype)
    counts = np.full((n_images, n_clusters), -1, dtype=np.int64)
    for first, last in image_blocks(offsets, n_clusters):
        fused_residuals(
            descriptors, offsets, centers, first, last, chunk_bytes, residuals, counts
        )
    labels = vlad.assign(descriptors, centers)
    expected = reference_residuals(descriptors, labels, offsets, centers)
    tolerance = 1e-5 if descriptors.dtype == np.float32 else 1e-12
    np.testing.assert_allclose(residuals, expected, rtol=tolerance, atol=tolerance)
    images = np.repeat(np.arange(n_images), np.diff(offsets))
    expected_counts = np.bincount(
        images * n_clusters + labels, minlength=n_images * n_clusters
    )
    np.testing.assert_array_equal(counts.ravel(), expected_counts)


@pytest.mark.parametrize("lengths", [[0] * 5000, [3] * 20_000, [0, 70_000, 0], [5]])
def test_blocks_cover_every_image_once(lengths):
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    blocks = image_blocks(offsets, 64)
    assert blocks[0][0] == 0 and blocks[-1][1] == len(lengths)
    assert all(a < b for a, b in blocks)
    assert all(b == c for (_, b), (c, _) in zip(blocks[:-1], blocks[1:], strict=True))


def test_many_small_images_make_several_blocks():
    offsets = np.arange(0, 100_001, 10)
    assert len(image_blocks(offsets, 64)) > 4


@pytest.mark.parametrize("n_workers", [1, 2, 3, 16])
def test_blocks_come_in_multiples_of_the_workers(n_workers):
    offsets = np.arange(0, 1_000_001, 1000)
    blocks = image_blocks(offsets, 64, n_workers)
    assert len(blocks) % n_workers == 0 and len(blocks) >= 65
    sizes = [offsets[b] - offsets[a] for a, b in blocks]
    assert max(sizes) - min(sizes) <= 1000


def test_encode_uses_the_fused_path_and_agrees_with_the_staged_one():
    sets = vlad.datasets.make_descriptor_sets(300, 150, 32, ragged=True, seed=5)
    centers = vlad.fit_codebook(sets, 16, seed=0).centers
    fused = vlad.encode(sets, centers, aggregator="numba", mass=True, power=0.5)
    staged = vlad.encode(sets, centers, aggregator="loop", mass=True, power=0.5)
    np.testing.assert_allclose(fused, staged, rtol=1e-5, atol=1e-6)


def test_non_finite_descriptor_is_reported_with_its_row():
    descriptors = np.ones((50, 4), np.float32)
    descriptors[37, 2] = np.nan
    sets = vlad.DescriptorSets(descriptors, [0, 20, 50])
    with pytest.raises(ValueError, match="NaN or infinite values .first at row 37"):
        vlad.encode(sets, np.zeros((3, 4)), aggregator="numba")
