"""The query transforms of the retrieval benchmark, and their parameters.

Every original of the benchmark is turned into one query per transform and
tier. :data:`TRANSFORMS` is the literal table of the parameters, the one to
read and cite; :func:`apply_transform` looks a transform up in it and applies
it with OpenCV, drawing every random choice from the ``numpy`` generator it is
given (:func:`query_rng` makes one per query from the seed and the query's
name, so a query does not depend on the order the others were made in).

The eight transforms, each with the signature ``(image, params, rng)``:

- ``crop``: keep a random window of ``area`` of the pixels;
- ``rotation``: rotate by a random angle, on a canvas grown to hold it all;
- ``scale``: shrink by ``factor`` (area interpolation);
- ``jpeg``: store at JPEG ``quality`` (the pixels are unchanged here: the
  loss is the encoding's);
- ``brightness_contrast``: stretch contrast by ``contrast`` or its inverse
  about mid-grey, then brighten or darken by ``brightness``;
- ``perspective``: move each corner inwards by up to ``shift`` of the side and
  warp the quadrilateral back onto the full frame;
- ``text``: write ``lines`` lines of random letters, each ``height`` of the
  image high;
- ``occlusion``: cover ``area`` of the image with one rectangle of a random
  colour.

Examples
--------
>>> import numpy as np
>>> image = np.zeros((100, 200, 3), np.uint8)
>>> crop_rng = query_rng(0, "example__crop-easy")
>>> apply_transform(image, "crop", "easy", crop_rng).shape
(84, 167, 3)
>>> apply_transform(image, "scale", "hard", query_rng(0, "x")).shape
(25, 50, 3)
>>> query_quality("jpeg", "hard"), query_quality("crop", "hard")
(8, 95)
"""

from __future__ import annotations

import math
import string
import zlib
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

__all__ = [
    "STORED_QUALITY",
    "TIERS",
    "TRANSFORMS",
    "TRANSFORM_FUNCTIONS",
    "apply_transform",
    "brightness_contrast",
    "crop",
    "jpeg",
    "occlusion",
    "perspective",
    "query_quality",
    "query_rng",
    "resize_to_max_side",
    "rotate",
    "rotation",
    "scale",
    "text",
]

#: JPEG quality of every stored image but the ``jpeg`` queries.
STORED_QUALITY = 95

#: The tiers, mild first.
TIERS = ("easy", "hard")

#: Parameters of every transform in every tier. A pair ``(low, high)`` is a
#: range a value is drawn from uniformly; a signed magnitude gets a random sign.
TRANSFORMS: dict[str, dict[str, dict[str, Any]]] = {
    "crop": {
        "easy": {"area": 0.70},
        "hard": {"area": 0.35},
    },
    "rotation": {
        # degrees, drawn uniformly in (low, high), then given a random sign
        "easy": {"degrees": (0.0, 10.0)},
        "hard": {"degrees": (45.0, 90.0)},
    },
    "scale": {
        "easy": {"factor": 0.5},
        "hard": {"factor": 0.25},
    },
    "jpeg": {
        "easy": {"quality": 40},
        "hard": {"quality": 8},
    },
    "brightness_contrast": {
        # contrast: the factor or its inverse; brightness: +- this fraction
        "easy": {"brightness": 0.2, "contrast": 1.25},
        "hard": {"brightness": 0.3, "contrast": 2.5},
    },
    "perspective": {
        # each corner moves inwards by up to this fraction of width and height
        "easy": {"shift": 0.08},
        "hard": {"shift": 0.25},
    },
    "text": {
        "easy": {"lines": 1, "height": 0.05, "letters": 8},
        "hard": {"lines": 3, "height": 0.12, "letters": 10},
    },
    "occlusion": {
        "easy": {"area": 0.20},
        "hard": {"area": 0.50},
    },
}


def query_rng(seed: int, key: str) -> np.random.Generator:
    """The generator of one query: seeded by ``seed`` and a CRC-32 of ``key``.

    Examples
    --------
    >>> float(query_rng(0, "a").random()) == float(query_rng(0, "a").random())
    True
    """
    return np.random.default_rng([seed, zlib.crc32(key.encode("utf-8"))])


