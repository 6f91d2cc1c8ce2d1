"""Image files: finding them in folders and reading them as grey-level arrays."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np

__all__ = [
    "IMAGE_EXTENSIONS",
    "ImageFile",
    "ImageReadError",
    "as_grey_image",
    "find_images",
    "is_image_path",
    "read_image",
]

#: File name endings read as images, compared in lower case.
IMAGE_EXTENSIONS = (".bmp", ".jpeg", ".jpg", ".png", ".tif", ".tiff", ".webp")

_JPEG_START = b"\xff\xd8"
_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


class ImageFile(NamedTuple):
    """An image file and the name it goes by in outputs."""

    path: Path
    name: str


class ImageReadError(ValueError):
    """An image file that cannot be decoded: unreadable, truncated or not an image.

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

    Folders are walked recursively and their images sorted by relative path;
    files other than images (by extension, see :data:`IMAGE_EXTENSIONS`) are
    ignored there. Inputs keep the order given; a file met twice is kept once.

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
    ValueError
        No inputs, an input file that is not an image, or no images at all.

    Examples
    --------
    >>> import vlad.images.files
    >>> [image.name for image in vlad.images.files.find_images("data")][:2]
    ['astronaut.jpg', 'brick.jpg']
    """
    if isinstance(inputs, (str, os.PathLike)):
        inputs = [inputs]
    if len(inputs) == 0:
        raise ValueError("inputs must name at least one folder or image file; got none")
    images: list[ImageFile] = []
    seen: set[Path] = set()
    for given in inputs:
        root = Path(given)
        if root.is_dir():
            found = _images_under(root)
        elif root.is_file():
            if not is_image_path(root):
                raise ValueError(
                    f"{root} is not an image file; expected one ending in "
                    f"{', '.join(IMAGE_EXTENSIONS)}"
                )
            found = [(root, root.name)]
        else:
            raise FileNotFoundError(f"no such file or folder: {root}")
        for path, relative_name in found:
            key = path.resolve()
            if key in seen:
                continue
            seen.add(key)
            if len(inputs) == 1:
                name = relative_name
            elif root.is_dir():
                name = (root / relative_name).as_posix()
            else:
                name = root.as_posix()
            images.append(ImageFile(path, name))
    if not images:
        shown = ", ".join(str(given) for given in inputs)
        raise ValueError(
            f"no images in {shown}: expected files ending in "
            f"{', '.join(IMAGE_EXTENSIONS)} (any case)"
        )
    return images


def _images_under(root: Path) -> list[tuple[Path, str]]:
    """``(path, name relative to root)`` of every image below ``root``, sorted."""
    found = []
    for folder, subfolders, files in os.walk(root):
        subfolders.sort()
        for file_name in files:
            if is_image_path(file_name):
                path = Path(folder, file_name)
                found.append((path, path.relative_to(root).as_posix()))
    found.sort(key=lambda item: item[1].split("/"))
    return found


def read_image(path: str | os.PathLike) -> np.ndarray:
    """Decode an image file into a grey-level ``uint8`` array.

    The bytes are read in Python and decoded from memory with OpenCV, so any
    path the file system accepts works. Colour images are converted to grey
    and EXIF orientation is applied; 16-bit images are scaled to 8 bits.

    Parameters
    ----------
    path : path-like

    Returns
    -------
    image : ndarray of uint8 of shape (height, width)

    Raises
    ------
    ImageReadError
        The file cannot be opened, is empty, is a truncated JPEG or PNG, or is
        not an image OpenCV can decode. Its message is one line naming the file.
    """
    import cv2

    try:
        encoded = Path(path).read_bytes()
    except OSError as error:
        raise ImageReadError(path, error.strerror or str(error)) from None
    if not encoded:
        raise ImageReadError(path, "the file is empty")
    truncated = _truncated_format(encoded)
    if truncated:
        raise ImageReadError(path, f"truncated {truncated} (the file ends too early)")
    try:
        image = cv2.imdecode(np.frombuffer(encoded, np.uint8), cv2.IMREAD_GRAYSCALE)
    except cv2.error as error:
        raise ImageReadError(path, f"OpenCV cannot decode it ({error.err})") from None
    if image is None or image.size == 0:
        raise ImageReadError(path, "not an image that OpenCV can decode")
    return image


def _truncated_format(encoded: bytes) -> str | None:
    """``"JPEG"`` or ``"PNG"`` when ``encoded`` is one cut short, else None.

    Some OpenCV versions decode a truncated JPEG without complaint, filling the
    missing part with grey; these structural checks catch that before decoding.
    """
    if encoded.startswith(_JPEG_START) and not _jpeg_is_complete(encoded):
        return "JPEG"
    if encoded.startswith(_PNG_SIGNATURE) and not _png_is_complete(encoded):
        return "PNG"
    return None


def _jpeg_is_complete(encoded: bytes) -> bool:
    """Whether a JPEG stream reaches its end-of-image marker.

    Walks the marker segments (each carries its length) and the entropy-coded
    data after each start-of-scan, where ``0xFF`` is only followed by ``0x00``
    stuffing, restart markers or fill bytes, until the end-of-image marker. Data
    after it (padding, an appended video) does not matter.
    """
    size = len(encoded)
    position = len(_JPEG_START)
    while True:
        position = encoded.find(b"\xff", position)
        if position < 0 or position + 1 >= size:
            return False
        marker = encoded[position + 1]
        if marker == 0xFF:
            position += 1
        elif marker == 0xD9:
            return True
        elif marker == 0x01 or 0xD0 <= marker <= 0xD7:
            position += 2
        else:
            if position + 4 > size:
                return False
            position += 2 + int.from_bytes(encoded[position + 2 : position + 4], "big")
            if marker == 0xDA:
                position = _end_of_scan(encoded, position)
                if position < 0:
                    return False


def _end_of_scan(encoded: bytes, position: int) -> int:
    """Position of the marker that ends the entropy-coded data at ``position``,
    or -1 when the data runs to the end of the file."""
    size = len(encoded)
    while True:
        position = encoded.find(b"\xff", position)
        if position < 0 or position + 1 >= size:
            return -1
        following = encoded[position + 1]
        if following == 0x00 or 0xD0 <= following <= 0xD7:
            position += 2
        elif following == 0xFF:
            position += 1
        else:
            return position


def _png_is_complete(encoded: bytes) -> bool:
    """Whether a PNG stream's chunks run whole up to its ``IEND`` chunk."""
    position = len(_PNG_SIGNATURE)
    while position + 8 <= len(encoded):
        length = int.from_bytes(encoded[position : position + 4], "big")
        kind = encoded[position + 4 : position + 8]
        position += 12 + length
        if kind == b"IEND":
            return position <= len(encoded)
    return False


