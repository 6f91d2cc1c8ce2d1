"""Finding image files and reading them: vlad.images._files."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
from photos import DATA, PHOTOS

from vlad.images import IMAGE_EXTENSIONS
from vlad.images._files import (
    ImageReadError,
    find_images,
    read_image,
)
from vlad.images._headers import truncated_format
from vlad.images._pixels import as_grey_image, as_rgb_image


def touch_image(path, value=0):
    path.parent.mkdir(parents=True, exist_ok=True)
    cv2.imwrite(str(path), np.full((8, 8), value, np.uint8))


def test_find_images_walks_folders_recursively_in_sorted_order(tmp_path):
    for name in ["b.png", "a/z.jpg", "a/b/c.BMP", "A.TIFF", "c.WebP", "d.jpeg"]:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(b"x")
    (tmp_path / "notes.txt").write_text("ignored")
    (tmp_path / "folder.jpg").mkdir()
    names = [image.name for image in find_images(tmp_path)]
    assert names == ["A.TIFF", "a/b/c.BMP", "a/z.jpg", "b.png", "c.WebP", "d.jpeg"]
    assert all(image.path.is_file() for image in find_images(tmp_path))


@pytest.mark.parametrize("extension", IMAGE_EXTENSIONS)
def test_every_extension_is_found_in_any_case(tmp_path, extension):
    (tmp_path / f"lower{extension}").write_bytes(b"x")
    (tmp_path / f"upper{extension.upper()}").write_bytes(b"x")
    assert len(find_images(tmp_path)) == 2


def test_files_of_other_extensions_are_not_images(tmp_path):
    for extension in (".gif", ".jp2", ".heic", ".svg", ".jpg.txt", ""):
        (tmp_path / f"file{extension}").write_bytes(b"x")
    (tmp_path / "image.PNG").write_bytes(b"x")
    assert [image.name for image in find_images(tmp_path)] == ["image.PNG"]


def test_names_of_several_inputs_keep_the_input_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    touch_image(tmp_path / "first" / "x.png")
    touch_image(tmp_path / "second" / "x.png")
    touch_image(tmp_path / "single.png")
    images = find_images(["second", "first", "single.png", "first/x.png"])
    assert [image.name for image in images] == [
        "second/x.png",
        "first/x.png",
        "single.png",
    ]


def test_a_single_file_is_named_by_its_file_name():
    [image] = find_images(DATA / "rocket.jpg")
    assert image.name == "rocket.jpg"


def test_bundled_photos_are_found():
    assert [image.name for image in find_images(DATA)] == PHOTOS


def test_missing_input_is_an_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such file or folder"):
        find_images(tmp_path / "missing")


def test_folder_without_images_is_an_error(tmp_path):
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(ValueError, match="no images in"):
        find_images(tmp_path)


def test_a_file_that_is_not_an_image_by_name_is_an_error(tmp_path):
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(ValueError, match="not an image file"):
        find_images(tmp_path / "notes.txt")


def test_no_inputs_is_an_error():
    with pytest.raises(ValueError, match="at least one"):
        find_images([])


@pytest.mark.parametrize("name", PHOTOS)
def test_read_image_gives_what_opencv_imread_gives_in_grey(name):
    image = read_image(DATA / name)
    assert image.dtype == np.uint8 and image.ndim == 2
    expected = cv2.imread(str(DATA / name), cv2.IMREAD_GRAYSCALE)
    np.testing.assert_array_equal(image, expected)


def test_read_image_reads_16_bit_png(tmp_path):
    cv2.imwrite(str(tmp_path / "deep.png"), np.full((4, 4), 65535, np.uint16))
    assert read_image(tmp_path / "deep.png").max() == 255


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"", "the file is empty"),
        (
            b"plain text, not an image\n",
            "not an image: not a JPEG, PNG, BMP, TIFF or WebP file",
        ),
    ],
)
def test_unreadable_files_give_one_line_errors(tmp_path, content, reason):
    path = tmp_path / "bad.jpg"
    path.write_bytes(content)
    with pytest.raises(ImageReadError) as error:
        read_image(path)
    assert error.value.reason == reason
    assert str(error.value) == f"cannot read {path}: {reason}"


def test_a_folder_is_not_readable(tmp_path):
    with pytest.raises(ImageReadError, match="cannot read"):
        read_image(tmp_path)


@pytest.mark.parametrize("progressive", [False, True])
@pytest.mark.parametrize("kept", [0.1, 0.5, 0.9, 0.999])
def test_truncated_jpegs_are_refused(tmp_path, progressive, kept):
    image = cv2.imread(str(DATA / "astronaut.jpg"))
    ok, encoded = cv2.imencode(
        ".jpg", image, [cv2.IMWRITE_JPEG_PROGRESSIVE, int(progressive)]
    )
    encoded = encoded.tobytes()
    assert truncated_format(encoded) is None
    cut = encoded[: int(len(encoded) * kept)]
    assert truncated_format(cut) == "JPEG"
    path = tmp_path / "cut.jpg"
    path.write_bytes(cut)
    with pytest.raises(ImageReadError, match="truncated JPEG"):
        read_image(path)


def test_data_after_the_end_of_a_jpeg_is_accepted(tmp_path):
    encoded = (DATA / "rocket.jpg").read_bytes()
    path = tmp_path / "padded.jpg"
    path.write_bytes(encoded + b"\xff\xda\x00\x08 appended data, like a video")
    np.testing.assert_array_equal(read_image(path), read_image(DATA / "rocket.jpg"))


def test_truncated_png_is_refused(tmp_path):
    encoded = (DATA / "camera.png").read_bytes()
    path = tmp_path / "cut.png"
    path.write_bytes(encoded[:-20])
    with pytest.raises(ImageReadError, match="truncated PNG"):
        read_image(path)


def test_as_grey_image_converts_rgb_like_opencv():
    bgr = cv2.imread(str(DATA / "coffee.jpg"))
    rgb = bgr[:, :, ::-1]
    expected = cv2.cvtColor(bgr, cv2.COLOR_BGR2GRAY)
    np.testing.assert_array_equal(as_grey_image(rgb), expected)
    rgba = np.dstack([rgb, np.full(rgb.shape[:2], 255, np.uint8)])
    np.testing.assert_array_equal(as_grey_image(rgba), expected)


@pytest.mark.parametrize(
    ("image", "expected"),
    [
        (np.array([[0.0, 0.5, 1.0]]), [[0, 128, 255]]),
        (np.array([[0, 65535]], dtype=np.uint16), [[0, 255]]),
        (np.array([[False, True]]), [[0, 255]]),
        (np.array([[[7], [9]]], dtype=np.uint8), [[7, 9]]),
    ],
)
def test_as_grey_image_scales_to_uint8(image, expected):
    grey = as_grey_image(image)
    assert grey.dtype == np.uint8
    assert grey.tolist() == expected


@pytest.mark.parametrize(
    ("image", "error", "message"),
    [
        (np.zeros((4, 4), dtype=np.int64), TypeError, "got dtype int64"),
        (np.zeros((4, 4, 2), dtype=np.uint8), ValueError, "got shape"),
        (np.zeros(4, dtype=np.uint8), ValueError, "got shape"),
        (np.zeros((0, 4), dtype=np.uint8), ValueError, "at least one pixel"),
        (np.array([[0.0, 2.0]]), ValueError, "values from 0.0 to 2.0"),
        (np.array([[0.0, np.nan]]), ValueError, r"in \[0, 1\]"),
    ],
)
def test_as_grey_image_rejects_what_it_cannot_convert(image, error, message):
    with pytest.raises(error, match=message):
        as_grey_image(image)


def with_exif_orientation(jpeg: bytes, orientation: int) -> bytes:
    """``jpeg`` with an EXIF segment holding only an orientation tag."""
    tiff = (
        b"MM\x00\x2a\x00\x00\x00\x08"  # big-endian TIFF header, first IFD at 8
        + b"\x00\x01"  # one entry
        + b"\x01\x12\x00\x03\x00\x00\x00\x01"  # Orientation, SHORT, count 1
        + orientation.to_bytes(2, "big")
        + b"\x00\x00"
        + b"\x00\x00\x00\x00"  # no next IFD
    )
    payload = b"Exif\x00\x00" + tiff
    segment = b"\xff\xe1" + (len(payload) + 2).to_bytes(2, "big") + payload
    return jpeg[:2] + segment + jpeg[2:]


def test_exif_orientation_is_applied(tmp_path):
    image = np.zeros((20, 40), np.uint8)
    image[:, :10] = 255
    ok, encoded = cv2.imencode(".jpg", image)
    path = tmp_path / "turned.jpg"
    path.write_bytes(with_exif_orientation(encoded.tobytes(), 6))
    turned = read_image(path)
    assert turned.shape == (40, 20)
    assert turned[:10].mean() > 200 and turned[-10:].mean() < 50


@pytest.mark.parametrize("name", ["chelsea.jpg", "camera.png"])
def test_read_image_in_colour_is_opencvs_rgb(name):
    expected = cv2.cvtColor(cv2.imread(str(DATA / name)), cv2.COLOR_BGR2RGB)
    np.testing.assert_array_equal(read_image(DATA / name, colour=True), expected)


def test_transparent_pixels_in_colour_are_composited_on_white(tmp_path):
    rgba = np.zeros((2, 2, 4), np.uint8)
    rgba[0, 0] = (255, 0, 0, 255)  # opaque red
    rgba[0, 1] = (0, 0, 255, 0)  # transparent blue
    rgba[1, :] = (0, 255, 0, 128)  # half-transparent green
    cv2.imwrite(str(tmp_path / "a.png"), cv2.cvtColor(rgba, cv2.COLOR_RGBA2BGRA))
    green, white = (255 * 128 + 255 * 127 + 127) // 255, (255 * 127 + 127) // 255
    expected = [
        [[255, 0, 0], [255, 255, 255]],
        [[white, green, white], [white, green, white]],
    ]
    assert read_image(tmp_path / "a.png", colour=True).tolist() == expected
    assert as_rgb_image(rgba).tolist() == expected
