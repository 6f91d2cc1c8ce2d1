"""What an image file's bytes say before it is decoded: its format, its size
in pixels, whether it may be transparent, and whether it is complete.

Decoding allocates what the header promises (a 20000 x 20000 JPEG of a few
kilobytes asks for gigabytes), so the size is read here first and an image
over the pixel limit is refused before any decoder runs. Only the formats of
:data:`vlad.images._files.IMAGE_EXTENSIONS` are read: JPEG, PNG, BMP, TIFF and
WebP, told by their bytes, not their names.
"""

from __future__ import annotations

from typing import NamedTuple

from vlad.errors import VladError

__all__ = ["FORMATS", "ImageHeader", "read_header", "truncated_format"]

#: The formats whose headers :func:`read_header` reads.
FORMATS = ("JPEG", "PNG", "BMP", "TIFF", "WebP")

_JPEG_START = b"\xff\xd8"
_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_TIFF_STARTS = (b"II*\x00", b"MM\x00*", b"II+\x00", b"MM\x00+")
#: Start-of-frame markers (SOF0-SOF15 less DHT, JPG and DAC): they carry the size.
_JPEG_FRAMES = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}
#: TIFF tags: image width, image length, photometric interpretation, samples
#: per pixel.
_TIFF_WIDTH, _TIFF_HEIGHT, _TIFF_PHOTOMETRIC, _TIFF_SAMPLES = 256, 257, 262, 277
#: Colour channels of each TIFF photometric interpretation (white or black is
#: zero, RGB, palette, mask, CMYK, YCbCr): samples beyond them are extra,
#: which OpenCV decodes as alpha.
_TIFF_COLOURS = {0: 1, 1: 1, 2: 3, 3: 1, 4: 1, 5: 4, 6: 3}
#: Bytes of the TIFF field types (BYTE, ASCII, SHORT, LONG, RATIONAL, ...).
_TIFF_TYPE_SIZES = {1: 1, 2: 1, 3: 2, 4: 4, 5: 8, 6: 1, 7: 1, 8: 2, 9: 4, 10: 8}
_TIFF_TYPE_SIZES.update({11: 4, 12: 8, 16: 8, 17: 8, 18: 8})


class ImageHeader(NamedTuple):
    """An image file's format, size and whether it may have transparency
    (decoded with its alpha channel, composited if OpenCV returns one)."""

    format: str
    width: int
    height: int
    alpha: bool

    @property
    def n_pixels(self) -> int:
        """Width times height."""
        return self.width * self.height


def read_header(encoded: bytes) -> ImageHeader:
    """The format, size and transparency an image file's header declares.

    Parameters
    ----------
    encoded : bytes
        The whole file.

    Returns
    -------
    ImageHeader

    Raises
    ------
    ValueError
        Bytes of no format in :data:`FORMATS`, or a header without a size;
        the message is the reason, in a few words.

    Examples
    --------
    >>> from pathlib import Path
    >>> from vlad.images._headers import read_header
    >>> read_header(Path("data/chelsea.jpg").read_bytes())
    ImageHeader(format='JPEG', width=451, height=300, alpha=False)
    """
    try:
        header = _read_header(encoded)
    except IndexError:  # a field past the end of the bytes
        header = None
    if header is None:
        raise VladError(
            f"not an image: not a {', '.join(FORMATS[:-1])} or {FORMATS[-1]} file"
        )
    if header.width < 1 or header.height < 1:
        raise VladError(
            f"a {header.format} header without a size "
            f"({header.width} x {header.height} pixels)"
        )
    return header


def _read_header(encoded: bytes) -> ImageHeader | None:
    if encoded.startswith(_JPEG_START):
        return _jpeg_header(encoded)
    if encoded.startswith(_PNG_SIGNATURE):
        return _png_header(encoded)
    if encoded.startswith(b"BM"):
        return _bmp_header(encoded)
    if encoded[:4] in _TIFF_STARTS:
        return _tiff_header(encoded)
    if encoded.startswith(b"RIFF") and encoded[8:12] == b"WEBP":
        return _webp_header(encoded)
    return None


def _jpeg_header(encoded: bytes) -> ImageHeader | None:
    """The size in the first start-of-frame segment, walking the segments
    (and, as libjpeg does, over stray bytes between them)."""
    position = len(_JPEG_START)
    while True:
        position = encoded.find(b"\xff", position)
        if position < 0 or position + 4 > len(encoded):
            return None
        marker = encoded[position + 1]
        if marker == 0xFF or marker == 0x00:  # fill byte, or a stray 0xFF
            position += 1
        elif marker == 0x01 or 0xD0 <= marker <= 0xD8:  # no length
            position += 2
        elif marker in (0xD9, 0xDA):  # end of image or start of scan: no frame
            return None
        elif marker in _JPEG_FRAMES:
            if position + 9 > len(encoded):
                return None
            height = int.from_bytes(encoded[position + 5 : position + 7], "big")
            width = int.from_bytes(encoded[position + 7 : position + 9], "big")
            return ImageHeader("JPEG", width, height, False)
        else:
            length = int.from_bytes(encoded[position + 2 : position + 4], "big")
            position += 2 + length


