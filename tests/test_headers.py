"""What image headers declare, read before decoding: vlad.images._headers,
against what OpenCV decodes."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from vlad.images._headers import read_header, truncated_format

FORMATS = {
    ".jpg": "JPEG",
    ".png": "PNG",
    ".bmp": "BMP",
    ".tif": "TIFF",
    ".webp": "WebP",
}


@given(
    extension=st.sampled_from(sorted(FORMATS)),
    height=st.integers(1, 70),
    width=st.integers(1, 70),
    channels=st.sampled_from([1, 3, 4]),
    seed=st.integers(0, 2**16),
)
def test_the_header_declares_what_opencv_decodes(
    extension, height, width, channels, seed
):
    image = np.random.default_rng(seed).integers(
        0, 256, (height, width, channels), dtype=np.uint8
    )
    ok, encoded = cv2.imencode(extension, image)
    assert ok
    header = read_header(encoded.tobytes())
    decoded = cv2.imdecode(encoded, cv2.IMREAD_UNCHANGED)
    assert header.format == FORMATS[extension]
    assert (header.height, header.width) == decoded.shape[:2]
    # Whenever OpenCV decodes an alpha channel, the header says there may be one.
    if decoded.ndim == 3 and decoded.shape[2] == 4:
        assert header.alpha
    assert truncated_format(encoded.tobytes()) is None


@pytest.mark.parametrize(
    "content",
    [b"", b"GIF89a", b"\xff\xd8", b"\x89PNG\r\n\x1a\n", b"BM", b"II*\x00", b"RIFF"],
)
def test_short_or_foreign_bytes_are_not_an_image(content):
    with pytest.raises(ValueError, match="not an image"):
        read_header(content + bytes(4))


def test_a_size_of_zero_is_refused():
    ok, encoded = cv2.imencode(".png", np.zeros((4, 4), np.uint8))
    png = bytearray(encoded.tobytes())
    png[16:20] = bytes(4)
    with pytest.raises(ValueError, match="without a size"):
        read_header(bytes(png))
