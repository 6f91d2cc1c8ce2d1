"""Pictures of spatial verification: two images side by side, with a line
between the two ends of each inlier correspondence (as hloc's
``plot_matches`` shows them), drawn with OpenCV."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import ArrayLike

from vlad.core._deprecation import renamed_keyword
from vlad.core._files import atomic_write
from vlad.core._parameters import (
    GEOMETRY,
    INLIER_THRESHOLD,
    MATCHING,
    RATIO,
    VERIFY_KEYPOINTS,
)
from vlad.core._validation import as_float_matrix, check_positive_int
from vlad.errors import VladError
from vlad.images._describe import describe_image_with_keypoints
from vlad.images._extractors import resolve_extractor
from vlad.images._files import MAX_PIXELS, ImageReadError, read_checked
from vlad.images._learned import LearnedOptions
from vlad.images._sift import SiftOptions
from vlad.verification._spatial import (
    inlier_matches,
    match_descriptors,
)

__all__ = [
    "MATCHES_SUFFIXES",
    "MatchesPicture",
    "draw_matches",
    "encode_picture",
    "read_colour_image",
    "write_matches_picture",
]

#: Files a matches picture is written as, by suffix.
MATCHES_SUFFIXES = (".png", ".jpg", ".jpeg")
#: Pixels between the two images.
GAP = 8


@dataclass(frozen=True)
class MatchesPicture:
    """What :func:`write_matches_picture` found and drew.

    Attributes
    ----------
    picture : ndarray of uint8 of shape (height, width, 3)
        BGR, as OpenCV writes it.
    n_matches : int
        Matches of the ratio test (before the geometric model).
    n_inliers : int
        Those the model explains: the lines drawn.
    """

    picture: np.ndarray
    n_matches: int
    n_inliers: int


def read_colour_image(
    path: str | os.PathLike, *, max_pixels: int = MAX_PIXELS
) -> np.ndarray:
    """An image file as an 8-bit BGR array, EXIF orientation applied (as
    :func:`vlad.images.read_image` reads it in grey).

    Parameters
    ----------
    path : path-like
        A JPEG, PNG, BMP, TIFF or WebP file.
    max_pixels : int, default=MAX_PIXELS
        Refuse an image whose header declares more pixels, before decoding
        it; 0 for no limit.

    Raises
    ------
    ImageReadError
        The file cannot be read or decoded, or declares more than
        ``max_pixels`` pixels.
    """
    import cv2

    encoded, _ = read_checked(path, max_pixels)
    try:
        image = cv2.imdecode(np.frombuffer(encoded, np.uint8), cv2.IMREAD_COLOR)
    except cv2.error:
        image = None
    if image is None or image.size == 0:
        raise ImageReadError(path, "not an image that OpenCV can decode")
    return image


def draw_matches(
    query_image: np.ndarray,
    image: np.ndarray,
    query_points: ArrayLike,
    points: ArrayLike,
    *,
    max_height: int | None = None,
    caption: str | None = None,
) -> np.ndarray:
    """The two images side by side at one height, a line for each pair of
    points, and optionally a caption at the top left.

    Parameters
    ----------
    query_image, image : ndarray of uint8 of shape (height, width, 3)
        BGR images (grey ones, 2-D, are drawn in grey).
    query_points, points : array-like of shape (n_pairs, 2)
        x, y of each pair's ends in their image's pixels (pixel centres at
        integers), as :attr:`vlad.DescriptorSets.keypoints` holds them.
    max_height : int, optional
        Height of the picture at most; by default the taller image's.
    caption : str, optional
        Text written on a white box over the query image's top left corner
        (ASCII; such as the number of inliers).

    Returns
    -------
    ndarray of uint8 of shape (height, width, 3)
        BGR. Each line has its own hue, so one can be followed across.
    """
    import cv2

    query_points = as_float_matrix(query_points, "query_points", dtype=np.float64)
    points = as_float_matrix(points, "points", dtype=np.float64)
    if query_points.shape != points.shape or query_points.shape[1] != 2:
        raise VladError(
            "query_points and points must both have shape (n_pairs, 2); got "
            f"{query_points.shape} and {points.shape}"
        )
    images = [_bgr(query_image), _bgr(image)]
    height = max(picture.shape[0] for picture in images)
    if max_height is not None:
        height = min(height, check_positive_int(max_height, "max_height"))
    scales = [height / picture.shape[0] for picture in images]
    shrunk = [
        cv2.resize(
            picture,
            (max(1, round(picture.shape[1] * scale)), height),
            interpolation=cv2.INTER_AREA if scale < 1 else cv2.INTER_LINEAR,
        )
        for picture, scale in zip(images, scales, strict=True)
    ]
    offset = shrunk[0].shape[1] + GAP
    canvas = np.full((height, offset + shrunk[1].shape[1], 3), 255, np.uint8)
    canvas[:, : shrunk[0].shape[1]] = shrunk[0]
    canvas[:, offset:] = shrunk[1]
    starts = (query_points + 0.5) * scales[0] - 0.5
    ends = (points + 0.5) * scales[1] - 0.5 + [offset, 0]
    # Sixteenths of a pixel (shift=4): lines land where the points are.
    starts = np.round(starts * 16).astype(np.int64)
    ends = np.round(ends * 16).astype(np.int64)
    thickness = max(1, round(height / 400))
    for number, (start, end) in enumerate(zip(starts, ends, strict=True)):
        colour = _hue(number, len(starts))
        start, end = tuple(map(int, start)), tuple(map(int, end))
        cv2.line(canvas, start, end, colour, thickness, cv2.LINE_AA, 4)
        cv2.circle(canvas, start, 2 * 16, colour, -1, cv2.LINE_AA, 4)
        cv2.circle(canvas, end, 2 * 16, colour, -1, cv2.LINE_AA, 4)
    if caption:
        _write_caption(canvas, caption, scale=max(0.4, height / 800))
    return canvas


def _write_caption(canvas: np.ndarray, caption: str, scale: float) -> None:
    """Black text on a white box at the top left of ``canvas``, in place."""
    import cv2

    font, thickness = cv2.FONT_HERSHEY_SIMPLEX, max(1, round(scale * 2))
    (width, height), baseline = cv2.getTextSize(caption, font, scale, thickness)
    margin = max(2, round(4 * scale))
    box = (2 * margin + width, 2 * margin + height + baseline)
    cv2.rectangle(canvas, (0, 0), box, (255, 255, 255), -1)
    origin = (margin, margin + height)
    cv2.putText(canvas, caption, origin, font, scale, (0, 0, 0), thickness, cv2.LINE_AA)


def _bgr(image: np.ndarray) -> np.ndarray:
    image = np.asarray(image)
    if image.dtype != np.uint8 or image.ndim not in (2, 3):
        raise VladError(
            "images must be uint8 arrays of shape (height, width) or (height, "
            f"width, 3); got {image.dtype} of shape {image.shape}"
        )
    if image.ndim == 2:
        return np.repeat(image[:, :, None], 3, axis=2)
    return image


def _hue(number: int, total: int) -> tuple[int, int, int]:
    """A bright BGR colour, the ``number``-th of ``total`` around the wheel."""
    import cv2

    hue = int(180 * ((number * 0.618034) % 1.0)) if total > 1 else 60
    pixel = np.array([[[hue, 230, 255]]], dtype=np.uint8)
    blue, green, red = cv2.cvtColor(pixel, cv2.COLOR_HSV2BGR)[0, 0]
    return int(blue), int(green), int(red)


def encode_picture(picture: np.ndarray, suffix: str, quality: int = 90) -> bytes:
    """``picture`` (BGR) as the bytes of a ``.png`` or ``.jpg`` file."""
    import cv2

    suffix = suffix.lower()
    if suffix not in MATCHES_SUFFIXES:
        raise VladError(
            f"a picture is written as {', '.join(MATCHES_SUFFIXES)}; got {suffix!r}"
        )
    parameters = [] if suffix == ".png" else [cv2.IMWRITE_JPEG_QUALITY, quality]
    written, encoded = cv2.imencode(suffix, picture, parameters)
    if not written:
        raise VladError(f"OpenCV could not encode the picture as {suffix}")
    return encoded.tobytes()


@renamed_keyword("max_keypoints", "verify_keypoints", since="0.5")
def write_matches_picture(
    query: str | os.PathLike,
    image: str | os.PathLike,
    output: str | os.PathLike,
    *,
    descriptor_options: SiftOptions | LearnedOptions | dict | None = None,
    matching: str = MATCHING.default,
    model: str = GEOMETRY.default,
    ratio: float = RATIO.default,
    reprojection_threshold: float | None = INLIER_THRESHOLD.default,
    verify_keypoints: int | None = VERIFY_KEYPOINTS.default,
    max_height: int | None = 600,
    overwrite: bool = True,
) -> MatchesPicture:
    """Verify ``image`` against ``query`` as spatial re-ranking does, and
    write the picture of the inlier correspondences.

    Parameters
    ----------
    query, image : path-like
        Image files.
    output : path-like
        ``.png`` or ``.jpg``; written atomically (replaced if it exists).
    descriptor_options : SiftOptions, LearnedOptions or dict, optional
        How keypoints and descriptors are made (as ``vlad extract``'s: a
        dict of SIFT's options, or of learned features' with
        ``features="aliked"``); the defaults of
        :class:`vlad.images.SiftOptions` when not given.
    matching, model, ratio, reprojection_threshold, verify_keypoints
        As in :func:`vlad.verification.inlier_matches` (``verify_keypoints`` was
        ``max_keypoints``, a name that still works, with a
        ``DeprecationWarning``, until the next release).
    max_height : int or None, default=600
        Height of the picture at most; None keeps the taller image's.
    overwrite : bool, default=True
        Replace a picture that exists. When False, one that exists, or that
        another process writes meanwhile, is refused (``FileExistsError``).

    Returns
    -------
    MatchesPicture

    Raises
    ------
    ImageReadError
        An image that cannot be read.
    ValueError
        An output that is not ``.png`` or ``.jpg``, or a bad parameter.

    Examples
    --------
    >>> import os, tempfile
    >>> from vlad.pages import write_matches_picture
    >>> output = os.path.join(tempfile.mkdtemp(), "matches.png")
    >>> found = write_matches_picture(
    ...     "data/chelsea.jpg", "data/chelsea.jpg", output,
    ...     descriptor_options={"max_side": 256, "max_keypoints": 300},
    ... )
    >>> found.n_inliers == found.n_matches > 200, found.picture.shape[0]
    (True, 300)
    """
    output = Path(output)
    if output.suffix.lower() not in MATCHES_SUFFIXES:
        raise VladError(
            f"output must end in {', '.join(MATCHES_SUFFIXES)}; got {str(output)!r}"
        )
    if not overwrite and os.path.lexists(output):
        raise FileExistsError(f"{output} exists; pass overwrite to replace it")
    if isinstance(descriptor_options, dict):
        descriptor_options = resolve_extractor(descriptor_options, None)
    options = descriptor_options or SiftOptions()
    pictures = [
        read_colour_image(path, max_pixels=options.max_pixels)
        for path in (query, image)
    ]
    features = [describe_image_with_keypoints(path, options) for path in (query, image)]
    n_matches = len(
        match_descriptors(
            features[0][1], features[1][1], matching=matching, ratio=ratio
        )
    )
    pairs = inlier_matches(
        *features[0],
        *features[1],
        matching=matching,
        ratio=ratio,
        model=model,
        reprojection_threshold=reprojection_threshold,
        verify_keypoints=verify_keypoints,
    )
    picture = draw_matches(
        pictures[0],
        pictures[1],
        features[0][0][pairs[:, 0], :2],
        features[1][0][pairs[:, 1], :2],
        max_height=max_height,
        caption=f"{len(pairs)} inliers of {n_matches} matches ({model})",
    )
    with atomic_write(output, overwrite=overwrite) as handle:
        handle.write(encode_picture(picture, output.suffix))
    return MatchesPicture(picture, n_matches, len(pairs))