def resize_to_max_side(image: np.ndarray, max_side: int) -> np.ndarray:
    """``image`` shrunk (area interpolation) so its longer side is at most
    ``max_side``; unchanged when it already is.

    Examples
    --------
    >>> resize_to_max_side(np.zeros((300, 600, 3), np.uint8), 100).shape
    (50, 100, 3)
    """
    import cv2

    height, width = image.shape[:2]
    if max(height, width) <= max_side:
        return image
    factor = max_side / max(height, width)
    size = (max(1, round(width * factor)), max(1, round(height * factor)))
    return cv2.resize(image, size, interpolation=cv2.INTER_AREA)


def crop(image: np.ndarray, params: Mapping, rng: np.random.Generator) -> np.ndarray:
    """A window of the same aspect holding ``params["area"]`` of the pixels,
    at a uniformly random position."""
    height, width = image.shape[:2]
    side = math.sqrt(params["area"])
    crop_height = max(1, round(height * side))
    crop_width = max(1, round(width * side))
    top = int(rng.integers(0, height - crop_height + 1))
    left = int(rng.integers(0, width - crop_width + 1))
    return image[top : top + crop_height, left : left + crop_width].copy()


def rotate(image: np.ndarray, degrees: float) -> np.ndarray:
    """``image`` rotated anticlockwise by ``degrees`` about its centre, on a
    canvas grown to hold all of it (the corners are filled with black).

    Parameters
    ----------
    image : ndarray of shape (height, width) or (height, width, channels)
    degrees : float

    Returns
    -------
    rotated : ndarray of shape (new_height, new_width[, channels])
        ``new_width = round(width |cos| + height |sin|)`` and
        ``new_height = round(width |sin| + height |cos|)``.

    Examples
    --------
    >>> rotate(np.zeros((10, 30), np.uint8), 90).shape
    (30, 10)
    """
    import cv2

    height, width = image.shape[:2]
    radians = math.radians(degrees)
    cosine, sine = abs(math.cos(radians)), abs(math.sin(radians))
    new_width = max(1, round(width * cosine + height * sine))
    new_height = max(1, round(width * sine + height * cosine))
    matrix = cv2.getRotationMatrix2D(((width - 1) / 2, (height - 1) / 2), degrees, 1.0)
    # Move the centre of the old frame to the centre of the grown one.
    matrix[0, 2] += (new_width - width) / 2
    matrix[1, 2] += (new_height - height) / 2
    return cv2.warpAffine(
        image,
        matrix,
        (new_width, new_height),
        flags=cv2.INTER_LINEAR,
        borderMode=cv2.BORDER_CONSTANT,
        borderValue=0,
    )


def rotation(
    image: np.ndarray, params: Mapping, rng: np.random.Generator
) -> np.ndarray:
    """:func:`rotate` by an angle drawn from ``params["degrees"]``, random sign."""
    low, high = params["degrees"]
    degrees = float(rng.uniform(low, high)) * float(rng.choice((-1.0, 1.0)))
    return rotate(image, degrees)


def scale(image: np.ndarray, params: Mapping, rng: np.random.Generator) -> np.ndarray:
    """``image`` shrunk by ``params["factor"]`` (area interpolation)."""
    import cv2

    height, width = image.shape[:2]
    factor = params["factor"]
    size = (max(1, round(width * factor)), max(1, round(height * factor)))
    return cv2.resize(image, size, interpolation=cv2.INTER_AREA)


def jpeg(image: np.ndarray, params: Mapping, rng: np.random.Generator) -> np.ndarray:
    """``image`` unchanged: the query is stored at ``params["quality"]``
    (:func:`query_quality`), once, so the loss is one encoding's."""
    return image


def brightness_contrast(
    image: np.ndarray, params: Mapping, rng: np.random.Generator
) -> np.ndarray:
    """Contrast multiplied by ``params["contrast"]`` or its inverse about
    mid-grey, then brightness by ``1 + params["brightness"]`` or ``1 - ...``."""
    contrast = params["contrast"] ** float(rng.choice((-1.0, 1.0)))
    brightness = 1.0 + params["brightness"] * float(rng.choice((-1.0, 1.0)))
    adjusted = ((image.astype(np.float32) - 127.5) * contrast + 127.5) * brightness
    return np.clip(np.rint(adjusted), 0, 255).astype(np.uint8)