def as_grey_image(image) -> np.ndarray:
    """Return an image array as a grey-level ``uint8`` array for OpenCV.

    Parameters
    ----------
    image : array-like of shape (height, width) or (height, width, channels)
        Grey, RGB or RGBA (the channel order of Pillow, imageio and
        scikit-image), with 1, 3 or 4 channels; ``uint8``, ``uint16`` (scaled
        to 8 bits), ``bool`` or floating point in [0, 1].

    Returns
    -------
    image : ndarray of uint8 of shape (height, width)

    Raises
    ------
    TypeError
        An unsupported dtype.
    ValueError
        An unsupported shape, or floating-point values that are NaN or outside
        [0, 1].

    Examples
    --------
    >>> import numpy as np
    >>> import vlad.images.files
    >>> vlad.images.files.as_grey_image(np.array([[0.0, 1.0]])).tolist()
    [[0, 255]]
    """
    import cv2

    array = np.asarray(image)
    if array.ndim == 3 and array.shape[2] == 1:
        array = array[:, :, 0]
    if array.ndim not in (2, 3) or (array.ndim == 3 and array.shape[2] not in (3, 4)):
        raise ValueError(
            "image must have shape (height, width) or (height, width, 3 or 4); "
            f"got shape {array.shape}"
        )
    if array.shape[0] == 0 or array.shape[1] == 0:
        raise ValueError(f"image must have at least one pixel; got shape {array.shape}")
    if array.dtype == np.uint16:
        array = (array // 257).astype(np.uint8)
    elif array.dtype == np.bool_:
        array = array.astype(np.uint8) * 255
    elif array.dtype.kind == "f":
        low, high = np.min(array), np.max(array)
        if not (low >= 0.0 and high <= 1.0):
            raise ValueError(
                "a floating-point image must hold values in [0, 1]; "
                f"got values from {low} to {high}"
            )
        array = np.rint(array * 255.0).astype(np.uint8)
    elif array.dtype != np.uint8:
        raise TypeError(
            "image must be uint8, uint16, bool or floating point in [0, 1]; "
            f"got dtype {array.dtype}"
        )
    if array.ndim == 3:
        conversion = cv2.COLOR_RGB2GRAY if array.shape[2] == 3 else cv2.COLOR_RGBA2GRAY
        array = cv2.cvtColor(np.ascontiguousarray(array), conversion)
    return np.ascontiguousarray(array)
