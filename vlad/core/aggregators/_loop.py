"""The reference aggregator: a plain loop over images and centres."""

from __future__ import annotations

import numpy as np

__all__ = ["aggregate_loop"]


def aggregate_loop(
    descriptors: np.ndarray,
    labels: np.ndarray,
    offsets: np.ndarray,
    centers: np.ndarray,
    *,
    residual_norm: bool = False,
    weights: np.ndarray | None = None,
) -> np.ndarray:
    """Per image, per centre, a masked sum of residuals (the oracle).

    Slow (``n_images * n_clusters`` passes of a mask) and obviously right:
    every other aggregator is tested against this one. Sums run in float64.
    With ``residual_norm``, each residual is divided by its L2 norm first (a
    zero residual adds zero). With ``weights`` (shape ``(n_descriptors,
    n_nearest)``, ``labels`` of the same shape), each descriptor adds
    ``weights[i, j] * residual`` to each of its centres ``labels[i, j]``.
    """
    n_images = offsets.shape[0] - 1
    n_clusters, n_features = centers.shape
    if weights is None:
        labels = labels[:, None]
        weights = np.ones(labels.shape)
    residuals = np.zeros((n_images, n_clusters, n_features), dtype=np.float64)
    centers64 = centers.astype(np.float64)
    for t in range(n_images):
        rows = descriptors[offsets[t] : offsets[t + 1]].astype(np.float64)
        image_labels = labels[offsets[t] : offsets[t + 1]]
        image_weights = weights[offsets[t] : offsets[t + 1]].astype(np.float64)
        for k in range(n_clusters):
            for j in range(image_labels.shape[1]):
                members = image_labels[:, j] == k
                if not members.any():
                    continue
                differences = rows[members] - centers64[k]
                if residual_norm:
                    differences = [_unit(difference) for difference in differences]
                residuals[t, k] += (
                    image_weights[members, j][:, None] * np.array(differences)
                ).sum(axis=0)
    return residuals.astype(descriptors.dtype, copy=False)


def _unit(residual: np.ndarray) -> np.ndarray:
    """``residual / |residual|``, zero for zero, without overflowing squares."""
    scale = np.abs(residual).max()
    if scale == 0:
        return residual
    scaled = residual / scale
    return scaled / np.sqrt(scaled @ scaled)
