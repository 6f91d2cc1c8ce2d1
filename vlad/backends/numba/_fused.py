"""Assignment and aggregation fused in one pass over the descriptors (numba).

:func:`vlad.encode`'s fast path. A worker takes a block of whole images; for
each cache-sized chunk of their rows, NumPy's matrix product gives ``-2 c.x``
for every centre and row (as ``(K, rows)``, the faster orientation for BLAS
here), and compiled loops add ``|c|^2``, take the argmin and add each row into
its image's float64 ``(K, F)`` accumulator while the chunk is still in cache.
This saves the second pass over the descriptors, the ``(rows, K)`` addition of
squared norms and NumPy's argmin over short rows. Labels are the nearest
centres as :func:`vlad.assign` finds them, up to float rounding in near-ties.

:func:`fused_weighted_residuals` is the same pass for residual normalisation
and multiple or soft assignment: the ``n`` nearest centres of each row, their
weights and the (unit) residuals are all computed on the chunk in cache.
"""

from __future__ import annotations

import numpy as np

from vlad.backends.numba import numba_kernels, read_only
from vlad.core._assignment import raise_non_finite
from vlad.core._normalization import normalize_in_place
from vlad.core._options import EncodingOptions
from vlad.core._parallel import run_ranges
from vlad.core.aggregators._segments import raise_non_finite_result

__all__ = ["encode_blocks", "fused_residuals", "fused_weighted_residuals"]


