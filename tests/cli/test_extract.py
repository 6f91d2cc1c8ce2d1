"""``vlad extract``."""

from __future__ import annotations

import cv2
import numpy as np
from photos import DATA, FAST_OPTIONS, PHOTOS

import vlad

from .conftest import FAST, run


def test_extract_writes_what_the_library_extracts(tmp_path, photo_sets):
    result = run("extract", DATA, *FAST, "-j", 2, "-o", tmp_path / "d.npz")
    sets = vlad.DescriptorSets.load(tmp_path / "d.npz")
    np.testing.assert_array_equal(sets.descriptors, photo_sets.descriptors)
    np.testing.assert_array_equal(sets.offsets, photo_sets.offsets)
    np.testing.assert_array_equal(sets.keypoints, photo_sets.keypoints)
    assert sets.names == PHOTOS
    assert sets.metadata == photo_sets.metadata
    assert "(RootSIFT at detected keypoints)" in result.stderr


def test_extract_with_features_and_min_keypoints(tmp_path):
    run("extract", DATA, *FAST, "--features", "orb", "--min-keypoints", 50,
        "-o", tmp_path / "orb.npz")  # fmt: skip
    sets = vlad.DescriptorSets.load(tmp_path / "orb.npz")
    expected, _ = vlad.extract_images(
        DATA, {"features": "orb", "min_keypoints": 50, **FAST_OPTIONS}, n_jobs=1
    )
    np.testing.assert_array_equal(sets.descriptors, expected.descriptors)
    assert sets.metadata == expected.metadata
    assert sets.n_features == 256


def test_extract_warns_with_the_count_of_images_without_descriptors(tmp_path):
    folder = tmp_path / "photos"
    folder.mkdir()
    for name in ("a.png", "b.png"):
        cv2.imwrite(str(folder / name), np.full((64, 64), 128, np.uint8))
    cv2.imwrite(str(folder / "c.png"), cv2.imread(str(DATA / "coffee.jpg")))
    result = run("extract", folder, *FAST, "-o", tmp_path / "d.npz")
    # One line for both, naming them, with the advice that helps.
    assert result.stderr.count("a.png") == 1
    assert (
        "warning: 2 images have no keypoints, so no descriptors: a.png, b.png; "
        "--dense describes every image"
    ) in result.stderr
    assert "VLAD" not in result.stderr and "min-keypoints" not in result.stderr


def test_extract_with_a_callable_by_name(tmp_path, monkeypatch):
    (tmp_path / "grid_features.py").write_text(
        "import numpy as np\n"
        "def corners(image):\n"
        "    return image[::40, ::40].reshape(-1, 3).astype(np.float32)\n"
        "def broken(image):\n"
        "    return image\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    result = run("extract", DATA, "--extractor", "grid_features:corners",
                 "-o", tmp_path / "d.npz")  # fmt: skip
    sets = vlad.DescriptorSets.load(tmp_path / "d.npz")
    import grid_features

    expected, _ = vlad.extract_images(DATA, extractor=grid_features.corners)
    np.testing.assert_array_equal(sets.descriptors, expected.descriptors)
    assert "(python:grid_features:corners)" in result.stderr
    for spec, message in [
        ("grid_features:broken", "returned dtype uint8 for"),
        ("grid_features:nothing", "has no 'nothing'"),
        ("nowhere_module:f", "No module named 'nowhere_module'"),
    ]:
        failed = run("extract", DATA, "--extractor", spec,
                     "-o", tmp_path / "e.npz", exit_code=1)  # fmt: skip
        assert message in failed.output and len(failed.output.splitlines()) == 1
    refused = run("extract", DATA, "--extractor", "grid_features:corners",
                  "--max-side", 10, "-o", tmp_path / "e.npz", exit_code=1)  # fmt: skip
    assert "apply to OpenCV's features" in refused.output


def test_extract_with_affine_tilts(tmp_path):
    image = DATA / "chelsea.jpg"
    run("extract", image, *FAST, "--affine-tilts", 1, "-o", tmp_path / "a.npz")
    sets = vlad.DescriptorSets.load(tmp_path / "a.npz")
    expected, _ = vlad.extract_images(
        image, {"affine_tilts": 1, **FAST_OPTIONS}, n_jobs=1
    )
    np.testing.assert_array_equal(sets.descriptors, expected.descriptors)
    np.testing.assert_array_equal(sets.keypoints, expected.keypoints)
    assert sets.metadata == expected.metadata
    assert sets.metadata["affine_tilts"] == 1
