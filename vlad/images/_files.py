"""Image files: finding them in folders and reading them as grey-level arrays.

Folders are walked following symbolic links, each folder once; a folder that
cannot be listed, or a link that loops back to a folder holding it, is
reported, never silently left out. An image is refused before it is decoded
when its header declares more pixels than the limit, and after, when the
decoder reports corrupt data inside
:func:`~vlad.images.capture_decoder_messages` (as the
``vlad`` command reads images).
Transparent pixels are composited on white.
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np

from vlad.errors import VladError, VladTypeError
from vlad.images._decoder_messages import CORRUPT_DATA, decode_with_messages
from vlad.images._headers import ImageHeader, read_header, truncated_format
from vlad.images._pixels import grey_pixels, rgb_pixels

__all__ = [
    "IMAGE_EXTENSIONS",
    "MAX_PIXELS",
    "ImageFile",
    "ImageReadError",
    "check_max_pixels",
    "find_images",
    "is_image_path",
    "jpeg_reduction",
    "read_checked",
    "read_image",
    "read_image_reduced",
    "walk_images",
]

logger = logging.getLogger(__name__)

#: File name endings read as images, compared in lower case.
IMAGE_EXTENSIONS = (".bmp", ".jpeg", ".jpg", ".png", ".tif", ".tiff", ".webp")
#: Default limit on the pixels of an image (width x height, 134 million: a
#: 16384 x 8192 panorama), read from its header before it is decoded.
MAX_PIXELS = 1 << 27
#: The reductions a JPEG decoder offers (it decodes 1/2, 1/4 or 1/8 of the
#: DCT coefficients: faster, and in a fraction of the memory).
JPEG_REDUCTIONS = (8, 4, 2)
#: Bytes a file may hold per pixel of the limit, plus a margin for metadata:
#: a larger file cannot be an image within the limit.
_BYTES_PER_PIXEL, _METADATA_BYTES = 32, 64 << 20


class ImageFile(NamedTuple):
    """An image file and the name it goes by in outputs."""

    path: Path
    name: str


class ImageReadError(VladError):
    """An image file that cannot be decoded: unreadable, truncated, corrupt,
    too large or not an image.

    Parameters
    ----------
    path : path-like
        The file.
    reason : str
        One line saying what is wrong with it.
    """

    def __init__(self, path: str | os.PathLike, reason: str):
        super().__init__(f"cannot read {path}: {reason}")
        self.path = Path(path)
        self.reason = reason


def is_image_path(path: str | os.PathLike) -> bool:
    """Whether ``path`` ends in one of :data:`IMAGE_EXTENSIONS`, in any case."""
    return Path(path).suffix.lower() in IMAGE_EXTENSIONS


def find_images(
    inputs: str | os.PathLike | Sequence[str | os.PathLike],
) -> list[ImageFile]:
    """Image files under folders and among files, in a deterministic order.

    Folders are walked recursively, following symbolic links, and their images
    sorted by relative path; files other than images (by extension, see
    :data:`IMAGE_EXTENSIONS`) are ignored there. Inputs keep the order given;
    a file met twice (through links, too) is kept once. A sub-folder that
    cannot be listed, or a link back to a folder that holds it, is logged as a
    warning (:func:`walk_images` returns them).

    Parameters
    ----------
    inputs : path-like or sequence of path-like
        Folders and image files.

    Returns
    -------
    list of ImageFile
        With one input, each name is the path relative to that folder (or the
        file's own name); with several, the path as reached from the inputs
        given (``"photos/a.jpg"``), so that names stay distinct. Names use
        ``/`` as separator.

    Raises
    ------
    FileNotFoundError
        An input does not exist.
    PermissionError
        An input folder cannot be listed.
    ValueError
        No inputs, an input file that is not an image, or no images at all.

    Examples
    --------
    >>> import vlad.images._files
    >>> [image.name for image in vlad.images.find_images("data")][:2]
    ['astronaut.jpg', 'brick.jpg']
    """
    images, problems = walk_images(inputs)
    for name, reason in problems.items():
        logger.warning("skipped %s: %s", name, reason)
    if not images:
        name, reason = next(iter(problems.items()))
        raise VladError(f"no images could be listed (such as {name}: {reason})")
    return images


def walk_images(
    inputs: str | os.PathLike | Sequence[str | os.PathLike],
    *,
    line_breaks: bool = False,
) -> tuple[list[ImageFile], dict[str, str]]:
    """:func:`find_images`'s images, and the sub-folders it could not walk.

    Parameters
    ----------
    inputs : path-like or sequence of path-like
    line_breaks : bool, default=False
        Keep images whose name holds a line break (for outputs that store
        any name, such as folders of vector shards); otherwise they are
        problems.

    Returns
    -------
    images : list of ImageFile
        As :func:`find_images`; may be empty when ``problems`` is not.
    problems : dict of str to str
        Each sub-folder (named as images are, ending in ``/``) that could not
        be listed or is a link back to a folder holding it, and each image
        whose name holds a line break, and why.

    Raises
    ------
    FileNotFoundError, PermissionError, ValueError
        As :func:`find_images`; "no images" only when ``problems`` is empty.
    """
    if isinstance(inputs, (str, os.PathLike)):
        inputs = [inputs]
    if len(inputs) == 0:
        raise VladError("inputs must name at least one folder or image file; got none")
    images: list[ImageFile] = []
    problems: dict[str, str] = {}
    seen: set = set()
    for given in inputs:
        root = Path(given)
        if root.is_dir():
            found, missed = _images_under(root)
        elif root.is_file() or root.is_symlink():
            if not is_image_path(root):
                raise VladError(
                    f"{root} is not an image file; expected one ending in "
                    f"{', '.join(IMAGE_EXTENSIONS)}"
                )
            found, missed = [(root, root.name)], {}
        else:
            raise FileNotFoundError(f"no such file or folder: {root}")

        several = len(inputs) > 1
        for relative_name, reason in missed.items():
            problems[_output_name(root, relative_name, several)] = reason
        for path, relative_name in found:
            key = _identity(path)
            if not line_breaks and ("\n" in relative_name or "\r" in relative_name):
                problems[_output_name(root, relative_name, several)] = (
                    "its name holds a line break, which lists of names cannot hold "
                    "(a folder of vector shards can)"
                )
            elif key not in seen:
                seen.add(key)
                name = _output_name(root, relative_name, several)
                images.append(ImageFile(path, name))
    if not images and not problems:
        shown = ", ".join(str(given) for given in inputs)
        raise VladError(
            f"no images in {shown}: expected files ending in "
            f"{', '.join(IMAGE_EXTENSIONS)} (any case)"
        )
    return images, problems


def _output_name(root: Path, relative_name: str, several: bool) -> str:
    """The name of what was found at ``relative_name`` below input ``root``."""
    if not several:
        return relative_name
    if root.is_dir():
        folder = "/" if relative_name.endswith("/") else ""
        return (root / relative_name).as_posix() + folder
    return root.as_posix()


def _identity(path: Path | os.DirEntry):
    """What tells a file apart whatever the path to it: device and inode
    (the absolute path when it cannot be read, a link loop say)."""
    try:
        status = path.stat()
    except OSError:
        return os.path.abspath(path)
    return status.st_dev, status.st_ino


def _images_under(root: Path) -> tuple[list[tuple[Path, str]], dict[str, str]]:
    """``(path, name relative to root)`` of every image below ``root``, sorted,
    and the sub-folders that could not be walked, with why.

    Walked depth first with a stack (no recursion limit), following links;
    a folder reached twice is walked once.
    """
    found: list[tuple[Path, str]] = []
    problems: dict[str, str] = {}
    walked = {_identity(root)}
    pending = [(root, "", frozenset(walked))]
    while pending:
        folder, relative, ancestors = pending.pop()
        try:
            with os.scandir(folder) as scan:
                entries = sorted(scan, key=lambda entry: entry.name)
        except OSError as error:
            if not relative:
                raise PermissionError(
                    f"cannot list the folder {root}: {error.strerror or error}"
                ) from None
            problems[f"{relative}/"] = (
                f"cannot list the folder ({error.strerror or error})"
            )
            continue
        subfolders = []
        for entry in entries:
            name = f"{relative}/{entry.name}" if relative else entry.name
            if _is_folder(entry):
                key = _identity(entry)
                if key in ancestors:
                    problems[f"{name}/"] = (
                        "a link to a folder that holds it (a loop): not followed"
                    )
                elif key not in walked:
                    walked.add(key)
                    subfolders.append((Path(entry.path), name, ancestors | {key}))
            elif is_image_path(entry.name):
                found.append((Path(entry.path), name))
        pending.extend(reversed(subfolders))
    found.sort(key=lambda item: item[1].split("/"))
    return found, problems


def _is_folder(entry: os.DirEntry) -> bool:
    """Whether an entry is a folder or a link to one (False when that cannot
    be told: a link loop is then read, and reported, as a file)."""
    try:
        return entry.is_dir()
    except OSError:
        return False


def read_image(
    path: str | os.PathLike, *, max_pixels: int = MAX_PIXELS, colour: bool = False
) -> np.ndarray:
    """Decode an image file into a grey-level (or RGB) ``uint8`` array.

    The bytes are read in Python, checked (format, size, completeness) and
    decoded from memory with OpenCV, so any path the file system accepts
    works. Colour images are converted to grey and EXIF orientation is
    applied; 16-bit images are scaled to 8 bits. Transparent pixels are
    composited on white (:data:`vlad.images._pixels.BACKGROUND`); such images
    (PNG, TIFF or WebP with an alpha channel) keep the orientation they are
    stored in.

    Parameters
    ----------
    path : path-like
        A JPEG, PNG, BMP, TIFF or WebP file (told by its bytes).
    max_pixels : int, default=MAX_PIXELS
        Refuse an image whose header declares more pixels (width x height),
        before decoding it; 0 for no limit.
    colour : bool, default=False
        Return RGB (grey images repeated on three channels) instead of grey.

    Returns
    -------
    image : ndarray of uint8 of shape (height, width), or (height, width, 3)
        with ``colour``

    Raises
    ------
    ImageReadError
        The file cannot be opened, is not a regular file, is empty, is not a
        JPEG, PNG, BMP, TIFF or WebP image, declares more than ``max_pixels``
        pixels, is truncated, holds data the decoder reports as corrupt
        (told only inside
        :func:`~vlad.images.capture_decoder_messages`,
        which leaves the decoders' messages out of standard error), or
        cannot be decoded. Its message is one line naming the file.
    """
    return read_image_reduced(path, max_pixels=max_pixels, colour=colour)[0]


def read_image_reduced(
    path: str | os.PathLike,
    *,
    max_pixels: int = MAX_PIXELS,
    min_side: int = 0,
    colour: bool = False,
) -> tuple[np.ndarray, tuple[int, int]]:
    """:func:`read_image`, a JPEG decoded at 1/2, 1/4 or 1/8 of its size when
    its longest side stays at least ``min_side`` pixels.

    The JPEG decoder then reads only part of each block's frequencies, which
    is several times faster and takes a fraction of the memory of decoding
    the whole image and shrinking it; the pixels are close to, not the same
    as, a full decoding shrunk with area interpolation.

    Parameters
    ----------
    path, max_pixels, colour
        As in :func:`read_image`.
    min_side : int, default=0
        The longest side the decoded image must keep (see
        :func:`jpeg_reduction`); 0 decodes every image whole.

    Returns
    -------
    image : ndarray of uint8 of shape (height, width), or (height, width, 3)
        with ``colour``
    full_shape : tuple of int
        ``(height, width)`` of the image decoded whole (oriented as
        ``image``).

    Examples
    --------
    >>> from vlad.images import read_image_reduced
    >>> image, full_shape = read_image_reduced("data/chelsea.jpg", min_side=100)
    >>> image.shape, full_shape
    ((75, 113), (300, 451))
    """
    max_pixels = check_max_pixels(max_pixels)
    if isinstance(min_side, bool) or not isinstance(min_side, (int, np.integer)):
        raise VladTypeError(f"min_side must be an integer >= 0; got {min_side!r}")
    if min_side < 0:
        raise VladError(f"min_side must be an integer >= 0; got {min_side!r}")
    encoded, header = read_checked(path, max_pixels)
    reduction = jpeg_reduction(header, min_side)
    image = _decode(path, encoded, header, reduction, colour)
    full_shape = (header.height, header.width)
    if (image.shape[0] > image.shape[1]) != (header.height > header.width):
        full_shape = full_shape[::-1]  # turned by its EXIF orientation
    return image, full_shape


def check_max_pixels(max_pixels: int) -> int:
    """``max_pixels`` as an int, refused unless an integer >= 0."""
    if isinstance(max_pixels, bool) or not isinstance(max_pixels, (int, np.integer)):
        raise VladTypeError(f"max_pixels must be an integer >= 0; got {max_pixels!r}")
    if max_pixels < 0:
        raise VladError(f"max_pixels must be an integer >= 0; got {max_pixels!r}")
    return int(max_pixels)


def read_checked(
    path: str | os.PathLike, max_pixels: int = MAX_PIXELS
) -> tuple[bytes, ImageHeader]:
    """The bytes of an image file and what its header declares, checked as
    before decoding: a regular, non-empty, complete file of a format of
    :data:`~vlad.images._headers.FORMATS`, of at most ``max_pixels`` pixels
    (0: no limit). Nothing is decoded.

    Raises
    ------
    ImageReadError
        Any of those checks fails; the reason is one line.
    TypeError, ValueError
        ``max_pixels`` is not an integer >= 0.
    """
    max_pixels = check_max_pixels(max_pixels)
    encoded = _read_file(path, max_pixels)
    truncated = truncated_format(encoded)
    if truncated:
        raise ImageReadError(path, f"truncated {truncated} (the file ends too early)")
    try:
        header = read_header(encoded)
    except ValueError as error:
        raise ImageReadError(path, str(error)) from None
    if max_pixels and header.n_pixels > max_pixels:
        raise ImageReadError(
            path,
            f"{header.width} x {header.height} pixels is more than max_pixels="
            f"{max_pixels} (raise the limit to read it)",
        )
    return encoded, header


def jpeg_reduction(header: ImageHeader, min_side: int) -> int:
    """The largest reduction (1, 2, 4 or 8) at which a JPEG's decoder keeps
    its longest side at least ``min_side`` pixels (1 for other formats, or
    when ``min_side`` is 0).

    Examples
    --------
    >>> from vlad.images._headers import ImageHeader
    >>> from vlad.images._files import jpeg_reduction
    >>> jpeg_reduction(ImageHeader("JPEG", 4000, 3000, False), 1024)
    2
    >>> jpeg_reduction(ImageHeader("JPEG", 8192, 6000, False), 1024)
    8
    >>> jpeg_reduction(ImageHeader("PNG", 8192, 6000, False), 1024)
    1
    """
    if header.format != "JPEG" or not min_side:
        return 1
    longest = max(header.width, header.height)
    for reduction in JPEG_REDUCTIONS:
        # The decoder rounds the reduced sides up.
        if -(-longest // reduction) >= min_side:
            return reduction
    return 1


def _read_file(path: str | os.PathLike, max_pixels: int) -> bytes:
    """The bytes of a regular file no larger than an image of ``max_pixels``
    pixels can be."""
    # Non-blocking, so that a named pipe called photo.jpg cannot hang the run.
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    try:
        descriptor = os.open(path, flags)
    except OSError as error:
        raise ImageReadError(path, error.strerror or str(error)) from None
    status = os.fstat(descriptor)
    if not stat.S_ISREG(status.st_mode):
        os.close(descriptor)
        reason = "a folder" if stat.S_ISDIR(status.st_mode) else "not a regular file"
        raise ImageReadError(path, reason)
    with open(descriptor, "rb", buffering=0) as handle:
        limit = max_pixels * _BYTES_PER_PIXEL + _METADATA_BYTES
        if max_pixels and status.st_size > limit:
            raise ImageReadError(
                path,
                f"the file holds {status.st_size} bytes, more than an image of "
                f"max_pixels={max_pixels} pixels",
            )
        try:
            encoded = handle.read()
        except OSError as error:
            raise ImageReadError(path, error.strerror or str(error)) from None
    if not encoded:
        raise ImageReadError(path, "the file is empty")
    return encoded


def _decode(
    path: str | os.PathLike,
    encoded: bytes,
    header: ImageHeader,
    reduction: int = 1,
    colour: bool = False,
) -> np.ndarray:
    """Decode checked bytes to grey or RGB (a JPEG at 1 / ``reduction`` of its
    size), refusing data the decoder says is corrupt."""
    import cv2

    buffer = np.frombuffer(encoded, np.uint8)
    kind = "COLOR" if colour else "GRAYSCALE"
    flags = getattr(cv2, f"IMREAD_{kind}")
    if reduction > 1:
        flags = getattr(cv2, f"IMREAD_REDUCED_{kind}_{reduction}")
    if header.alpha:
        flags = cv2.IMREAD_UNCHANGED
    try:
        image, messages = decode_with_messages(lambda: cv2.imdecode(buffer, flags))
    except cv2.error as error:
        raise ImageReadError(path, f"OpenCV cannot decode it ({error.err})") from None
    corrupt = [message for message in messages if message.startswith(CORRUPT_DATA)]
    if corrupt:
        raise ImageReadError(
            path, f"corrupt {header.format} data (the decoder says: {corrupt[0]})"
        )
    for message in messages:
        logger.warning("%s: %s", path, message)
    if image is None or image.size == 0:
        raise ImageReadError(path, "not an image that OpenCV can decode")
    if colour:
        return rgb_pixels(image, bgr=True)
    return grey_pixels(image, cv2.COLOR_BGR2GRAY, cv2.COLOR_BGRA2GRAY)