def fused_residuals(
    descriptors: np.ndarray,
    offsets: np.ndarray,
    centers: np.ndarray,
    first: int,
    last: int,
    chunk_bytes: int,
    residuals: np.ndarray,
    counts: np.ndarray,
) -> None:
    """Write residual sums and counts of images ``first:last``.

    Parameters
    ----------
    descriptors : ndarray of shape (n_descriptors, n_features)
    offsets : ndarray of int64 of shape (n_images + 1,)
    centers : ndarray of shape (n_clusters, n_features), descriptors' dtype
    first, last : int
        The block of images to process.
    chunk_bytes : int
        Bound on one chunk's ``(rows, K)`` product matrix.
    residuals : ndarray of shape (n_images, n_clusters, n_features)
        Output; rows ``first:last`` are written.
    counts : ndarray of int64 of shape (n_images, n_clusters)
        Output; rows ``first:last`` are written.

    Raises
    ------
    ValueError
        A descriptor is NaN or infinite, or its distances overflow.
    """
    kernels = numba_kernels()
    # Read-only, as a mapped file's are: one compiled kernel per dtype.
    descriptors, centers = read_only(descriptors), read_only(centers)
    n_clusters, n_features = centers.shape
    scaled_centers = np.ascontiguousarray(-2.0 * centers)
    squared_norms = np.einsum("kf,kf->k", centers, centers)
    sums = np.zeros((n_clusters, n_features), dtype=np.float64)
    image_counts = np.zeros(n_clusters, dtype=np.int64)
    rows_per_chunk = max(1, chunk_bytes // (n_clusters * descriptors.itemsize))
    row_start, row_stop = int(offsets[first]), int(offsets[last])
    chunk_rows = min(rows_per_chunk, row_stop - row_start)
    # Flat, so that every chunk's block is C-contiguous (the last one
    # shorter): one compiled kernel, not another for a strided block.
    products = np.empty(n_clusters * chunk_rows, descriptors.dtype)
    labels = np.empty(chunk_rows, dtype=np.intp)
    # Non-finite sums cannot follow from finite distances; counted anyway.
    status = np.zeros(1, dtype=np.int64)
    image = first
    for start in range(row_start, row_stop, rows_per_chunk):
        stop = min(start + rows_per_chunk, row_stop)
        block = products[: n_clusters * (stop - start)].reshape(n_clusters, -1)
        with np.errstate(over="ignore", invalid="ignore"):
            np.matmul(scaled_centers, descriptors[start:stop].T, out=block)
        bad_row = kernels.nearest(block, squared_norms, labels)
        if bad_row >= 0:
            raise_non_finite(
                descriptors[start + bad_row : start + bad_row + 1], start + bad_row
            )
        image = kernels.add_rows(
            descriptors, labels, start, offsets, start, stop, image, centers,
            sums, image_counts, residuals, counts, status,
        )  # fmt: skip
    kernels.flush(centers, image, last, sums, image_counts, residuals, counts, status)
    if status[0]:
        raise_non_finite_result(descriptors[row_start:row_stop])


def fused_weighted_residuals(
    descriptors: np.ndarray,
    offsets: np.ndarray,
    centers: np.ndarray,
    first: int,
    last: int,
    chunk_bytes: int,
    residuals: np.ndarray,
    masses: np.ndarray,
    *,
    n_nearest: int = 1,
    soft: bool = False,
    kernel_width: float = 1.0,
    residual_norm: bool = False,
) -> None:
    """Write weighted residual sums and masses of images ``first:last``.

    As :func:`fused_residuals`, with each row added to its ``n_nearest``
    nearest centres, each residual weighted (``1 / n_nearest``, or the soft
    weights of :func:`vlad.assignment_weights` with ``soft``) and, with
    ``residual_norm``, divided by its norm.

    Parameters
    ----------
    descriptors, offsets, centers, first, last, chunk_bytes, residuals
        As :func:`fused_residuals`.
    masses : ndarray of float64 of shape (n_images, n_clusters)
        Output: sums of weights; rows ``first:last`` are written.
    n_nearest : int, default=1
    soft : bool, default=False
    kernel_width : float, default=1.0
    residual_norm : bool, default=False

    Raises
    ------
    ValueError
        A descriptor is NaN or infinite, or its distances overflow.
    """
    kernels = numba_kernels()
    # Read-only, as a mapped file's are: one compiled kernel per dtype.
    descriptors, centers = read_only(descriptors), read_only(centers)
    n_clusters, n_features = centers.shape
    scaled_centers = np.ascontiguousarray(-2.0 * centers)
    squared_norms = np.einsum("kf,kf->k", centers, centers)
    sums = np.zeros((n_clusters, n_features), dtype=np.float64)
    image_masses = np.zeros(n_clusters, dtype=np.float64)
    rows_per_chunk = max(1, chunk_bytes // (n_clusters * descriptors.itemsize))
    row_start, row_stop = int(offsets[first]), int(offsets[last])
    chunk_rows = min(rows_per_chunk, row_stop - row_start)
    # Flat, so that every chunk's block is C-contiguous (the last one
    # shorter): one compiled kernel, not another for a strided block.
    products = np.empty(n_clusters * chunk_rows, descriptors.dtype)
    labels = np.empty((chunk_rows, n_nearest), dtype=np.intp)
    expanded = np.empty((chunk_rows, n_nearest), dtype=descriptors.dtype)
    weights = np.full((chunk_rows, n_nearest), 1.0 / n_nearest)
    status = np.zeros(1, dtype=np.int64)
    image = first
    for start in range(row_start, row_stop, rows_per_chunk):
        stop = min(start + rows_per_chunk, row_stop)
        block = products[: n_clusters * (stop - start)].reshape(n_clusters, -1)
        with np.errstate(over="ignore", invalid="ignore"):
            np.matmul(scaled_centers, descriptors[start:stop].T, out=block)
        if n_nearest == 1:  # the hard path's kernel, for the same labels
            bad_row = kernels.nearest(block, squared_norms, labels[:, 0])
        else:
            bad_row = kernels.nearest_n(
                block, squared_norms, labels[: stop - start], expanded
            )
        if bad_row >= 0:
            raise_non_finite(
                descriptors[start + bad_row : start + bad_row + 1], start + bad_row
            )
        image = kernels.add_weighted_rows(
            descriptors, labels, weights, start, offsets, start, stop, image,
            centers, residual_norm, soft, kernel_width, sums, image_masses,
            residuals, masses, status,
        )  # fmt: skip
    kernels.flush_weighted(image, last, sums, image_masses, residuals, masses, status)
    if status[0]:
        raise_non_finite_result(descriptors[row_start:row_stop])


def encode_blocks(
    descriptors: np.ndarray,
    offsets: np.ndarray,
    centers: np.ndarray,
    blocks: list[tuple[int, int]],
    n_workers: int,
    options: EncodingOptions,
    chunk_bytes: int,
) -> np.ndarray:
    """Assign, aggregate and normalise block by block, blocks across threads:
    :func:`vlad.encode`'s pass for the ``numba`` aggregator.

    Returns the normalised residuals ``(n_images, n_clusters, n_features)``
    in the descriptors' dtype; ``blocks`` are ranges of whole images
    (:func:`vlad.core._encoding.image_blocks`), ``chunk_bytes`` bounds one
    chunk's product matrix.
    """
    n_images = offsets.shape[0] - 1
    n_clusters, n_features = centers.shape
    residuals = np.empty((n_images, n_clusters, n_features), dtype=descriptors.dtype)
    variant = options.residual_norm or options.weighted
    counts = np.empty((n_images, n_clusters), dtype=np.float64 if variant else np.int64)

    def encode_block(first: int, last: int) -> None:
        if variant:
            fused_weighted_residuals(
                descriptors, offsets, centers, first, last, chunk_bytes,
                residuals, counts, n_nearest=options.n_nearest,
                soft=options.assignment == "soft",
                kernel_width=options.kernel_width,
                residual_norm=options.residual_norm,
            )  # fmt: skip
        else:
            fused_residuals(
                descriptors, offsets, centers, first, last, chunk_bytes, residuals,
                counts,
            )  # fmt: skip
        normalize_in_place(
            residuals[first:last],
            power=options.power,
            intra=options.intra,
            l2=options.l2,
            counts=counts[first:last] if options.mass else None,
        )

    run_ranges(
        encode_block,
        blocks,
        n_workers,
    )
    return residuals
