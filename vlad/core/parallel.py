"""Thread parallelism over contiguous ranges of rows or images.

NumPy's matrix product and the compiled kernels release the GIL, so plain
threads run them on all cores. Each worker keeps BLAS to one thread: on small
machines, BLAS's own threads on cache-sized chunks cost more in hand-offs and
spin-waiting than they give (see the README's Performance section).
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import numpy as np

#: Below this many multiply-adds (descriptors x centres x features), handing
#: work to threads costs more than it saves (measured on the essay's workload).
PARALLEL_MIN_WORK = 1 << 27


def workers_for(work: int, n_workers: int) -> int:
    """``n_workers`` for ``work`` multiply-adds, or 1 when it is too little."""
    return n_workers if work >= PARALLEL_MIN_WORK else 1


def available_cores() -> int:
    """Cores this process may run on (CPU affinity where the OS reports it)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def resolve_n_jobs(n_jobs: int | None) -> int:
    """Number of worker threads for ``n_jobs`` (None or -1: every core)."""
    if n_jobs is None or n_jobs == -1:
        return available_cores()
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, (int, np.integer)):
        raise TypeError(
            f"n_jobs must be a positive integer, -1 or None; got {n_jobs!r}"
        )
    if n_jobs < 1:
        raise ValueError(
            f"n_jobs must be a positive integer, -1 or None; got {n_jobs!r}"
        )
    return int(n_jobs)


@functools.cache
def _blas_controller():
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


@contextlib.contextmanager
def single_threaded_blas() -> Iterator[None]:
    """Limit BLAS to one thread for the duration of the block."""
    with _blas_controller().limit(limits=1, user_api="blas"):
        yield


def balanced_ranges(weights_cumsum: np.ndarray, n_parts: int) -> list[tuple[int, int]]:
    """Split items ``0..n`` into at most ``n_parts`` contiguous ranges of about
    equal weight.

    Parameters
    ----------
    weights_cumsum : ndarray of shape (n + 1,)
        Cumulative weights starting at 0 (for images: the offsets).
    n_parts : int
    """
    n_items = weights_cumsum.shape[0] - 1
    targets = np.linspace(weights_cumsum[0], weights_cumsum[-1], n_parts + 1)
    cuts = np.searchsorted(weights_cumsum, targets[1:-1], side="left")
    bounds = np.unique(np.concatenate([[0], cuts, [n_items]]))
    return [(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


def run_ranges(
    function: Callable[[int, int], None],
    ranges: list[tuple[int, int]],
    n_workers: int,
) -> None:
    """Call ``function(start, stop)`` for every range, on up to ``n_workers``
    threads with single-threaded BLAS; errors propagate to the caller."""
    if n_workers <= 1 or len(ranges) <= 1:
        for start, stop in ranges:
            function(start, stop)
        return
    with single_threaded_blas(), ThreadPoolExecutor(n_workers) as pool:
        for future in [pool.submit(function, start, stop) for start, stop in ranges]:
            future.result()
