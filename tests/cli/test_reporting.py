"""What the commands say about images without descriptors: one warning per
run, naming every image (or, beyond a few, how many and where all are
listed), with advice that applies to the input given."""

from __future__ import annotations

import json
import shutil

import cv2
import numpy as np
import pytest
from photos import DATA

from vlad.cli._reporting import LISTED_NAMES

from .conftest import FAST, run

#: Textureless images: no keypoints even at the lowest threshold.
BLANKS = [f"blank{number:02d}.png" for number in range(12)]


def warnings_about(stderr: str, word: str) -> list[str]:
    return [
        line
        for line in stderr.splitlines()
        if line.startswith("warning: ") and word in line
    ]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """One photo and twelve blank images, and their descriptors file."""
    root = tmp_path_factory.mktemp("blanks")
    images = root / "images"
    images.mkdir()
    shutil.copy(DATA / "coffee.jpg", images / "coffee.jpg")
    for name in BLANKS:
        cv2.imwrite(str(images / name), np.full((48, 64), 200, np.uint8))
    extracted = run("extract", images, *FAST, "-o", root / "d.npz")
    return root, extracted.stderr


def test_extract_warns_once_and_points_to_the_file_that_lists_them_all(folder):
    root, stderr = folder
    assert len(BLANKS) > LISTED_NAMES
    [line] = warnings_about(stderr, "no descriptors")
    assert line == (
        "warning: 12 images have no keypoints, so no descriptors: blank00.png, "
        f"blank01.png, blank02.png, blank03.png, blank04.png and 7 more (vlad info "
        f"{root / 'd.npz'} lists them all); --dense describes every image"
    )
    summary = json.loads(run("info", "--json", root / "d.npz").stdout)
    assert summary["empty"] == BLANKS and summary["n_empty"] == 12
    # -v names them all in the warning itself.
    verbose = run("extract", root / "images", *FAST, "-o", root / "v.npz", "-v")
    [line] = warnings_about(verbose.stderr, "no descriptors")
    assert line.endswith(f": {', '.join(BLANKS)}; --dense describes every image")


def test_a_descriptors_file_holds_images_without_descriptors(folder, codebook_path):
    root, _ = folder
    listed = f"and 7 more (vlad info {root / 'd.npz'} lists them all)"
    fitted = run("fit", root / "d.npz", "--n-clusters", 2, "-o", root / "c.npz")
    [line] = warnings_about(fitted.stderr, "descriptors")
    assert line.startswith(
        f"warning: {root / 'd.npz'} holds 12 images without descriptors: blank00.png"
    )
    assert line.endswith(listed) and "--dense" not in fitted.stderr
    encoded = run(
        "encode", root / "d.npz", "-c", codebook_path, "-o", root / "v.npy", "-q"
    )
    assert encoded.stderr.count("\n") == 1
    assert encoded.stderr.startswith(
        f"warning: {root / 'd.npz'} holds 12 images without descriptors, whose VLAD "
        "vectors are zero: blank00.png"
    )
    assert encoded.stderr.rstrip().endswith(
        f"and 7 more (vlad info {root / 'v.npy'} lists them all)"
    )
    # The advice given for images would be refused here.
    refused = run(
        "fit", root / "d.npz", "--dense", "-o", root / "x.npz", "--n-clusters", 4,
        exit_code=1,
    )  # fmt: skip
    assert "apply to images, not to the descriptors already in" in refused.output


def test_encoding_images_advises_a_dense_codebook(folder, codebook_path):
    root, _ = folder
    images = root / "few"
    images.mkdir()
    shutil.copy(DATA / "coffee.jpg", images / "coffee.jpg")
    for name in BLANKS[:2]:
        shutil.copy(root / "images" / name, images / name)
    encoded = run("encode", images, "-c", codebook_path, "-o", root / "few.npy")
    assert warnings_about(encoded.stderr, "no descriptors") == [
        "warning: 2 images have no keypoints, so no descriptors and a zero VLAD "
        "vector: blank00.png, blank01.png; --dense describes every image (with a "
        "codebook fitted with --dense)"
    ]


def test_queries_without_descriptors_are_told_once(folder, codebook_path, tmp_path):
    root, _ = folder
    run("encode", root / "d.npz", "-c", codebook_path, "-o", tmp_path / "db.npy")
    run("index", tmp_path / "db.npy", "-o", tmp_path / "index", "-q")
    result = run(
        "search", tmp_path / "index", root / "images", "-c", codebook_path,
        "--top", 3, "-o", tmp_path / "results.json",
    )  # fmt: skip
    # Not once for the images and again for each query that finds nothing.
    for name in BLANKS:
        assert result.stderr.count(name) <= 1
    [line] = warnings_about(result.stderr, "blank")
    assert line.startswith(
        "warning: 12 queries have no keypoints, so no descriptors, and find "
        "nothing: blank00.png"
    )
    assert line.endswith(
        f"and 7 more (vlad info {tmp_path / 'results.json'} lists them all)"
    )
    assert "--dense" not in result.stderr
    summary = json.loads(run("info", "--json", tmp_path / "results.json").stdout)
    assert summary["found_nothing"] == BLANKS


def test_hloc_features_without_descriptors_are_not_advised_dense(tmp_path):
    h5py = pytest.importorskip("h5py")
    path = tmp_path / "feats.h5"
    rng = np.random.default_rng(0)
    with h5py.File(path, "w") as features:
        for name, n_keypoints in (("a.jpg", 30), ("b.jpg", 0), ("c.jpg", 25)):
            group = features.create_group(name)
            group["keypoints"] = rng.uniform(0, 100, (n_keypoints, 2))
            group["descriptors"] = rng.normal(size=(8, n_keypoints))
    result = run("fit", path, "--n-clusters", 2, "-o", tmp_path / "c.npz")
    assert warnings_about(result.stderr, "descriptors") == [
        f"warning: {path} holds 1 image without descriptors: b.jpg"
    ]
