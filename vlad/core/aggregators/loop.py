"""The reference aggregator: a plain loop over images and centres."""

from __future__ import annotations

import numpy as np

__all__ = ["aggregate_loop"]


def aggregate_loop(
    descriptors: np.ndarray,
    labels: np.ndarray,
    offsets: np.ndarray,
    centers: np.ndarray,
) -> np.ndarray:
    """Per image, per centre, a masked sum of residuals (the oracle).

    Slow (``n_images * n_clusters`` passes of a mask) and obviously right:
    every other aggregator is tested against this one. Sums run in float64.
    """
    n_images = offsets.shape[0] - 1
    n_clusters, n_features = centers.shape
    residuals = np.zeros((n_images, n_clusters, n_features), dtype=np.float64)
    centers64 = centers.astype(np.float64)
    for t in range(n_images):
        rows = descriptors[offsets[t] : offsets[t + 1]].astype(np.float64)
        image_labels = labels[offsets[t] : offsets[t + 1]]
        for k in range(n_clusters):
            members = rows[image_labels == k]
            if members.shape[0]:
                residuals[t, k] = (members - centers64[k]).sum(axis=0)
    return residuals.astype(descriptors.dtype, copy=False)
