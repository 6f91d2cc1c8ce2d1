"""The vectorised-with-a-mask aggregator, with a bounded temporary."""

from __future__ import annotations

import numpy as np

from vlad.core.aggregators._segments import WORKING_SET_BYTES, image_of_rows, row_blocks

__all__ = ["aggregate_masked"]


def aggregate_masked(
    descriptors: np.ndarray,
    labels: np.ndarray,
    offsets: np.ndarray,
    centers: np.ndarray,
    *,
    residual_norm: bool = False,
) -> np.ndarray:
    """Dense one-hot mask times every residual ``x - c_k``, summed per image.

    The broadcasting formulation of the essay: it forms the residual of every
    descriptor to *every* centre, so it does ``n_clusters`` times the necessary
    work. Rows are processed in blocks so that the ``(rows, K, F)`` temporary
    never exceeds ``WORKING_SET_BYTES``; a block may hold several images or part
    of one. With ``residual_norm``, each residual is L2-normalised first.
    """
    n_images = offsets.shape[0] - 1
    n_clusters, n_features = centers.shape
    residuals = np.zeros((n_images, n_clusters, n_features), dtype=np.float64)
    centers64 = centers.astype(np.float64)
    cluster_ids = np.arange(n_clusters)
    images = image_of_rows(offsets)
    rows_per_block = WORKING_SET_BYTES // (2 * n_clusters * n_features * 8)
    for start, stop in row_blocks(descriptors.shape[0], rows_per_block):
        mask = labels[start:stop, None] == cluster_ids
        delta = descriptors[start:stop, None, :] - centers64
        if residual_norm:
            _normalize_last_axis(delta)
        delta *= mask[:, :, None]
        block_images = images[start:stop]
        first_rows = np.flatnonzero(np.diff(block_images, prepend=-1))
        residuals[block_images[first_rows]] += np.add.reduceat(
            delta, first_rows, axis=0
        )
    return residuals.astype(descriptors.dtype, copy=False)


def _normalize_last_axis(delta: np.ndarray) -> None:
    """Divide each ``delta[i, k]`` by its L2 norm in place (zero stays zero)."""
    scale = np.abs(delta).max(axis=2, keepdims=True)
    scale[scale == 0] = 1.0
    delta /= scale
    norms = np.sqrt(np.einsum("nkf,nkf->nk", delta, delta))[:, :, None]
    norms[norms == 0] = 1.0
    delta /= norms
