"""A compiled per-image scatter-add with numba (optional dependency)."""

from __future__ import annotations

import numpy as np

from vlad.backends.numba import numba_kernels, read_only
from vlad.core._parallel import available_cores, balanced_ranges, run_ranges
from vlad.core.aggregators._segments import raise_non_finite_result

__all__ = ["PARALLEL_MIN_ROWS", "aggregate_numba"]

#: Below this many descriptors, threads cost more than they save.
PARALLEL_MIN_ROWS = 65_536


def aggregate_numba(
    descriptors: np.ndarray,
    labels: np.ndarray,
    offsets: np.ndarray,
    centers: np.ndarray,
    *,
    residual_norm: bool = False,
    weights: np.ndarray | None = None,
) -> np.ndarray:
    """Compiled loop: each image's rows added into a float64 ``(K, F)``
    accumulator that stays in cache, images split across threads.

    One streaming pass over the descriptors: the closest of all aggregators to
    the memory-bandwidth floor. It checks, in the same pass, that the sums
    are finite, and raises ``ValueError`` when they are not (NaN or infinite
    descriptors, or an overflow). The kernel releases the GIL and runs on plain
    threads (no OpenMP pool that spin-waits between calls). Requires numba
    (the ``numba`` extra); compiled once per dtype and cached on disk.
    With ``residual_norm`` or ``weights``, each residual is formed, scaled
    (by its weight, by its inverse norm) and added in the same pass.
    """
    kernels = numba_kernels()
    # Read-only, as a mapped file's are: one compiled kernel per dtype.
    descriptors, centers = read_only(descriptors), read_only(centers)
    n_images = offsets.shape[0] - 1
    n_clusters, n_features = centers.shape
    residuals = np.empty((n_images, n_clusters, n_features), dtype=descriptors.dtype)
    counts = np.empty((n_images, n_clusters), dtype=np.int64)
    n_parts = available_cores() if descriptors.shape[0] >= PARALLEL_MIN_ROWS else 1
    statuses = []
    if residual_norm or weights is not None:
        if weights is None:
            labels = labels[:, None]
            weights = np.ones(labels.shape)
        masses = np.empty((n_images, n_clusters), dtype=np.float64)

        def aggregate_weighted(first: int, last: int) -> None:
            sums = np.zeros((n_clusters, n_features), dtype=np.float64)
            image_masses = np.zeros(n_clusters, dtype=np.float64)
            status = np.zeros(1, dtype=np.int64)
            image = kernels.add_weighted_rows(
                descriptors, labels, weights, 0, offsets, offsets[first],
                offsets[last], first, centers, residual_norm, False, 1.0, sums,
                image_masses, residuals, masses, status,
            )  # fmt: skip
            kernels.flush_weighted(
                image, last, sums, image_masses, residuals, masses, status
            )
            statuses.append(status[0])

        run_ranges(
            aggregate_weighted,
            balanced_ranges(offsets, n_parts),
            n_parts,
            limit_blas=False,
        )
        if any(statuses):
            raise_non_finite_result(descriptors)
        return residuals

    def aggregate_images(first: int, last: int) -> None:
        sums = np.zeros((n_clusters, n_features), dtype=np.float64)
        image_counts = np.zeros(n_clusters, dtype=np.int64)
        status = np.zeros(1, dtype=np.int64)
        image = kernels.add_rows(
            descriptors, labels, 0, offsets, offsets[first], offsets[last], first,
            centers, sums, image_counts, residuals, counts, status,
        )  # fmt: skip
        kernels.flush(
            centers, image, last, sums, image_counts, residuals, counts, status
        )
        statuses.append(status[0])

    # No BLAS in this pass: BLAS's threads are left as they are.
    run_ranges(
        aggregate_images,
        balanced_ranges(offsets, n_parts),
        n_parts,
        limit_blas=False,
    )
    if any(statuses):
        raise_non_finite_result(descriptors)
    return residuals
