"""The ``np.add.at`` scatter aggregator."""

from __future__ import annotations

import numpy as np

from vlad.core.aggregators.segments import (
    image_of_rows,
    segment_counts,
    subtract_centers,
)

__all__ = ["aggregate_ufunc_at"]


def aggregate_ufunc_at(
    descriptors: np.ndarray,
    labels: np.ndarray,
    offsets: np.ndarray,
    centers: np.ndarray,
) -> np.ndarray:
    """Unbuffered scatter-add of every descriptor into its (image, centre) row.

    ``np.add.at`` accumulates repeated indices correctly (plain fancy-index
    ``+=`` does not), but adds row by row without vectorising across rows.
    """
    n_images = offsets.shape[0] - 1
    n_clusters, n_features = centers.shape
    segments = image_of_rows(offsets) * n_clusters + labels
    sums = np.zeros((n_images * n_clusters, n_features), dtype=np.float64)
    np.add.at(sums, segments, descriptors)
    return subtract_centers(
        sums.reshape(n_images, n_clusters, n_features),
        segment_counts(offsets, labels, n_clusters),
        centers,
        descriptors.dtype,
    )
