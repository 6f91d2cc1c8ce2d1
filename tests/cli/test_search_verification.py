"""``vlad search --rerank spatial`` on hloc's ALIKED features: settings that
suit the descriptors without flags, flags that override them, a warning for
a file that does not say what it holds, and query expansion by the verified
images; each against the library called with the same settings."""

from __future__ import annotations

import functools
import json
import shutil

import numpy as np
import pytest

from vlad.asmk import load_asmk_index
from vlad.formats._descriptor_files import read_descriptor_file
from vlad.search import read_rankings
from vlad.verification import expand_verified, rerank_spatially

from .conftest import run

h5py = pytest.importorskip("h5py")

N_IMAGES = 10


@pytest.fixture(scope="module")
def features(tmp_path_factory):
    """Made-up images in hloc's ALIKED file (128-dimensional float16
    descriptors, ``keypoint_scores``), named as hloc names it: 0 to 3 are one
    scene (views sharing 50 keypoints, moved sideways and scaled, each point
    by its own disparity, as a camera moved along a row sees points at
    several depths), 4 and 5 another, the rest unrelated; and an ASMK index
    of them."""
    folder = tmp_path_factory.mktemp("aliked")
    path = folder / "feats-aliked-n16.h5"
    rng = np.random.default_rng(2)
    scenes = {}
    with h5py.File(path, "w") as file:
        for image in range(N_IMAGES):
            descriptors = rng.normal(size=(100, 128)).astype(np.float32)
            positions = rng.uniform(0, 600, (100, 2)).astype(np.float32)
            scene = 0 if image < 4 else 4 if image < 6 else None
            if scene is not None and scene in scenes:
                shared, where = scenes[scene]
                descriptors[:50] = shared + 0.02 * rng.normal(size=shared.shape)
                disparity = rng.uniform(0, 30, 50) * (image % 4)
                positions[:50] = where * (1 - 0.05 * image) + 7 * image
                positions[:50, 0] += disparity
            elif scene is not None:
                scenes[scene] = (descriptors[:50].copy(), positions[:50].copy())
            group = file.create_group(f"{image:02d}.jpg")
            group["keypoints"] = positions.astype(np.float16)
            group["keypoint_scores"] = rng.uniform(0, 1, 100).astype(np.float16)
            group["descriptors"] = descriptors.T.astype(np.float16)
            group["image_size"] = np.array([640, 480])
    run("fit", path, "--n-clusters", 16, "-o", folder / "words.npz")
    run("index", path, "--method", "asmk", "--full", "-c", folder / "words.npz",
        "-o", folder / "index")  # fmt: skip
    return folder


def search(folder, features, *options, exit_code=0):
    output = folder / "results.json"
    output.unlink(missing_ok=True)
    result = run(
        "search", folder / "index", features, "--top", N_IMAGES, "--rerank",
        "spatial", "--database-descriptors", features, "-o", output, *options,
        exit_code=exit_code,
    )  # fmt: skip
    return result, (json.loads(output.read_text()) if exit_code == 0 else None)


def library(folder, features, **settings):
    sets = read_descriptor_file(features)
    index = load_asmk_index(folder / "index")
    results = index.search(sets, N_IMAGES)
    return sets, index, rerank_spatially(results, sets, sets, n_jobs=1, **settings)


def test_aliked_s_settings_without_flags(features):
    path = features / "feats-aliked-n16.h5"
    result, document = search(features, path)
    recorded = document["spatial_verification"]
    assert (recorded["ratio"], recorded["min_inliers"], recorded["depth"]) == (
        0.9,
        12,
        50,
    )
    assert recorded["max_keypoints"] == 1024
    assert recorded["preset"]["name"] == "aliked"
    assert "feats-aliked-n16.h5" in recorded["preset"]["reason"]
    assert set(recorded["settings_from"].values()) == {"aliked"}
    assert "warning" not in result.stderr.lower()
    *_, expected = library(
        features, path, depth=50, ratio=0.9, min_inliers=12, verify_keypoints=1024
    )
    assert read_rankings(features / "results.json") == expected.rankings()
    hits = document["queries"][0]["results"]
    assert [hit["inliers"] for hit in hits] == expected[0].inliers.tolist()
    # Image 0 verifies its scene's three other views, and only those.
    assert {hit["name"] for hit in hits if hit["inliers"] >= 12} == {
        "00.jpg",
        "01.jpg",
        "02.jpg",
        "03.jpg",
    }


def test_flags_override_the_descriptors_settings(features):
    path = features / "feats-aliked-n16.h5"
    _, document = search(
        features, path, "--ratio", "0.8", "--min-inliers", "20",
        "--verify-keypoints", "0", "--rerank-depth", "5",
    )  # fmt: skip
    recorded = document["spatial_verification"]
    assert recorded["settings_from"] == dict.fromkeys(
        ("depth", "ratio", "min_inliers", "max_keypoints"), "given"
    )
    assert (recorded["ratio"], recorded["min_inliers"], recorded["depth"]) == (
        0.8,
        20,
        5,
    )
    assert recorded["max_keypoints"] is None
    *_, expected = library(
        features, path, depth=5, ratio=0.8, min_inliers=20, verify_keypoints=0
    )
    assert read_rankings(features / "results.json") == expected.rankings()


def test_a_file_that_does_not_name_its_extractor_warns(features, tmp_path):
    renamed = tmp_path / "features.h5"
    shutil.copy(features / "feats-aliked-n16.h5", renamed)
    result, document = search(features, renamed)
    recorded = document["spatial_verification"]
    assert recorded["preset"] == {
        "name": "sift",
        "reason": "hloc's features file 'features.h5' does not name its extractor "
        "as hloc names its files (feats-aliked-n16.h5)",
        "known": False,
    }
    assert (recorded["ratio"], recorded["min_inliers"]) == (0.8, 12)
    warnings = [line for line in result.stderr.splitlines() if "defaults" in line]
    assert len(warnings) == 1 and "does not name its extractor" in warnings[0]
    assert document["notes"] == [warnings[0].split(": ", 1)[1]]
    # The preset named on the command line: ALIKED's settings, no warning.
    result, document = search(features, renamed, "--verification-preset", "aliked")
    assert document["spatial_verification"]["preset"]["name"] == "aliked"
    assert document["spatial_verification"]["ratio"] == 0.9
    assert "defaults" not in result.stderr and not document["notes"]


def test_expansion_by_verified_images_is_the_library_s(features):
    path = features / "feats-aliked-n16.h5"
    _, document = search(features, path, "--expand-verified", "2")
    assert document["verified_expansion"] == {"images": 2, "min_inliers": 12}
    sets, index, verified = library(features, path)
    expected = expand_verified(
        verified, sets, sets, functools.partial(index.search), images=2
    )
    assert read_rankings(features / "results.json") == expected.rankings()
    result, _ = search(features, path, "--expand-verified", "-1", exit_code=2)
    assert "--expand-verified" in result.stderr


def test_expansion_needs_spatial_reranking(features):
    path = features / "feats-aliked-n16.h5"
    result = run(
        "search", features / "index", path, "--expand-verified", 3, exit_code=2
    )
    assert "--expand-verified needs --rerank spatial" in result.stderr
