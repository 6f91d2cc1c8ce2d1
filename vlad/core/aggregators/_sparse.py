"""The sparse one-hot product aggregator (scipy.sparse, no compiler needed)."""

from __future__ import annotations

import numpy as np

from vlad.core.aggregators._segments import (
    block_segments,
    image_of_rows,
    row_blocks,
    segment_counts,
    subtract_centers,
    unit_residuals,
    weighted_masses,
)

__all__ = ["ROWS_PER_BLOCK", "aggregate_sparse"]

#: Rows widened to float64 at a time, into one reused cache-sized buffer.
ROWS_PER_BLOCK = 4096


def aggregate_sparse(
    descriptors: np.ndarray,
    labels: np.ndarray,
    offsets: np.ndarray,
    centers: np.ndarray,
    *,
    residual_norm: bool = False,
    weights: np.ndarray | None = None,
) -> np.ndarray:
    """Multiply a one-hot (segment x descriptor) sparse matrix by the descriptors.

    The matrix is built directly in CSC form (one non-zero per column, at the
    descriptor's (image, centre) segment), so scipy's compiled product streams
    the descriptors once, adding each row into its segment. Blocks of
    ``ROWS_PER_BLOCK`` rows are first widened to float64 in a reused buffer
    that stays in cache, so every sum is accumulated in float64.

    With ``weights`` (multiple or soft assignment; ``labels`` and ``weights``
    of shape ``(n_descriptors, n_nearest)``) a column holds one weight per
    centre of its descriptor. With ``residual_norm``, the unit residuals of
    each block are multiplied instead of the descriptors, one product per
    nearest centre.
    """
    from scipy import sparse

    n_images = offsets.shape[0] - 1
    n_clusters, n_features = centers.shape
    n_descriptors = descriptors.shape[0]
    if weights is None:
        labels2d, weights2d = labels[:, None], None
    else:
        labels2d, weights2d = labels, weights.astype(np.float64, copy=False)
    n_nearest = labels2d.shape[1]
    sums = np.zeros((n_images, n_clusters, n_features), dtype=np.float64)
    images = image_of_rows(offsets)
    centers64 = centers.astype(np.float64)
    widened = np.empty((min(ROWS_PER_BLOCK, n_descriptors), n_features))
    for start, stop in row_blocks(n_descriptors, ROWS_PER_BLOCK):
        n_rows = stop - start
        first_image, last_image, _ = block_segments(
            images, labels2d[:, 0], n_clusters, start, stop
        )
        segments = (images[start:stop, None] - first_image) * n_clusters + labels2d[
            start:stop
        ]
        values = (
            np.ones((n_rows, n_nearest)) if weights2d is None else weights2d[start:stop]
        )
        shape = ((last_image - first_image) * n_clusters, n_rows)
        if residual_norm:
            block_sums = 0.0
            for j in range(n_nearest):
                one_hot = sparse.csc_array(
                    (values[:, j], segments[:, j], np.arange(n_rows + 1)), shape=shape
                )
                rows = unit_residuals(
                    descriptors[start:stop], labels2d[start:stop, j], centers64
                )
                block_sums = block_sums + one_hot @ rows
        else:
            one_hot = sparse.csc_array(
                (
                    values.ravel(),
                    segments.ravel(),
                    np.arange(0, n_rows * n_nearest + 1, n_nearest),
                ),
                shape=shape,
            )
            block = widened[:n_rows]
            np.copyto(block, descriptors[start:stop])
            block_sums = one_hot @ block
        sums[first_image:last_image] += block_sums.reshape(-1, n_clusters, n_features)
    if residual_norm:
        return sums.astype(descriptors.dtype, copy=False)
    if weights2d is None:
        counts = segment_counts(offsets, labels, n_clusters)
    else:
        counts = weighted_masses(offsets, labels2d, weights2d, n_clusters)
    return subtract_centers(sums, counts, centers, descriptors.dtype)