def _png_header(encoded: bytes) -> ImageHeader | None:
    """The size in ``IHDR``; transparency from its colour type or a ``tRNS``
    chunk before the image data."""
    position = len(_PNG_SIGNATURE)
    if encoded[position + 4 : position + 8] != b"IHDR":
        return None
    width = int.from_bytes(encoded[position + 8 : position + 12], "big")
    height = int.from_bytes(encoded[position + 12 : position + 16], "big")
    alpha = encoded[position + 17] in (4, 6)  # grey + alpha, RGBA
    while not alpha and position + 8 <= len(encoded):
        kind = encoded[position + 4 : position + 8]
        if kind in (b"IDAT", b"IEND"):
            break
        alpha = kind == b"tRNS"
        position += 12 + int.from_bytes(encoded[position : position + 4], "big")
    return ImageHeader("PNG", width, height, alpha)


def _bmp_header(encoded: bytes) -> ImageHeader | None:
    """The size in the bitmap header (OS/2's 12-byte one or Windows'); a
    32-bit bitmap may carry alpha (OpenCV decodes it when its masks say so)."""
    if len(encoded) < 30:
        return None
    if int.from_bytes(encoded[14:18], "little") == 12:
        width = int.from_bytes(encoded[18:20], "little")
        height = int.from_bytes(encoded[20:22], "little")
        bits = int.from_bytes(encoded[24:26], "little")
    else:
        width = int.from_bytes(encoded[18:22], "little", signed=True)
        # A negative height is a top-down bitmap.
        height = abs(int.from_bytes(encoded[22:26], "little", signed=True))
        bits = int.from_bytes(encoded[28:30], "little")
    return ImageHeader("BMP", width, height, bits == 32)


def _tiff_header(encoded: bytes) -> ImageHeader | None:
    """The size, and whether there are samples beyond the colour ones (alpha),
    in the first image file directory, classic or BigTIFF."""
    order = "little" if encoded[:2] == b"II" else "big"
    big = encoded[2:4] in (b"+\x00", b"\x00+")

    def number(start: int, size: int) -> int:
        if start + size > len(encoded):
            raise IndexError(start)
        return int.from_bytes(encoded[start : start + size], order)

    offset_size, count_size, entry_size = (8, 8, 20) if big else (4, 2, 12)
    directory = number(8 if big else 4, offset_size)
    n_entries = number(directory, count_size)
    fields = {}
    for index in range(n_entries):
        entry = directory + count_size + index * entry_size
        tag, kind = number(entry, 2), number(entry + 2, 2)
        count = number(entry + 4, offset_size)
        value_at = entry + 4 + offset_size
        size = _TIFF_TYPE_SIZES.get(kind, 1)
        if size * count > offset_size:  # the value lies elsewhere
            value_at = number(value_at, offset_size)
        if tag in (_TIFF_WIDTH, _TIFF_HEIGHT, _TIFF_PHOTOMETRIC, _TIFF_SAMPLES):
            fields[tag] = number(value_at, size) if count else 0
    if _TIFF_WIDTH not in fields or _TIFF_HEIGHT not in fields:
        return None
    colours = _TIFF_COLOURS.get(fields.get(_TIFF_PHOTOMETRIC, 1), 4)
    alpha = fields.get(_TIFF_SAMPLES, 1) > colours
    return ImageHeader("TIFF", fields[_TIFF_WIDTH], fields[_TIFF_HEIGHT], alpha)


def _webp_header(encoded: bytes) -> ImageHeader | None:
    """The size in the first chunk: lossy (``VP8 ``), lossless (``VP8L``) or
    extended (``VP8X``, whose flags say whether there is alpha)."""
    chunk = encoded[12:16]
    if chunk == b"VP8 " and encoded[23:26] == b"\x9d\x01\x2a":
        width = int.from_bytes(encoded[26:28], "little") & 0x3FFF
        height = int.from_bytes(encoded[28:30], "little") & 0x3FFF
        return ImageHeader("WebP", width, height, False)
    if chunk == b"VP8L" and encoded[20] == 0x2F:
        bits = int.from_bytes(encoded[21:25], "little")
        width, height = (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
        return ImageHeader("WebP", width, height, bool(bits >> 28 & 1))
    if chunk == b"VP8X":
        width = int.from_bytes(encoded[24:27], "little") + 1
        height = int.from_bytes(encoded[27:30], "little") + 1
        return ImageHeader("WebP", width, height, bool(encoded[20] & 0x10))
    return None


def truncated_format(encoded: bytes) -> str | None:
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
