"""Nearest-centre assignment by chunked matrix products."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from vlad.core._finite import DistanceOverflowError, run_in_range
from vlad.core._parallel import resolve_n_jobs, run_ranges, workers_for
from vlad.core._validation import (
    as_float_matrix,
    check_finite,
    check_n_features,
    check_positive_int,
)
from vlad.errors import VladError

__all__ = ["CHUNK_BYTES", "assign", "assign_valid", "raise_non_finite"]

#: Size of the per-chunk distance matrix; small enough to stay in cache.
CHUNK_BYTES = 1 << 20


def assign(
    descriptors: ArrayLike,
    centers: ArrayLike,
    *,
    chunk_bytes: int = CHUNK_BYTES,
    n_jobs: int | None = None,
) -> np.ndarray:
    """Index of each descriptor's nearest centre in squared Euclidean distance.

    Distances are expanded as ``|c|^2 - 2 x.c`` (``|x|^2`` is the same for all
    centres and cannot change the argmin) and computed a chunk of rows at a time,
    so memory stays bounded whatever the number of descriptors. Ties go to the
    lowest index; the distances to two equal centres may differ in their last
    bit, as BLAS rounds, so either can win. The arithmetic runs in the
    descriptors' dtype.

    Parameters
    ----------
    descriptors : array-like of shape (n_descriptors, n_features)
    centers : array-like of shape (n_clusters, n_features)
        At least one centre.
    chunk_bytes : int, default=1 MiB
        Upper bound on the distance matrix of one chunk, a positive integer
        (a chunk holds at least one row whatever it says).
    n_jobs : int or None, default=None
        Threads (None or -1: every available core): each worker runs
        single-threaded BLAS on its own rows, and ``1`` is one thread in all,
        BLAS included. The labels do not depend on it.

    Returns
    -------
    labels : ndarray of intp of shape (n_descriptors,)

    Raises
    ------
    ValueError
        Dimension mismatch, no centres, NaN/inf descriptors or centres, or
        ``chunk_bytes`` below 1. Values of extreme magnitude are scaled
        together by a power of two first, which changes no label.
    TypeError
        ``chunk_bytes`` or ``n_jobs`` is not an integer.

    Examples
    --------
    >>> import vlad
    >>> vlad.assign([[0.0, 0.1], [2.0, 2.2]], [[2.0, 2.0], [0.0, 0.0]]).tolist()
    [1, 0]
    """
    descriptors = as_float_matrix(descriptors, "descriptors")
    centers = as_float_matrix(centers, "centers", dtype=descriptors.dtype)
    check_n_features(descriptors.shape[1], centers.shape[1])
    if centers.shape[0] < 1:
        raise VladError("centers must hold at least one centre; got none")
    check_finite(centers, "centers")
    chunk_bytes = check_positive_int(chunk_bytes, "chunk_bytes")
    n_workers = resolve_n_jobs(n_jobs)
    labels, _ = run_in_range(
        lambda scaled, scaled_centers: assign_valid(
            scaled, scaled_centers, chunk_bytes, n_workers
        ),
        descriptors,
        centers,
    )
    return labels


def assign_valid(
    descriptors: np.ndarray, centers: np.ndarray, chunk_bytes: int, n_threads: int
) -> np.ndarray:
    """:func:`assign` on valid, same-dtype, contiguous input, on up to
    ``n_threads`` threads; for callers that validated already.

    Also checks, at no extra pass, that the descriptors are finite: a NaN or
    infinite descriptor makes its chosen distance non-finite.
    """
    n_descriptors = descriptors.shape[0]
    labels = np.empty(n_descriptors, dtype=np.intp)
    scaled_centers_t = np.ascontiguousarray(-2.0 * centers.T)
    squared_norms = np.einsum("kf,kf->k", centers, centers)

    def assign_rows(first: int, last: int) -> None:
        _assign_rows(
            descriptors,
            scaled_centers_t,
            squared_norms,
            chunk_bytes,
            labels,
            first,
            last,
        )

    n_parts = workers_for(descriptors.size * centers.shape[0], n_threads)
    bounds = np.linspace(0, n_descriptors, n_parts + 1).astype(np.int64)
    run_ranges(
        assign_rows,
        list(zip(bounds[:-1], bounds[1:], strict=True)),
        n_parts,
    )
    return labels


def _assign_rows(
    descriptors: np.ndarray,
    scaled_centers_t: np.ndarray,
    squared_norms: np.ndarray,
    chunk_bytes: int,
    labels: np.ndarray,
    first: int,
    last: int,
) -> None:
    """Write the labels of rows ``first:last``, a cache-sized chunk at a time."""
    n_clusters = squared_norms.shape[0]
    rows_per_chunk = max(1, chunk_bytes // (n_clusters * descriptors.itemsize))
    distances = np.empty(
        (min(rows_per_chunk, last - first), n_clusters), descriptors.dtype
    )
    for start in range(first, last, rows_per_chunk):
        stop = min(start + rows_per_chunk, last)
        block = distances[: stop - start]
        # Non-finite input or overflow is detected below and reported as an error.
        with np.errstate(over="ignore", invalid="ignore"):
            np.matmul(descriptors[start:stop], scaled_centers_t, out=block)
            block += squared_norms
        chunk_labels = np.argmin(block, axis=1, out=labels[start:stop])
        nearest = np.take_along_axis(block, chunk_labels[:, None], axis=1)
        if not np.isfinite(nearest).all():
            raise_non_finite(descriptors[start:stop], start)


def raise_non_finite(block: np.ndarray, start: int) -> None:
    """Raise ``ValueError`` naming the first non-finite descriptor of a chunk
    whose distances were not finite, or :class:`DistanceOverflowError` when
    they overflowed (see :func:`vlad.core._finite.run_in_range`)."""
    bad_rows = np.flatnonzero(~np.isfinite(block).all(axis=1))
    if bad_rows.size:
        raise VladError(
            f"descriptors contain NaN or infinite values (first at row "
            f"{start + bad_rows[0]})"
        )
    raise DistanceOverflowError(
        f"descriptor distances overflow near row {start}: values are too large for "
        f"{block.dtype} arithmetic; rescale them or pass float64"
    )
