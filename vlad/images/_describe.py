"""Keypoints and descriptors of images, files or arrays, by any extractor.

The one entry point for the batches of :mod:`vlad.pipeline` and the
estimators: OpenCV's features (:mod:`vlad.images._sift`), a callable
(:mod:`vlad.images._callables`), a JPEG decoded reduced when the options let
it, or learned features (:mod:`vlad.images._learned`), image files described
in batches on a device.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator, Sequence

import numpy as np

from vlad.core._pool import Progress, map_in_order
from vlad.images._callables import CallableExtractor
from vlad.images._files import ImageFile, ImageReadError, read_image_reduced
from vlad.images._learned import LearnedOptions
from vlad.images._learned_batches import describe_learned, describe_learned_files
from vlad.images._pixels import as_grey_image
from vlad.images._sift import (
    SiftOptions,
    extract_keypoints_with_options,
    extract_with_options,
)

__all__ = ["describe_files", "describe_image", "describe_image_with_keypoints"]

#: What describes images: OpenCV's features, a callable, or learned features.
Options = SiftOptions | CallableExtractor | LearnedOptions


def describe_image(image, options: Options) -> np.ndarray:
    """Descriptors of an image file (path-like) or image array.

    Raises
    ------
    vlad.ImageReadError
        A file that cannot be read (or a callable or network that failed on
        it).
    """
    if isinstance(options, CallableExtractor):
        return options.describe(image)
    if isinstance(options, LearnedOptions):
        return describe_learned(image, options)[1]
    if isinstance(image, (str, os.PathLike)):
        image, _ = _read(image, options)
        return extract_with_options(image, options)
    return extract_with_options(as_grey_image(image), options)


def describe_image_with_keypoints(
    image, options: Options
) -> tuple[np.ndarray | None, np.ndarray]:
    """Keypoint positions and descriptors of an image file (path-like) or
    image array, as :func:`vlad.images._sift.extract_keypoints_with_options`
    (or :func:`vlad.images._learned.describe_learned`).

    Returns
    -------
    keypoints : ndarray of float32 of shape (n_keypoints, 4), or None
        x, y, size (a learned keypoint's detection score), angle, in the
        image's own pixel coordinates; None for a callable extractor's
        descriptors.
    descriptors : ndarray of float32 of shape (n_keypoints, n_features)

    Raises
    ------
    vlad.ImageReadError
        A file that cannot be read (or a callable or network that failed on
        it).
    """
    if isinstance(options, CallableExtractor):
        return None, options.describe(image)
    if isinstance(options, LearnedOptions):
        return describe_learned(image, options)
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


def describe_files(
    images: Sequence[ImageFile],
    options: Options,
    n_jobs: int | None,
    progress: Progress | None = None,
) -> Iterator[tuple[ImageFile, tuple | ImageReadError]]:
    """Each image file and its keypoints and descriptors (as
    :func:`describe_image_with_keypoints`), or the error that kept it from
    being read, in order: on ``n_jobs`` threads, or for learned features
    decoded on them and described in batches on the device.

    ``progress(n_done, n_total)`` is called after each image.
    """
    if isinstance(options, LearnedOptions):
        return describe_learned_files(images, options, n_jobs, progress)
    describe = functools.partial(_describe_file, options=options)
    return map_in_order(describe, images, n_jobs, progress)


def _describe_file(
    image: ImageFile, *, options: Options
) -> tuple[ImageFile, tuple | ImageReadError]:
    """An image and its keypoints and descriptors, or the error that kept it
    from being read."""
    try:
        return image, describe_image_with_keypoints(image.path, options)
    except ImageReadError as error:
        return image, error


def _read(path: str | os.PathLike, options: SiftOptions):
    """An image file, a JPEG decoded reduced when ``options.reduce_jpeg``
    lets it, and the shape of the whole image."""
    min_side = options.max_side if options.reduce_jpeg else 0
    return read_image_reduced(path, max_pixels=options.max_pixels, min_side=min_side)
