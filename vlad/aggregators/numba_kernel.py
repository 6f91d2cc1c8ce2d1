"""A compiled per-image scatter-add with numba (optional dependency)."""

from __future__ import annotations

import functools

import numpy as np

from vlad._parallel import available_cores, balanced_ranges, run_ranges

#: Below this many descriptors, threads cost more than they save.
PARALLEL_MIN_ROWS = 65_536


def aggregate_numba(descriptors, labels, offsets, centers):
    """Compiled loop: each image's rows added into a float64 ``(K, F)``
    accumulator that stays in cache, images split across threads.

    One streaming pass over the descriptors: the closest of all aggregators to
    the memory-bandwidth floor. The kernel releases the GIL and runs on plain
    threads (no OpenMP pool that spin-waits between calls). Requires numba
    (``pip install 'vlad[numba]'``); compiled once per dtype and cached on disk.
    """
    kernel = _compiled_kernel()
    n_images = offsets.shape[0] - 1
    n_clusters, n_features = centers.shape
    residuals = np.empty((n_images, n_clusters, n_features), dtype=descriptors.dtype)
    n_parts = available_cores() if descriptors.shape[0] >= PARALLEL_MIN_ROWS else 1

    def aggregate_images(first: int, last: int) -> None:
        kernel(descriptors, labels, offsets, centers, residuals, first, last)

    run_ranges(aggregate_images, balanced_ranges(offsets, n_parts), n_parts)
    return residuals


@functools.cache
def _compiled_kernel():
    """Compile the kernel on first use (numba is imported only then)."""
    try:
        import numba
    except ImportError:
        raise ImportError(
            "the 'numba' aggregator requires numba; install it with: "
            "pip install 'vlad[numba]'"
        ) from None

    @numba.njit(nogil=True, cache=True, boundscheck=False)
    def scatter_residuals(
        descriptors, labels, offsets, centers, residuals, first, last
    ):
        n_clusters, n_features = centers.shape
        sums = np.empty((n_clusters, n_features), dtype=np.float64)
        counts = np.empty(n_clusters, dtype=np.int64)
        for t in range(first, last):
            sums[:] = 0.0
            counts[:] = 0
            for row in range(offsets[t], offsets[t + 1]):
                k = labels[row]
                counts[k] += 1
                for f in range(n_features):
                    sums[k, f] += descriptors[row, f]
            for k in range(n_clusters):
                for f in range(n_features):
                    residuals[t, k, f] = sums[k, f] - counts[k] * np.float64(
                        centers[k, f]
                    )

    return scatter_residuals
