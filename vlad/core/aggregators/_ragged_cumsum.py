"""The sort + cumulative-sum ("ragged array") aggregator."""

from __future__ import annotations

import numpy as np

from vlad.core.aggregators._segments import (
    WORKING_SET_BYTES,
    block_segments,
    image_of_rows,
    row_blocks,
    subtract_centers,
    unit_residuals,
)

__all__ = ["aggregate_ragged_cumsum"]


def aggregate_ragged_cumsum(
    descriptors: np.ndarray,
    labels: np.ndarray,
    offsets: np.ndarray,
    centers: np.ndarray,
    *,
    residual_norm: bool = False,
) -> np.ndarray:
    """Sort rows by (image, centre), take a running sum, difference at segment ends.

    The essay's trick, made accurate and memory-bounded: a float32 running sum
    over a million rows grows so large that the differences lose most of their
    digits. Here the running sum is float64 and restarts every block of rows
    (at most ``WORKING_SET_BYTES`` of it), so its magnitude stays bounded and
    every segment sum keeps full float32 precision. With ``residual_norm``
    the running sum is of unit residuals instead of descriptors.
    """
    n_images = offsets.shape[0] - 1
    n_clusters, n_features = centers.shape
    sums = np.zeros((n_images, n_clusters, n_features), dtype=np.float64)
    counts = np.zeros((n_images, n_clusters), dtype=np.int64)
    images = image_of_rows(offsets)
    rows_per_block = WORKING_SET_BYTES // (n_features * (8 + descriptors.itemsize))
    if residual_norm:
        centers64 = centers.astype(np.float64)
        rows_per_block //= 2
    for start, stop in row_blocks(descriptors.shape[0], rows_per_block):
        first_image, last_image, segments = block_segments(
            images, labels, n_clusters, start, stop
        )
        n_block_segments = (last_image - first_image) * n_clusters
        order = np.argsort(segments, kind="stable")
        running = np.empty((stop - start + 1, n_features), dtype=np.float64)
        running[0] = 0.0
        rows = descriptors[start:stop]
        if residual_norm:
            rows = unit_residuals(rows, labels[start:stop], centers64)
        np.cumsum(rows[order], axis=0, out=running[1:])
        block_counts = np.bincount(segments, minlength=n_block_segments)
        ends = np.cumsum(block_counts)
        block_sums = running[ends] - running[ends - block_counts]
        sums[first_image:last_image] += block_sums.reshape(-1, n_clusters, n_features)
        counts[first_image:last_image] += block_counts.reshape(-1, n_clusters)
    if residual_norm:
        return sums.astype(descriptors.dtype, copy=False)
    return subtract_centers(sums, counts, centers, descriptors.dtype)
