"""Keypoints and descriptors of one image, a file or an array, by any extractor.

The one entry point for the batches of :mod:`vlad.pipeline` and the
estimators: OpenCV's features (:mod:`vlad.images._sift`) or a callable
(:mod:`vlad.images._callables`), a JPEG decoded reduced when the options let it.
"""

from __future__ import annotations

import os

import numpy as np

from vlad.images._callables import CallableExtractor
from vlad.images._files import read_image_reduced
from vlad.images._pixels import as_grey_image
from vlad.images._sift import (
    SiftOptions,
    extract_keypoints_with_options,
    extract_with_options,
)

__all__ = ["describe_image", "describe_image_with_keypoints"]


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
    image array, as :func:`vlad.images._sift.extract_keypoints_with_options`.

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
