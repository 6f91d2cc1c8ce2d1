"""Image arrays as 8-bit grey or RGB: any depth, transparency on white.

Used for the arrays users pass (:func:`as_grey_image`, :func:`as_rgb_image`)
and for what OpenCV decodes from files (:func:`grey_pixels`,
:func:`rgb_pixels`).
"""

from __future__ import annotations

import os

import numpy as np

from vlad.errors import VladError, VladTypeError

__all__ = [
    "BACKGROUND",
    "as_grey_image",
    "as_rgb_image",
    "grey_pixels",
    "rgb_pixels",
]

#: Grey level of the background transparent pixels are composited on.
BACKGROUND = 255


def grey_pixels(
    array: np.ndarray, from_colour: int, from_colour_alpha: int
) -> np.ndarray:
    """A grey, colour or colour + alpha image of any depth as grey ``uint8``,
    transparent pixels composited on white."""
    import cv2

    if array.ndim == 2:
        return _as_uint8(array)
    if array.shape[2] == 3:
        return _as_uint8(cv2.cvtColor(np.ascontiguousarray(array), from_colour))
    grey = _as_uint8(cv2.cvtColor(np.ascontiguousarray(array), from_colour_alpha))
    alpha = _as_uint8(array[:, :, 3]).astype(np.uint16)
    # grey * alpha + white * (1 - alpha), in 8-bit steps, rounded; at most
    # 255 * 255, so uint16 holds it.
    composited = grey.astype(np.uint16) * alpha + BACKGROUND * (255 - alpha) + 127
    return (composited // 255).astype(np.uint8)


def rgb_pixels(array: np.ndarray, bgr: bool) -> np.ndarray:
    """A grey, colour or colour + alpha image of any depth (channels in OpenCV's
    order if ``bgr``) as RGB ``uint8``, transparent pixels composited on white."""
    if array.ndim == 2:
        return np.repeat(_as_uint8(array)[:, :, None], 3, axis=2)
    rgba = _as_uint8(array)
    if bgr:
        rgba = rgba[:, :, [2, 1, 0, 3][: rgba.shape[2]]]
    if rgba.shape[2] == 3:
        return np.ascontiguousarray(rgba)
    alpha = rgba[:, :, 3:].astype(np.uint16)
    # As in grey_pixels, channel by channel.
    composited = rgba[:, :, :3].astype(np.uint16) * alpha
    composited += BACKGROUND * (255 - alpha) + 127
    return (composited // 255).astype(np.uint8)


def _as_uint8(array: np.ndarray) -> np.ndarray:
    """Samples of any depth OpenCV decodes as ``uint8``: 16-bit scaled, float
    taken as [0, 1]."""
    if array.dtype == np.uint8:
        return np.ascontiguousarray(array)
    if array.dtype == np.uint16:
        return (array // 257).astype(np.uint8)
    return np.rint(np.clip(array, 0.0, 1.0) * 255.0).astype(np.uint8)


def as_grey_image(image) -> np.ndarray:
    """Return an image array as a grey-level ``uint8`` array for OpenCV.

    Parameters
    ----------
    image : array-like of shape (height, width) or (height, width, channels)
        Grey, RGB or RGBA (the channel order of Pillow, imageio and
        scikit-image), with 1, 3 or 4 channels; ``uint8``, ``uint16`` (scaled
        to 8 bits), ``bool`` or floating point in [0, 1]. Transparent pixels
        are composited on white.

    Returns
    -------
    image : ndarray of uint8 of shape (height, width)

    Raises
    ------
    TypeError
        An unsupported dtype, or a path instead of an array.
    ValueError
        An unsupported shape, or floating-point values that are NaN or outside
        [0, 1].

    Examples
    --------
    >>> import numpy as np
    >>> import vlad.images._pixels
    >>> vlad.images._pixels.as_grey_image(np.array([[0.0, 1.0]])).tolist()
    [[0, 255]]
    """
    import cv2

    return grey_pixels(_checked_uint8(image), cv2.COLOR_RGB2GRAY, cv2.COLOR_RGBA2GRAY)


def as_rgb_image(image) -> np.ndarray:
    """Return an image array as an RGB ``uint8`` array.

    Parameters
    ----------
    image : array-like of shape (height, width) or (height, width, channels)
        As :func:`as_grey_image` takes; grey images are repeated on three
        channels, transparent pixels composited on white.

    Returns
    -------
    image : ndarray of uint8 of shape (height, width, 3)

    Raises
    ------
    TypeError, ValueError
        As :func:`as_grey_image`.

    Examples
    --------
    >>> import numpy as np
    >>> import vlad.images._pixels
    >>> vlad.images._pixels.as_rgb_image(np.array([[0.0, 1.0]])).tolist()
    [[[0, 0, 0], [255, 255, 255]]]
    """
    return rgb_pixels(_checked_uint8(image), bgr=False)


def _checked_uint8(image) -> np.ndarray:
    """An image array of :func:`as_grey_image`'s shapes and dtypes as ``uint8``,
    channels unchanged."""
    if isinstance(image, (str, bytes, os.PathLike)):
        raise VladTypeError(
            f"image must be an image array; got the path {image!r:.80}: read it "
            "with vlad.read_image (or pass paths to vlad.extract_images)"
        )
    array = np.asarray(image)
    if array.ndim == 3 and array.shape[2] == 1:
        array = array[:, :, 0]
    if array.ndim not in (2, 3) or (array.ndim == 3 and array.shape[2] not in (3, 4)):
        raise VladError(
            "image must have shape (height, width) or (height, width, 3 or 4); "
            f"got shape {array.shape}"
        )
    if array.shape[0] == 0 or array.shape[1] == 0:
        raise VladError(f"image must have at least one pixel; got shape {array.shape}")
    if array.dtype == np.uint16:
        array = (array // 257).astype(np.uint8)
    elif array.dtype == np.bool_:
        array = array.astype(np.uint8) * 255
    elif array.dtype.kind == "f":
        low, high = np.min(array), np.max(array)
        if not (low >= 0.0 and high <= 1.0):
            raise VladError(
                "a floating-point image must hold values in [0, 1]; "
                f"got values from {low} to {high}"
            )
        array = np.rint(array * 255.0).astype(np.uint8)
    elif array.dtype != np.uint8:
        raise VladTypeError(
            "image must be uint8, uint16, bool or floating point in [0, 1]; "
            f"got dtype {array.dtype}"
        )
    return array
