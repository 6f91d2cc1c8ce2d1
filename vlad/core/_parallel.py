"""Thread parallelism over contiguous ranges of rows or images.

NumPy's matrix product, OpenCV and the compiled kernels release the GIL, so
plain threads run them on every core. While vlad's own worker threads run,
and while an input too small to share out runs on one (under
:data:`PARALLEL_MIN_WORK`), BLAS and OpenCV are kept to one thread each:
BLAS's threads on cache-sized chunks cost more in hand-offs and spin-waiting
than they give (one image of 2,000 descriptors encoded 4 to 40 times slower
with them), and on a busy machine far more. Those are settings of the whole process;
:class:`SharedThreadLimit` lowers each while at least one call needs it and
restores what the process had when the last such call ends, however calls
from several threads overlap.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from vlad.core._parameters import N_JOBS

__all__ = [
    "PARALLEL_MIN_WORK",
    "SharedThreadLimit",
    "available_cores",
    "balanced_ranges",
    "one_opencv_thread",
    "resolve_n_jobs",
    "run_ranges",
    "single_threaded_blas",
    "workers_for",
]

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
    """Number of worker threads for ``n_jobs``.

    The one rule of every ``n_jobs`` in vlad: None or -1 means every core the
    process may use, a positive integer that many threads, but never more
    than the cores: any positive integer is accepted (``10**6`` too), and
    threads beyond the cores would only add overhead (and, by the thousand,
    exhaust the process's threads), never change a result.

    Raises
    ------
    vlad.errors.ParameterTypeError
        ``n_jobs`` is not an integer (``True`` is not one).
    vlad.errors.ParameterError
        ``n_jobs`` is 0 or below -1 (:data:`vlad.core._parameters.N_JOBS`).

    Examples
    --------
    >>> from vlad.core._parallel import available_cores, resolve_n_jobs
    >>> resolve_n_jobs(1)
    1
    >>> resolve_n_jobs(10**6) == available_cores()
    True
    >>> resolve_n_jobs(0)
    Traceback (most recent call last):
    ...
    vlad.errors.ParameterError: n_jobs must be None, -1 (every core) or an integer...
    """
    n_jobs = N_JOBS.check(n_jobs)
    if n_jobs is None or n_jobs == -1:
        return available_cores()
    return min(n_jobs, available_cores())


class SharedThreadLimit:
    """A process-wide thread setting, lowered while any caller needs it.

    The first caller to enter :meth:`held` lowers the setting and remembers
    how to restore it; later callers, from any thread, only count themselves
    in; the last to leave restores it. So overlapping calls never leave the
    lowered value behind, whatever order they end in.

    Parameters
    ----------
    lower : callable
        Lowers the setting and returns a function that restores the previous
        value. Called with the lock held, at most once per busy period.

    Examples
    --------
    >>> from vlad.core._parallel import SharedThreadLimit
    >>> setting = {"threads": 8}
    >>> def lower():
    ...     previous = setting["threads"]
    ...     setting["threads"] = 1
    ...     return lambda: setting.update(threads=previous)
    >>> limit = SharedThreadLimit(lower)
    >>> with limit.held():
    ...     with limit.held():
    ...         inner = setting["threads"]
    ...     after_inner = setting["threads"]
    >>> inner, after_inner, setting["threads"]
    (1, 1, 8)
    """

    def __init__(self, lower: Callable[[], Callable[[], None]]):
        self._lower = lower
        self._lock = threading.Lock()
        self._holders = 0
        self._restore: Callable[[], None] | None = None

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """Keep the setting lowered for the duration of the block."""
        with self._lock:
            if self._holders == 0:
                self._restore = self._lower()
            self._holders += 1
        try:
            yield
        finally:
            with self._lock:
                self._holders -= 1
                if self._holders == 0:
                    restore, self._restore = self._restore, None
                    restore()


#: The threadpoolctl controller and how many modules were imported when it
#: listed the loaded libraries (listing them takes about a millisecond).
_BLAS_CONTROLLER: dict = {"modules": -1, "controller": None}


def _blas_controller():
    """A controller of every BLAS loaded now: listed again when modules were
    imported since, since a new module can load another BLAS (faiss, torch).
    Called with the shared limit's lock held."""
    from threadpoolctl import ThreadpoolController

    if _BLAS_CONTROLLER["modules"] != len(sys.modules):
        _BLAS_CONTROLLER["controller"] = ThreadpoolController()
        _BLAS_CONTROLLER["modules"] = len(sys.modules)
    return _BLAS_CONTROLLER["controller"]


def _lower_blas_threads() -> Callable[[], None]:
    limiter = _blas_controller().limit(limits=1, user_api="blas")
    return limiter.restore_original_limits


def _lower_opencv_threads() -> Callable[[], None]:
    import cv2

    previous = cv2.getNumThreads()
    cv2.setNumThreads(1)
    return functools.partial(cv2.setNumThreads, previous)


_BLAS_LIMIT = SharedThreadLimit(_lower_blas_threads)
_OPENCV_LIMIT = SharedThreadLimit(_lower_opencv_threads)


def single_threaded_blas() -> contextlib.AbstractContextManager[None]:
    """Keep BLAS to one thread while the block runs (see
    :class:`SharedThreadLimit`)."""
    return _BLAS_LIMIT.held()


def one_opencv_thread() -> contextlib.AbstractContextManager[None]:
    """Keep OpenCV to one thread while the block runs (see
    :class:`SharedThreadLimit`); imports OpenCV."""
    return _OPENCV_LIMIT.held()


def balanced_ranges(weights_cumsum: np.ndarray, n_parts: int) -> list[tuple[int, int]]:
    """Split items ``0..n`` into at most ``n_parts`` contiguous ranges of about
    equal weight.

    Parameters
    ----------
    weights_cumsum : ndarray of shape (n + 1,)
        Cumulative weights starting at 0 (for images: the offsets).
    n_parts : int

    Returns
    -------
    list of (start, stop)
        Non-empty, contiguous, covering ``0..n`` in order.

    Examples
    --------
    >>> import numpy as np
    >>> from vlad.core._parallel import balanced_ranges
    >>> balanced_ranges(np.array([0, 5, 6, 7, 12]), 2)
    [(0, 2), (2, 4)]
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
    *,
    limit_blas: bool = True,
) -> None:
    """Call ``function(start, stop)`` for every range, on up to ``n_workers``
    threads (never more than there are ranges); errors propagate to the
    caller.

    With ``limit_blas`` BLAS runs on one thread meanwhile, whatever the number
    of workers: its own threads would spin between the small products of the
    chunks, competing with the workers and compiled loops for the same cores.
    """
    limit = single_threaded_blas() if limit_blas else contextlib.nullcontext()
    if n_workers <= 1 or len(ranges) <= 1:
        with limit:
            for start, stop in ranges:
                function(start, stop)
        return
    with limit, ThreadPoolExecutor(min(n_workers, len(ranges))) as pool:
        for future in [pool.submit(function, start, stop) for start, stop in ranges]:
            future.result()
