"""Work on a pool of threads, in order, in bounded memory.

OpenCV releases the GIL while it decodes and extracts, so threads run it on
every core; OpenCV itself is kept to one thread meanwhile (the jobs are the
parallelism), which also makes results independent of the number of jobs.
"""

from __future__ import annotations

import collections
import itertools
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from vlad.core._parallel import one_opencv_thread, resolve_n_jobs

__all__ = ["Progress", "map_in_order"]

#: Called as ``progress(n_done, n_total)`` after each item.
Progress = Callable[[int, int], None]
T = TypeVar("T")
R = TypeVar("R")


def map_in_order(
    function: Callable[[T], R],
    items: Sequence[T],
    n_jobs: int | None,
    progress: Progress | None = None,
) -> Iterator[R]:
    """``function(item)`` for each item, in order, computed on ``n_jobs`` threads.

    At most ``2 * n_jobs`` items are computed ahead of the one yielded, so memory
    stays bounded however many items there are. OpenCV runs single-threaded
    meanwhile. An exception raised by ``function`` is raised here.

    Parameters
    ----------
    function : callable
    items : sequence
    n_jobs : int or None
        Worker threads; None or -1 for every core.
    progress : callable, optional
        Called as ``progress(n_done, n_total)`` after each item.

    Examples
    --------
    >>> from vlad.core._pool import map_in_order
    >>> list(map_in_order(lambda x: x * x, [1, 2, 3], n_jobs=2))
    [1, 4, 9]
    """
    n_workers = max(1, min(resolve_n_jobs(n_jobs), len(items)))
    with one_opencv_thread():
        pool = ThreadPoolExecutor(max_workers=n_workers)
        try:
            pending: collections.deque = collections.deque()
            items_left = iter(items)
            for n_done in range(1, len(items) + 1):
                for item in itertools.islice(items_left, 2 * n_workers - len(pending)):
                    pending.append(pool.submit(function, item))
                result = pending.popleft().result()
                if progress is not None:
                    progress(n_done, len(items))
                yield result
        finally:
            pool.shutdown(cancel_futures=True)
