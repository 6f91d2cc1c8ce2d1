"""Helpers shared by the aggregators. Inputs are assumed valid (see
:func:`vlad.aggregate` for the checks)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from vlad.core._finite import DistanceOverflowError
from vlad.errors import VladError

__all__ = [
    "WORKING_SET_BYTES",
    "block_segments",
    "image_of_rows",
    "raise_non_finite_result",
    "row_blocks",
    "segment_counts",
    "subtract_centers",
    "unit_residuals",
    "weighted_masses",
]

#: Bound on the temporaries of the chunked aggregators (``masked``,
#: ``ragged-cumsum``, ``sparse``).
WORKING_SET_BYTES = 64 << 20


def image_of_rows(offsets: np.ndarray) -> np.ndarray:
    """Image index of every descriptor row, shape (n_descriptors,)."""
    n_images = offsets.shape[0] - 1
    return np.repeat(np.arange(n_images, dtype=np.intp), np.diff(offsets))


def segment_counts(
    offsets: np.ndarray, labels: np.ndarray, n_clusters: int
) -> np.ndarray:
    """Descriptors per image and centre, shape (n_images, n_clusters)."""
    n_images = offsets.shape[0] - 1
    segments = image_of_rows(offsets) * n_clusters + labels
    counts = np.bincount(segments, minlength=n_images * n_clusters)
    return counts.reshape(n_images, n_clusters)


def block_segments(
    images: np.ndarray, labels: np.ndarray, n_clusters: int, start: int, stop: int
) -> tuple[int, int, np.ndarray]:
    """The images that rows ``start:stop`` belong to, and each row's segment.

    Returns
    -------
    first_image, last_image : int
        The rows belong to images ``first_image:last_image``.
    segments : ndarray of shape (stop - start,)
        ``(image - first_image) * n_clusters + label`` of each row.
    """
    first_image, last_image = int(images[start]), int(images[stop - 1]) + 1
    segments = (images[start:stop] - first_image) * n_clusters + labels[start:stop]
    return first_image, last_image, segments


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


def raise_non_finite_result(descriptors: np.ndarray) -> None:
    """Raise ``ValueError`` for residual sums that are not finite: NaN or
    infinite descriptors (counted), or else sums too large for the dtype.

    Every descriptor is added into one sum, and IEEE sums of NaN or inf never
    come back finite, so a finite result proves finite descriptors; this
    looks at the descriptors only when it is not.
    """
    bad = int(np.count_nonzero(~np.isfinite(descriptors)))
    if bad:
        raise VladError(f"descriptors contains {bad} NaN or infinite value(s)")
    # Finite descriptors whose sums overflow: run_in_range scales them and
    # runs again.
    raise DistanceOverflowError(
        f"residual sums overflow: values are too large for {descriptors.dtype}; "
        "rescale them or pass float64"
    )


def unit_residuals(
    rows: np.ndarray, labels: np.ndarray, centers64: np.ndarray
) -> np.ndarray:
    """Residuals ``x - c_label`` of ``rows``, each divided by its L2 norm.

    A zero residual stays zero. The norm is taken of the residual divided by
    its largest magnitude, so that squares of extreme values cannot overflow.

    Parameters
    ----------
    rows : ndarray of shape (n_rows, n_features)
    labels : ndarray of int of shape (n_rows,)
    centers64 : ndarray of float64 of shape (n_clusters, n_features)

    Returns
    -------
    residuals : ndarray of float64 of shape (n_rows, n_features)
    """
    residuals = rows.astype(np.float64) - centers64[labels]
    scale = np.abs(residuals).max(axis=1, initial=0.0)
    scale[scale == 0] = 1.0
    residuals /= scale[:, None]
    norms = np.sqrt(np.einsum("nf,nf->n", residuals, residuals))
    norms[norms == 0] = 1.0
    residuals /= norms[:, None]
    return residuals


def weighted_masses(
    offsets: np.ndarray, labels: np.ndarray, weights: np.ndarray, n_clusters: int
) -> np.ndarray:
    """Sum of assignment weights per image and centre, shape (n_images,
    n_clusters), float64; ``labels`` and ``weights`` of shape (n_descriptors,
    n_nearest)."""
    n_images = offsets.shape[0] - 1
    segments = image_of_rows(offsets)[:, None] * n_clusters + labels
    masses = np.bincount(
        segments.ravel(), weights.ravel(), minlength=n_images * n_clusters
    )
    return masses.reshape(n_images, n_clusters)
