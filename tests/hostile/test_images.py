"""Hostile image files: corrupt, truncated, empty, mis-named, huge (header-only
fakes), 16-bit, transparent, CMYK, and the folders that hold them.

Each file is either read, and then its grey levels are checked, or refused
with a one-line reason; a folder of all of them is encoded with every bad one
skipped and listed, every good one given a finite row, in order.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from hostile.conftest import assert_valid_vectors, read_json, record, run_vlad
from hostile.makers import (
    PHOTO,
    bmp_of_size,
    encoded,
    jpeg_of_size,
    pillow_image,
    png_of_size,
    scan_start,
    tiff_of_size,
    transparent_png,
    webp_of_size,
    with_jfif_revision,
)
from vlad.images._decoder_messages import capture_decoder_messages
from vlad.images._files import ImageReadError, read_image

GREY = np.ascontiguousarray(PHOTO[:, :, 1])
JPEG = encoded(".jpg")
PNG = encoded(".png", GREY)
SCAN = scan_start(JPEG)
MIDDLE = (SCAN + len(JPEG)) // 2


def _flipped(data: bytes, start: int, length: int) -> bytes:
    return (
        data[:start]
        + bytes(b ^ 0x55 for b in data[start : start + length])
        + data[start + length :]
    )


def _idat_damaged(png: bytes) -> bytes:
    at = png.index(b"IDAT") + 10
    return png[:at] + bytes([png[at] ^ 1]) + png[at + 1 :]


#: File name -> (bytes, reason fragment) of the files that must be refused.
REFUSED = {
    "corrupt.jpg": (_flipped(JPEG, MIDDLE, 200), "corrupt JPEG data"),
    "truncated.jpg": (JPEG[:MIDDLE], "truncated JPEG"),
    "patched-truncated.jpg": (JPEG[:MIDDLE] + b"\xff\xd9", "corrupt JPEG data"),
    "zeroed.jpg": (JPEG[:MIDDLE] + bytes(2000) + JPEG[MIDDLE + 2000 :], "corrupt JPEG"),
    "truncated.png": (PNG[: len(PNG) // 2], "truncated PNG"),
    "damaged.png": (_idat_damaged(PNG), "corrupt PNG data"),
    "empty.png": (b"", "the file is empty"),
    "notes.jpg": (b"this is not a picture\n", "not an image"),
    "animation.png": (b"GIF89a" + bytes(64), "not an image"),
    "huge.jpg": (jpeg_of_size(20000, 20000), "20000 x 20000 pixels is more than"),
    "huge.png": (png_of_size(100000, 100000), "100000 x 100000 pixels is more"),
    "huge.bmp": (bmp_of_size(30000, 30000), "30000 x 30000 pixels is more than"),
    "huge.tif": (tiff_of_size(30000, 30000), "30000 x 30000 pixels is more than"),
    "huge.webp": (webp_of_size(30000, 30000), "30000 x 30000 pixels is more than"),
    "no-size.png": (png_of_size(0, 10), "without a size"),
}


def _pillow(*args, **options) -> bytes:
    pytest.importorskip("PIL")
    return pillow_image(*args, **options)


#: File name -> (bytes maker, expected grey levels: an array, or one value
#: everywhere) of the files that must be read.
READ = {
    "png-named.jpg": (lambda: PNG, GREY),
    "jpeg-named.TIFF": (lambda: encoded(".jpg", GREY, 1, 100), None),
    "deep.png": (lambda: encoded(".png", GREY.astype(np.uint16) * 257), GREY),
    "deep.tif": (lambda: encoded(".tif", GREY.astype(np.uint16) * 257), GREY),
    "transparent.png": (lambda: transparent_png(0), 255),
    "half-transparent.png": (lambda: transparent_png(128), 127),
    "opaque.png": (lambda: transparent_png(255), 0),
    "grey-alpha.png": (lambda: _pillow("LA", "PNG", (0, 0)), 255),
    "palette-transparency.png": (
        lambda: _pillow("P", "PNG", 0, transparency=0),
        255,
    ),
    "transparent.webp": (
        lambda: _pillow("RGBA", "WEBP", (0, 0, 0, 0), lossless=True),
        255,
    ),
    "transparent.tif": (lambda: _pillow("RGBA", "TIFF", (0, 0, 0, 0)), 255),
    "cmyk.jpg": (lambda: _pillow("CMYK", "JPEG", (0, 0, 0, 0)), 255),
    "jfif-revision.jpg": (lambda: with_jfif_revision(JPEG), None),
    "escape\x1b[2J.jpg": (lambda: JPEG, None),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_bad_files_are_refused_with_one_line(tmp_path, name):
    content, reason = REFUSED[name]
    path = tmp_path / name
    path.write_bytes(content)
    # As the command line reads them: the decoders' messages told to vlad.
    with capture_decoder_messages(), pytest.raises(ImageReadError) as error:
        read_image(path)
    assert reason in error.value.reason
    assert "\n" not in str(error.value)
    record("clear error")


@pytest.mark.parametrize("name", ["corrupt.jpg", "patched-truncated.jpg"])
def test_a_library_call_leaves_standard_error_alone(tmp_path, capfd, name):
    """Outside capture_decoder_messages, descriptor 2 is never pointed
    elsewhere: libjpeg's message reaches the real standard error while the
    image decodes, and the image comes back as the decoder filled it in."""
    path = tmp_path / name
    path.write_bytes(REFUSED[name][0])
    before = os.fstat(2)
    capfd.readouterr()
    image = read_image(path)
    after = os.fstat(2)
    assert (before.st_dev, before.st_ino) == (after.st_dev, after.st_ino)
    assert image.shape == GREY.shape
    assert "Corrupt JPEG data" in capfd.readouterr().err
    record("handled")


@pytest.mark.parametrize("name", sorted(READ, key=repr))
def test_unusual_files_are_read_as_they_look(tmp_path, name):
    make, expected = READ[name]
    path = tmp_path / name
    path.write_bytes(make())
    image = read_image(path)
    assert image.dtype == np.uint8 and image.ndim == 2
    if isinstance(expected, np.ndarray):
        np.testing.assert_array_equal(image, expected)
    elif expected is not None:
        assert np.all(image == expected), (image.min(), image.max())
    record("handled")


def test_a_decoders_warning_is_logged_and_hidden_by_quiet(tmp_path, caplog):
    path = tmp_path / "jfif-revision.jpg"
    path.write_bytes(with_jfif_revision(JPEG))
    with capture_decoder_messages():
        read_image(path)
    assert "unknown JFIF revision number" in caplog.text
    result = run_vlad("extract", path, "-o", tmp_path / "d.npz", "-qq")
    assert result.returncode == 0 and result.stderr == ""
    result = run_vlad("extract", path, "-o", tmp_path / "e.npz")
    assert "warning:" in result.stderr and "unknown JFIF revision" in result.stderr
    record("handled")


def test_the_pixel_limit_is_a_parameter(tmp_path):
    path = tmp_path / "wide.png"
    path.write_bytes(PNG)
    assert read_image(path, max_pixels=GREY.size).shape == GREY.shape
    with pytest.raises(ImageReadError, match="more than max_pixels=100 "):
        read_image(path, max_pixels=100)
    with pytest.raises(ValueError, match="max_pixels"):
        read_image(path, max_pixels=-1)
    record("clear error")


@pytest.fixture(scope="module")
def bad_folder(tmp_path_factory):
    """Every case above in one folder, beside the photo itself in a
    sub-folder."""
    folder = tmp_path_factory.mktemp("bad")
    for name, (content, _) in REFUSED.items():
        (folder / name).write_bytes(content)
    for name, (make, _) in READ.items():
        try:
            (folder / name).write_bytes(make())
        except pytest.skip.Exception:
            pass
    (folder / "photos").mkdir()
    (folder / "photos" / "chelsea.jpg").write_bytes(JPEG)
    return folder


def test_a_folder_of_bad_files_is_encoded_skipping_and_listing_them(
    bad_folder, codebook_path, tmp_path
):
    """`vlad encode --max-side 0`: the huge fakes are refused by the pixel
    limit before any decoding, the others skipped or read; every readable
    image has its row, in order, and the report lists the rest."""
    output = tmp_path / "vectors.npy"
    result = run_vlad(
        "encode", bad_folder, "-c", codebook_path, "-o", output, "--max-side", 0, "-v"
    )
    assert result.returncode == 0, result.stderr
    readable = sorted(
        [path.name for path in bad_folder.iterdir() if path.name not in REFUSED]
        + ["photos/chelsea.jpg"],
        key=lambda name: name.split("/"),
    )
    readable.remove("photos")
    report = assert_valid_vectors(output, readable)
    skipped = {item["name"]: item["reason"] for item in report["skipped"]}
    assert sorted(skipped) == sorted(REFUSED)
    for name, (_, reason) in REFUSED.items():
        assert reason in skipped[name]
        assert f"skipped {name}: " in result.stderr
    assert "\x1b" not in result.stderr and "escape\\x1b[2J.jpg" in result.stderr
    vectors = np.load(output)
    for name in report["empty"]:
        assert not vectors[readable.index(name)].any()
    assert read_json(output.with_suffix(".json"))["n_skipped"] == len(REFUSED)
    record("skipped and reported", len(REFUSED))
    record("handled", len(readable))
