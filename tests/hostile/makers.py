"""Hostile inputs, made on the spot: image files of every kind of wrong, and
NumPy files that lie, hold pickles or bombs.

Huge images are header-only fakes: a small real image whose header is
patched to declare 20000 x 20000 pixels (or more), so that nothing large is
ever written or decoded; or a real PNG of zeros (:func:`png_of_zeros`), a
megabyte or two that decodes to gigabytes.
"""

from __future__ import annotations

import io
import os
import pickle
import struct
import zipfile
import zlib
from pathlib import Path

import cv2
import numpy as np
from photos import DATA

#: The bundled photo the image cases start from, grey and small.
PHOTO = cv2.resize(cv2.imread(str(DATA / "chelsea.jpg")), (160, 106))


def encoded(extension: str, image: np.ndarray = PHOTO, *params) -> bytes:
    """``image`` encoded by OpenCV in the format of ``extension``."""
    ok, data = cv2.imencode(extension, image, list(params))
    assert ok
    return data.tobytes()


def scan_start(jpeg: bytes) -> int:
    """Where a JPEG's entropy-coded data starts (after its start-of-scan)."""
    sos = jpeg.index(b"\xff\xda")
    return sos + 2 + int.from_bytes(jpeg[sos + 2 : sos + 4], "big")


def jpeg_of_size(width: int, height: int) -> bytes:
    """A small JPEG whose start-of-frame declares ``width`` x ``height``."""
    jpeg = bytearray(encoded(".jpg"))
    frame = jpeg.index(b"\xff\xc0")
    jpeg[frame + 5 : frame + 9] = struct.pack(">HH", height, width)
    return bytes(jpeg)


def png_of_size(width: int, height: int) -> bytes:
    """A small PNG whose ``IHDR`` declares ``width`` x ``height``."""
    png = bytearray(encoded(".png"))
    png[16:24] = struct.pack(">II", width, height)
    return bytes(png)


