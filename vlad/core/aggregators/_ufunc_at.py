"""The ``np.add.at`` scatter aggregator."""

from __future__ import annotations

import numpy as np

from vlad.core.aggregators._segments import (
    image_of_rows,
    row_blocks,
    segment_counts,
    subtract_centers,
    unit_residuals,
)

__all__ = ["ROWS_PER_BLOCK", "aggregate_ufunc_at"]

#: Rows whose unit residuals are formed at a time (``residual_norm``).
ROWS_PER_BLOCK = 4096


def aggregate_ufunc_at(
    descriptors: np.ndarray,
    labels: np.ndarray,
    offsets: np.ndarray,
    centers: np.ndarray,
    *,
    residual_norm: bool = False,
) -> np.ndarray:
    """Unbuffered scatter-add of every descriptor into its (image, centre) row.

    ``np.add.at`` accumulates repeated indices correctly (plain fancy-index
    ``+=`` does not), but adds row by row without vectorising across rows.
    With ``residual_norm``, the unit residuals of blocks of rows are added.
    """
    n_images = offsets.shape[0] - 1
    n_clusters, n_features = centers.shape
    segments = image_of_rows(offsets) * n_clusters + labels
    sums = np.zeros((n_images * n_clusters, n_features), dtype=np.float64)
    if residual_norm:
        centers64 = centers.astype(np.float64)
        for start, stop in row_blocks(descriptors.shape[0], ROWS_PER_BLOCK):
            np.add.at(
                sums,
                segments[start:stop],
                unit_residuals(descriptors[start:stop], labels[start:stop], centers64),
            )
        return sums.reshape(n_images, n_clusters, n_features).astype(
            descriptors.dtype, copy=False
        )
    np.add.at(sums, segments, descriptors)
    return subtract_centers(
        sums.reshape(n_images, n_clusters, n_features),
        segment_counts(offsets, labels, n_clusters),
        centers,
        descriptors.dtype,
    )
