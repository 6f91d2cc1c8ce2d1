"""Images described on a pool of threads, in order, in bounded memory.

OpenCV releases the GIL while it decodes and extracts, so threads run it on
every core; OpenCV itself is kept to one thread meanwhile (the jobs are the
parallelism), which also makes results independent of the number of jobs.
"""

from __future__ import annotations

import collections
import itertools
import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import numpy as np

from vlad.core.parallel import one_opencv_thread, resolve_n_jobs
from vlad.images.callables import CallableExtractor
from vlad.images.files import read_image_reduced
from vlad.images.pixels import as_grey_image
from vlad.images.sift import (
    SiftOptions,
    extract_keypoints_with_options,
    extract_with_options,
)

__all__ = [
    "Progress",
    "describe_image",
    "describe_image_with_keypoints",
    "map_in_order",
]

#: Called as ``progress(n_done, n_total)`` after each item.
Progress = Callable[[int, int], None]
T = TypeVar("T")
R = TypeVar("R")


def describe_image(image, options: SiftOptions | CallableExtractor) -> np.ndarray:
    """Descriptors of an image file (path-like) or image array.

    Raises
    ------
    vlad.ImageReadError
        A file that cannot be read (or a callable that raised on it).
    """
    if isinstance(options, CallableExtractor):
        return options.describe(image)
    if isinstance(image, (str, os.PathLike)):
        image, _ = _read(image, options)
        return extract_with_options(image, options)
    return extract_with_options(as_grey_image(image), options)


def describe_image_with_keypoints(
    image, options: SiftOptions | CallableExtractor
) -> tuple[np.ndarray | None, np.ndarray]:
    """Keypoint positions and descriptors of an image file (path-like) or
    image array, as :func:`vlad.images.sift.extract_keypoints_with_options`.

    Returns
    -------
    keypoints : ndarray of float32 of shape (n_keypoints, 4), or None
        x, y, size, angle, in the image's own pixel coordinates; None for a
        callable extractor's descriptors.
    descriptors : ndarray of float32 of shape (n_keypoints, n_features)

    Raises
    ------
    vlad.ImageReadError
        A file that cannot be read (or a callable that raised on it).
    """
    if isinstance(options, CallableExtractor):
        return None, options.describe(image)
    if isinstance(image, (str, os.PathLike)):
        image, full_shape = _read(image, options)
        positions, descriptors = extract_keypoints_with_options(image, options)
        if full_shape != image.shape:
            # Decoded reduced: positions in the whole image's pixels, scaled
            # about pixel edges as resizing does.
            scales = np.divide(full_shape[::-1], image.shape[::-1], dtype=np.float32)
            positions[:, :2] = (positions[:, :2] + 0.5) * scales - 0.5
            positions[:, 2] *= scales.mean()
        return positions, descriptors
    return extract_keypoints_with_options(as_grey_image(image), options)


def _read(path: str | os.PathLike, options: SiftOptions):
    """An image file, a JPEG decoded reduced when ``options.reduce_jpeg``
    lets it, and the shape of the whole image."""
    min_side = options.max_side if options.reduce_jpeg else 0
    return read_image_reduced(path, max_pixels=options.max_pixels, min_side=min_side)


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
    >>> from vlad.images.pool import map_in_order
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
