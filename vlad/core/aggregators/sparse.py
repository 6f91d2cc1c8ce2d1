"""The sparse one-hot product aggregator (scipy.sparse, no compiler needed)."""

from __future__ import annotations

import numpy as np

from vlad.core.aggregators.segments import (
    block_segments,
    image_of_rows,
    row_blocks,
    segment_counts,
    subtract_centers,
)

__all__ = ["ROWS_PER_BLOCK", "aggregate_sparse"]

#: Rows widened to float64 at a time, into one reused cache-sized buffer.
ROWS_PER_BLOCK = 4096


def aggregate_sparse(
    descriptors: np.ndarray,
    labels: np.ndarray,
    offsets: np.ndarray,
    centers: np.ndarray,
) -> np.ndarray:
    """Multiply a one-hot (segment x descriptor) sparse matrix by the descriptors.

    The matrix is built directly in CSC form (one non-zero per column, at the
    descriptor's (image, centre) segment), so scipy's compiled product streams
    the descriptors once, adding each row into its segment. Blocks of
    ``ROWS_PER_BLOCK`` rows are first widened to float64 in a reused buffer
    that stays in cache, so every sum is accumulated in float64.
    """
    from scipy import sparse

    n_images = offsets.shape[0] - 1
    n_clusters, n_features = centers.shape
    sums = np.zeros((n_images, n_clusters, n_features), dtype=np.float64)
    images = image_of_rows(offsets)
    widened = np.empty((min(ROWS_PER_BLOCK, descriptors.shape[0]), n_features))
    for start, stop in row_blocks(descriptors.shape[0], ROWS_PER_BLOCK):
        first_image, last_image, segments = block_segments(
            images, labels, n_clusters, start, stop
        )
        one_hot = sparse.csc_array(
            (np.ones(stop - start), segments, np.arange(stop - start + 1)),
            shape=((last_image - first_image) * n_clusters, stop - start),
        )
        block = widened[: stop - start]
        np.copyto(block, descriptors[start:stop])
        block_sums = one_hot @ block
        sums[first_image:last_image] += block_sums.reshape(-1, n_clusters, n_features)
    counts = segment_counts(offsets, labels, n_clusters)
    return subtract_centers(sums, counts, centers, descriptors.dtype)