def png_of_zeros(
    width: int, height: int, bit_depth: int = 16, colour_type: int = 6
) -> bytes:
    """A valid PNG of ``width`` x ``height`` black, transparent pixels (16-bit
    RGBA by default) whose data is compressed about 1000 to 1: decoding it
    whole takes what its header declares, writing it takes a few milliseconds.

    Each row is compressed once and repeated, every copy after a full flush
    (so that it refers to no earlier byte); the Adler-32 of n zero bytes is
    ``(n % 65521) << 16 | 1``.
    """
    channels = {0: 1, 2: 3, 4: 2, 6: 4}[colour_type]
    row = bytes(1 + width * channels * bit_depth // 8)  # filter byte 0, then zeros
    deflate = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = deflate.compress(row) + deflate.flush(zlib.Z_FULL_FLUSH)
    n_bytes = len(row) * height
    stream = (
        b"\x78\xda"
        + block * height
        + deflate.flush()
        + struct.pack(">I", ((n_bytes % 65521) << 16) | 1)
    )
    header = struct.pack(">IIBBBBB", width, height, bit_depth, colour_type, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + _png_chunk(b"IHDR", header)
        + _png_chunk(b"IDAT", stream)
        + _png_chunk(b"IEND", b"")
    )


def _png_chunk(kind: bytes, content: bytes) -> bytes:
    return (
        struct.pack(">I", len(content))
        + kind
        + content
        + struct.pack(">I", zlib.crc32(kind + content))
    )


def bmp_of_size(width: int, height: int) -> bytes:
    """A small BMP whose header declares ``width`` x ``height`` (top-down)."""
    bmp = bytearray(encoded(".bmp"))
    bmp[18:26] = struct.pack("<ii", width, -height)
    return bytes(bmp)


def tiff_of_size(width: int, height: int) -> bytes:
    """A minimal little-endian TIFF whose directory declares ``width`` x
    ``height`` (one strip of a few bytes: never decodable whole)."""
    entries = [
        (256, 4, 1, width),  # ImageWidth, LONG
        (257, 4, 1, height),  # ImageLength
        (258, 3, 1, 8),  # BitsPerSample
        (259, 3, 1, 1),  # no compression
        (262, 3, 1, 1),  # black is zero
        (273, 4, 1, 8 + 2 + 12 * 9 + 4),  # StripOffsets: after the directory
        (277, 3, 1, 1),  # SamplesPerPixel
        (278, 4, 1, height),  # RowsPerStrip
        (279, 4, 1, 16),  # StripByteCounts
    ]
    directory = struct.pack("<H", len(entries)) + b"".join(
        struct.pack("<HHII", *entry) for entry in entries
    )
    return b"II*\x00" + struct.pack("<I", 8) + directory + bytes(4) + bytes(16)


def webp_of_size(width: int, height: int) -> bytes:
    """An extended (``VP8X``) WebP header declaring ``width`` x ``height``."""
    vp8x = b"VP8X" + struct.pack("<I", 10) + bytes(4)
    vp8x += (width - 1).to_bytes(3, "little") + (height - 1).to_bytes(3, "little")
    return b"RIFF" + struct.pack("<I", 4 + len(vp8x)) + b"WEBP" + vp8x


def pillow_image(mode: str, extension: str, colour, **options) -> bytes:
    """A 64 x 48 image of one ``colour`` made by Pillow (which OpenCV cannot
    write: grey + alpha, palette transparency, CMYK)."""
    from PIL import Image

    buffer = io.BytesIO()
    Image.new(mode, (64, 48), colour).save(buffer, extension, **options)
    return buffer.getvalue()


def transparent_png(alpha: int, colour=(0, 0, 0)) -> bytes:
    """An RGBA PNG of one colour with one alpha everywhere (OpenCV's BGRA)."""
    image = np.zeros((48, 64, 4), np.uint8)
    image[:, :, :3] = colour[::-1]
    image[:, :, 3] = alpha
    return encoded(".png", image)


def with_jfif_revision(jpeg: bytes, major: int = 3) -> bytes:
    """``jpeg`` whose JFIF segment claims revision ``major``.xx: libjpeg
    warns and decodes it as usual."""
    patched = bytearray(jpeg)
    patched[patched.index(b"JFIF\x00") + 5] = major
    return bytes(patched)


class MarkerPickle:
    """Unpickling this creates the folder ``path``: the sign that something
    was unpickled."""

    def __init__(self, path: Path):
        self.path = str(path)

    def __reduce__(self):
        return os.mkdir, (self.path,)


def pickle_npy(path: Path, marker: Path) -> Path:
    """An ``.npy`` of one object whose unpickling would create ``marker``."""
    array = np.empty(1, dtype=object)
    array[0] = MarkerPickle(marker)
    np.save(path, array, allow_pickle=True)
    return path


def pickle_npz(path: Path, marker: Path, member: str, **others) -> Path:
    """An ``.npz`` whose ``member`` is such an object array."""
    array = np.empty(1, dtype=object)
    array[0] = MarkerPickle(marker)
    np.savez(path, **{member: array}, **others)
    return path


def raw_pickle(path: Path, marker: Path) -> Path:
    """A plain pickle (any name) that would create ``marker``."""
    path.write_bytes(pickle.dumps(MarkerPickle(marker), protocol=4))
    return path


def npy_header_claiming(path: Path, shape: tuple, dtype: str = "<f4") -> Path:
    """An ``.npy`` of 64 KB whose header promises an array of ``shape``."""
    with open(path, "wb") as handle:
        header = {"descr": dtype, "fortran_order": False, "shape": shape}
        np.lib.format.write_array_header_1_0(handle, header)
        handle.write(bytes(1 << 16))
    return path


def npz_with_lying_member(path: Path, name: str, shape: tuple, **others) -> Path:
    """An ``.npz`` whose member ``name`` has a header promising ``shape`` of
    float32 but holds 64 bytes of data."""
    member = io.BytesIO()
    header = {"descr": "<f4", "fortran_order": False, "shape": shape}
    np.lib.format.write_array_header_1_0(member, header)
    member.write(bytes(64))
    np.savez(path, **others)
    with zipfile.ZipFile(path, "a") as archive:
        archive.writestr(f"{name}.npy", member.getvalue())
    return path


def zip_bomb_npz(path: Path, name: str, n_bytes: int, **others) -> Path:
    """An ``.npz`` whose member ``name`` is ``n_bytes`` of float32 zeros,
    deflated: a few hundred KB on disk, ``n_bytes`` once read."""
    np.savez(path, **others)
    header = io.BytesIO()
    n_values = n_bytes // 4
    np.lib.format.write_array_header_1_0(
        header,
        {"descr": "<f4", "fortran_order": False, "shape": (n_values // 128, 128)},
    )
    with zipfile.ZipFile(path, "a", compression=zipfile.ZIP_DEFLATED) as archive:
        with archive.open(f"{name}.npy", "w", force_zip64=True) as member:
            member.write(header.getvalue())
            zeros = bytes(1 << 22)
            for _ in range(n_values * 4 // len(zeros)):
                member.write(zeros)
    return path


def record_archive(path: Path, metadata, **arrays) -> Path:
    """An ``.npz`` with a ``metadata`` member of any content (a JSON string
    or not) beside ``arrays``."""
    record = metadata if isinstance(metadata, np.ndarray) else np.array(metadata)
    np.savez(path, metadata=record, **arrays)
    return path


def deep_json(depth: int) -> str:
    """JSON nested ``depth`` lists deep (Python's parser gives up long before
    100000)."""
    return "[" * depth + "]" * depth


def crc_fixed_png(png: bytes) -> bytes:
    """``png`` with every chunk's CRC recomputed (after patching a chunk)."""
    out = bytearray(png[:8])
    position = 8
    while position + 8 <= len(png):
        length = int.from_bytes(png[position : position + 4], "big")
        chunk = png[position + 4 : position + 8 + length]
        out += png[position : position + 4] + chunk
        out += zlib.crc32(chunk).to_bytes(4, "big")
        position += 12 + length
    return bytes(out)