def perspective(
    image: np.ndarray, params: Mapping, rng: np.random.Generator
) -> np.ndarray:
    """The quadrilateral whose corners moved inwards by up to ``params["shift"]``
    of the sides, warped back onto the full frame."""
    import cv2

    height, width = image.shape[:2]
    corners = np.array(
        [[0, 0], [width - 1, 0], [width - 1, height - 1], [0, height - 1]],
        dtype=np.float32,
    )
    inwards = np.array([[1, 1], [-1, 1], [-1, -1], [1, -1]], dtype=np.float32)
    shifts = rng.uniform(0.0, params["shift"], size=(4, 2)) * [width, height]
    moved = corners + inwards * shifts.astype(np.float32)
    homography = cv2.getPerspectiveTransform(moved, corners)
    return cv2.warpPerspective(
        image, homography, (width, height), flags=cv2.INTER_LINEAR, borderValue=0
    )


def text(image: np.ndarray, params: Mapping, rng: np.random.Generator) -> np.ndarray:
    """``params["lines"]`` lines of ``params["letters"]`` random letters, each
    ``params["height"]`` of the image high, in a random colour and place."""
    import cv2

    font = cv2.FONT_HERSHEY_SIMPLEX
    height, width = image.shape[:2]
    written = image.copy()
    for _ in range(params["lines"]):
        letters = rng.choice(list(string.ascii_letters), size=params["letters"])
        words = "".join(letters)
        (base_width, base_height), _ = cv2.getTextSize(words, font, 1.0, 2)
        # As high as asked, narrowed only where the line would not fit.
        font_scale = min(
            params["height"] * height / base_height, 0.95 * width / base_width
        )
        thickness = max(1, round(2 * font_scale))
        (text_width, text_height), baseline = cv2.getTextSize(
            words, font, font_scale, thickness
        )
        left = int(rng.integers(0, max(1, width - text_width)))
        bottom = int(rng.integers(text_height, max(text_height + 1, height - baseline)))
        colour = tuple(int(value) for value in rng.integers(0, 256, size=3))
        cv2.putText(
            written, words, (left, bottom), font, font_scale, colour, thickness,
            cv2.LINE_AA,
        )  # fmt: skip
    return written


def occlusion(
    image: np.ndarray, params: Mapping, rng: np.random.Generator
) -> np.ndarray:
    """One rectangle of a random colour over ``params["area"]`` of the image,
    its aspect ratio log-uniform in (1/2, 2) where the frame allows."""
    height, width = image.shape[:2]
    covered = params["area"] * height * width
    aspect = math.exp(rng.uniform(math.log(0.5), math.log(2.0)))
    box_width = min(width, max(1, round(math.sqrt(covered * aspect))))
    box_height = min(height, max(1, round(covered / box_width)))
    box_width = min(width, max(1, round(covered / box_height)))
    top = int(rng.integers(0, height - box_height + 1))
    left = int(rng.integers(0, width - box_width + 1))
    occluded = image.copy()
    colour = rng.integers(0, 256, size=3)
    occluded[top : top + box_height, left : left + box_width] = (
        colour[: occluded.shape[2]] if occluded.ndim == 3 else colour[0]
    )
    return occluded


#: The transforms by name, all with the signature ``(image, params, rng)``.
TRANSFORM_FUNCTIONS: dict[
    str, Callable[[np.ndarray, Mapping, np.random.Generator], np.ndarray]
] = {
    "crop": crop,
    "rotation": rotation,
    "scale": scale,
    "jpeg": jpeg,
    "brightness_contrast": brightness_contrast,
    "perspective": perspective,
    "text": text,
    "occlusion": occlusion,
}


def apply_transform(
    image: np.ndarray, transform: str, tier: str, rng: np.random.Generator
) -> np.ndarray:
    """``image`` under ``transform`` with the parameters of ``tier``.

    Parameters
    ----------
    image : ndarray of uint8 of shape (height, width, 3)
    transform : str
        A key of :data:`TRANSFORMS`.
    tier : {"easy", "hard"}
    rng : numpy.random.Generator

    Returns
    -------
    query : ndarray of uint8 of shape (new_height, new_width, 3)
    """
    if transform not in TRANSFORMS:
        raise ValueError(
            f"Unknown transform {transform!r}; expected one of {sorted(TRANSFORMS)}"
        )
    if tier not in TIERS:
        raise ValueError(f"Unknown tier {tier!r}; expected one of {list(TIERS)}")
    function = TRANSFORM_FUNCTIONS[transform]
    return function(image, TRANSFORMS[transform][tier], rng)


def query_quality(transform: str, tier: str) -> int:
    """The JPEG quality a query of ``transform`` and ``tier`` is stored at."""
    return int(TRANSFORMS[transform][tier].get("quality", STORED_QUALITY))
