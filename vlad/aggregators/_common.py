"""Helpers shared by the aggregators. Inputs are assumed valid (see
:func:`vlad.aggregate` for the checks)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

#: Bound on the temporaries of the chunked aggregators (``masked``,
#: ``ragged-cumsum``, ``sparse``).
WORKING_SET_BYTES = 64 << 20


def image_of_rows(offsets: np.ndarray) -> np.ndarray:
    """Image index of every descriptor row, shape (n_descriptors,)."""
    n_images = offsets.shape[0] - 1
    return np.repeat(np.arange(n_images, dtype=np.intp), np.diff(offsets))


def row_blocks(n_rows: int, rows_per_block: int) -> Iterator[tuple[int, int]]:
    """``(start, stop)`` of consecutive blocks of at most ``rows_per_block`` rows."""
    rows_per_block = max(1, rows_per_block)
    for start in range(0, n_rows, rows_per_block):
        yield start, min(start + rows_per_block, n_rows)


def subtract_centers(
    sums: np.ndarray, counts: np.ndarray, centers: np.ndarray, dtype: np.dtype
) -> np.ndarray:
    """Turn per-(image, centre) descriptor sums into residual sums.

    ``sum(x - c_k) = sum(x) - n_k * c_k``, computed in float64 (where ``sums``
    already is) and rounded once to ``dtype``.

    Parameters
    ----------
    sums : ndarray of float64 of shape (n_images, n_clusters, n_features)
        Modified in place.
    counts : ndarray of int of shape (n_images, n_clusters)
    centers : ndarray of shape (n_clusters, n_features)
    dtype : dtype of the result
    """
    sums -= counts[:, :, None] * centers.astype(np.float64)[None]
    return sums.astype(dtype, copy=False)
