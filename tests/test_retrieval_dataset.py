"""The retrieval benchmark's builder: the folder, its ground truth, the
transforms and where the photographs come from."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import cv2
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchmarks.retrieval.build import (
    build_dataset,
    main,
    select_distractors,
    thumbnail_hash,
)
from benchmarks.retrieval.sources import (
    BUNDLED_FOLDER,
    PACKAGE_SOURCES,
    find_folder,
    licence_of,
)
from benchmarks.retrieval.transforms import (
    TIERS,
    TRANSFORM_FUNCTIONS,
    TRANSFORMS,
    apply_transform,
    query_rng,
    rotate,
)

#: The benchmarks' own tests: a CI step of their own, not the default run.
pytestmark = pytest.mark.benchmarks

EIGHT_TRANSFORMS = {
    "crop", "rotation", "scale", "jpeg", "brightness_contrast", "perspective",
    "text", "occlusion",
}  # fmt: skip
#: Transforms that draw a parameter from the generator, and those that do not.
RANDOM_TRANSFORMS = ["crop", "rotation", "perspective", "text", "occlusion"]
FIXED_TRANSFORMS = ["scale", "jpeg"]
BUNDLED = sorted(
    path.stem for path in BUNDLED_FOLDER.iterdir() if path.suffix in (".jpg", ".png")
)
SMALL = 128


def build_small(out: Path, seed: int = 0, **options) -> dict:
    return build_dataset(out, ["data"], seed=seed, max_side=SMALL, **options)


def digests(folder: Path) -> dict[str, str]:
    """SHA-256 of every file under ``folder``, by relative name."""
    return {
        path.relative_to(folder).as_posix(): hashlib.sha256(
            path.read_bytes()
        ).hexdigest()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("retrieval") / "bench"
    build_small(out)
    return out


def test_the_table_covers_every_transform_in_both_tiers():
    assert set(TRANSFORMS) == EIGHT_TRANSFORMS == set(TRANSFORM_FUNCTIONS)
    assert TIERS == ("easy", "hard")
    for transform, tiers in TRANSFORMS.items():
        assert set(tiers) == set(TIERS), transform
        assert set(tiers["easy"]) == set(tiers["hard"]), transform
    # The hard tier is the stronger one, parameter by parameter.
    assert TRANSFORMS["crop"]["hard"]["area"] < TRANSFORMS["crop"]["easy"]["area"]
    assert min(TRANSFORMS["rotation"]["hard"]["degrees"]) >= max(
        TRANSFORMS["rotation"]["easy"]["degrees"]
    )
    for transform, key in [("scale", "factor"), ("jpeg", "quality")]:
        assert TRANSFORMS[transform]["hard"][key] < TRANSFORMS[transform]["easy"][key]
    for transform, key in [
        ("perspective", "shift"),
        ("occlusion", "area"),
        ("text", "height"),
        ("brightness_contrast", "contrast"),
    ]:
        assert TRANSFORMS[transform]["hard"][key] > TRANSFORMS[transform]["easy"][key]
    # fmt: skip


def test_counts_are_originals_times_transforms_times_tiers(built):
    originals = sorted(path.stem for path in (built / "database/originals").iterdir())
    assert originals == [f"data-{stem}" for stem in BUNDLED]
    queries = sorted(path.name for path in (built / "queries").iterdir())
    assert len(queries) == len(BUNDLED) * 8 * 2
    ground_truth = json.loads((built / "ground_truth.json").read_text())
    assert sorted(ground_truth) == queries
    record = json.loads((built / "dataset.json").read_text())
    assert record["counts"]["queries"] == len(queries)
    assert record["counts"]["queries_by_tier"] == {"easy": 64, "hard": 64}
    assert set(record["counts"]["queries_by_transform"].values()) <= {16, 0}
    assert record["counts"]["distractors"] == 0
    assert record["sources_found"] == ["data"] and record["seed"] == 0
    assert record["transforms"] == json.loads(json.dumps(TRANSFORMS))


def test_every_query_is_relevant_to_its_own_original_and_exists(built):
    ground_truth = json.loads((built / "ground_truth.json").read_text())
    for query, entry in ground_truth.items():
        assert (built / "queries" / query).is_file()
        original, kind = query.removesuffix(".jpg").split("__")
        transform, tier = kind.rsplit("-", 1)
        assert entry == {
            "relevant": [f"originals/{original}.jpg"],
            "junk": [],
            "tags": [transform, tier],
        }
        assert (built / "database" / entry["relevant"][0]).is_file()


def test_every_image_is_a_jpeg_no_longer_than_max_side(built):
    for path in built.rglob("*.jpg"):
        assert path.read_bytes()[:3] == b"\xff\xd8\xff", path
        image = cv2.imread(str(path))
        # Rotation grows the canvas: its longer side is at most the diagonal.
        limit = SMALL * math.sqrt(2) + 1 if "__rotation" in path.name else SMALL
        assert max(image.shape[:2]) <= limit, path


def test_sources_json_names_every_original_and_its_licence(built):
    records = json.loads((built / "sources.json").read_text())
    readme = (BUNDLED_FOLDER / "README.md").read_text()
    assert [record["name"] for record in records] == [
        f"database/originals/data-{stem}.jpg" for stem in BUNDLED
    ]
    for record in records:
        assert record["role"] == "original"
        assert record["origin"].startswith("data/")
        assert record["licence"] in readme and record["licence"] != "unknown"


def test_a_build_is_the_same_bytes_for_a_seed(built, tmp_path):
    build_small(tmp_path / "again")
    assert digests(tmp_path / "again") == digests(built)


def test_another_seed_changes_the_random_transforms_only(built, tmp_path):
    build_small(tmp_path / "other", seed=1)
    first, second = digests(built), digests(tmp_path / "other")
    assert first.keys() == second.keys()
    for name in first:
        transform = name.split("__")[-1].rsplit("-", 1)[0] if "__" in name else None
        if transform in RANDOM_TRANSFORMS:
            assert first[name] != second[name], name
        elif transform in FIXED_TRANSFORMS or name.startswith("database/"):
            assert first[name] == second[name], name


@pytest.mark.parametrize("transform", sorted(TRANSFORMS))
@pytest.mark.parametrize("tier", TIERS)
def test_a_transform_depends_only_on_its_generator(transform, tier):
    image = np.random.default_rng(5).integers(0, 256, (60, 90, 3), dtype=np.uint8)
    first = apply_transform(image, transform, tier, query_rng(3, "q"))
    second = apply_transform(image.copy(), transform, tier, query_rng(3, "q"))
    np.testing.assert_array_equal(first, second)
    assert first.dtype == np.uint8 and first.ndim == 3


def test_the_jpeg_queries_lose_more_in_the_hard_tier(built):
    original = cv2.imread(str(built / "database/originals/data-chelsea.jpg"))
    errors = {}
    for tier in TIERS:
        query = cv2.imread(str(built / f"queries/data-chelsea__jpeg-{tier}.jpg"))
        assert query.shape == original.shape
        errors[tier] = np.abs(query.astype(int) - original).mean()
    assert 0 < errors["easy"] < errors["hard"]


def test_a_crop_keeps_its_area_and_a_scale_its_factor():
    image = np.zeros((200, 300, 3), np.uint8)
    for tier in TIERS:
        cropped = apply_transform(image, "crop", tier, query_rng(0, "c"))
        area = cropped.shape[0] * cropped.shape[1] / (200 * 300)
        assert area == pytest.approx(TRANSFORMS["crop"][tier]["area"], abs=0.01)
        scaled = apply_transform(image, "scale", tier, query_rng(0, "s"))
        factor = TRANSFORMS["scale"][tier]["factor"]
        assert scaled.shape == (round(200 * factor), round(300 * factor), 3)


def test_occlusion_covers_its_area():
    image = np.full((120, 160, 3), 7, np.uint8)
    for seed in range(5):
        for tier in TIERS:
            occluded = apply_transform(image, "occlusion", tier, query_rng(seed, "o"))
            changed = np.any(occluded != image, axis=2).mean()
            expected = TRANSFORMS["occlusion"][tier]["area"]
            # A colour equal to the background in a channel still differs in
            # another; the rectangle's sides are rounded to whole pixels.
            assert changed == pytest.approx(expected, abs=0.03)


def marker_centre(image: np.ndarray) -> np.ndarray:
    """(x, y) centroid of the bright pixels."""
    ys, xs = np.nonzero(image > 128)
    return np.array([xs.mean(), ys.mean()])


def test_a_quarter_turn_is_numpy_rot90():
    image = np.zeros((40, 70), np.uint8)
    image[5:9, 50:56] = 255
    np.testing.assert_array_equal(rotate(image, 90), np.rot90(image))


@pytest.mark.parametrize("degrees", [-75.0, -10.0, 30.0, 60.0])
def test_a_rotated_marker_lands_where_trigonometry_says(degrees):
    height, width = 90, 150
    image = np.zeros((height, width), np.uint8)
    image[10:16, 120:126] = 255  # centre (122.5, 12.5)
    rotated = rotate(image, degrees)
    theta = math.radians(degrees)
    new_width = round(width * abs(math.cos(theta)) + height * abs(math.sin(theta)))
    new_height = round(width * abs(math.sin(theta)) + height * abs(math.cos(theta)))
    assert rotated.shape == (new_height, new_width)
    # Anticlockwise on screen, where y grows downwards, about the centres.
    dx, dy = 122.5 - (width - 1) / 2, 12.5 - (height - 1) / 2
    expected = np.array(
        [
            (new_width - 1) / 2 + dx * math.cos(theta) + dy * math.sin(theta),
            (new_height - 1) / 2 - dx * math.sin(theta) + dy * math.cos(theta),
        ]
    )
    np.testing.assert_allclose(marker_centre(rotated), expected, atol=1.0)


def test_an_existing_folder_is_refused_unless_overwritten(built, tmp_path, capsys):
    out = tmp_path / "bench"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="--overwrite"):
        build_small(out)
    assert main([str(out), "--source", "data", "--max-side", str(SMALL)]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "exists" in error
    assert (out / "keep.txt").read_text() == "mine"
    assert main([str(out), "--source", "data", "--max-side", "128", "--overwrite"]) == 0
    assert capsys.readouterr().out.count("\n") == 1
    assert not (out / "keep.txt").exists()
    assert digests(out) == digests(built)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["bench"]


def test_a_failed_build_leaves_no_folder(tmp_path):
    folder = tmp_path / "photos"
    folder.mkdir()
    (folder / "broken.jpg").write_bytes(b"not a jpeg")
    with pytest.raises(ValueError, match="broken.jpg"):
        build_dataset(tmp_path / "bench", [folder], max_side=SMALL)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["photos"]


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="max_side=8"):
        build_dataset("unused", ["data"], max_side=8)
    with pytest.raises(FileNotFoundError, match="no-such-folder"):
        build_dataset("unused", ["no-such-folder"])
    with pytest.raises(ValueError, match="Unknown transform 'blur'"):
        apply_transform(np.zeros((4, 4, 3), np.uint8), "blur", "easy", query_rng(0, ""))


def test_a_folder_source_gives_originals_named_after_it(tmp_path):
    folder = tmp_path / "mine"
    folder.mkdir()
    rng = np.random.default_rng(0)
    for stem in ("b", "a"):
        pixels = rng.integers(0, 256, (50, 80, 3), dtype=np.uint8)
        cv2.imwrite(str(folder / f"{stem}.png"), pixels)
    images = find_folder(folder)
    assert [image.name for image in images] == ["mine-a", "mine-b"]
    assert {image.licence for image in images} == {"unknown"}
    record = build_dataset(tmp_path / "bench", [folder], max_side=64)
    assert record["counts"]["originals"] == 2 and record["counts"]["queries"] == 32


def test_licences_follow_the_last_matching_files_paragraph():
    paragraphs = [
        {"Files": "*", "License": "GPL-2+", "Copyright": "2014 Someone"},
        {"Files": "nature/Aqua.jpg\nnature/Wood.jpg", "License": "CC0-1.0"},
        {"Files": "debian/*", "License": "MIT"},
    ]
    assert licence_of(paragraphs, "nature/Wood.jpg") == ("CC0-1.0", "")
    assert licence_of(paragraphs, "deep/sub/x.png") == ("GPL-2+", "2014 Someone")
    assert licence_of([], "x.png") == ("unknown", "")


def reference_selection(candidates, protected, distance):
    """Plain loops: a candidate is kept unless near a protected one or a kept one."""
    kept, duplicates = [], []
    for i, (_, bits) in enumerate(candidates):
        near = [name for name, other in protected if np.sum(bits ^ other) <= distance]
        near += [candidates[j][0] for j in kept
                 if np.sum(bits ^ candidates[j][1]) <= distance]  # fmt: skip
        if near:
            duplicates.append(i)
        else:
            kept.append(i)
    return kept, duplicates


@given(
    st.lists(st.integers(0, 7), min_size=0, max_size=12),
    st.lists(st.integers(0, 7), min_size=0, max_size=4),
    st.integers(0, 3),
)
def test_distractor_selection_matches_plain_loops(
    candidate_ids, protected_ids, distance
):
    # Eight patterns, some of them a bit or two apart.
    patterns = np.random.default_rng(0).integers(0, 2, (8, 64)).astype(bool)
    patterns[1] = patterns[0]
    patterns[1, :2] ^= True
    candidates = [(f"c{i}", patterns[k]) for i, k in enumerate(candidate_ids)]
    protected = [(f"p{i}", patterns[k]) for i, k in enumerate(protected_ids)]
    kept, duplicates = select_distractors(candidates, protected, None, distance)
    assert (kept, [index for index, _ in duplicates]) == reference_selection(
        candidates, protected, distance
    )


def test_a_distractor_limit_keeps_an_even_spread():
    patterns = np.eye(64, dtype=bool)[:10] | np.eye(64, dtype=bool)[10:20]
    candidates = [(f"c{i}", bits) for i, bits in enumerate(patterns)]
    kept, _ = select_distractors(candidates, [], limit=4, distance=1)
    assert kept == [0, 2, 5, 7]


def test_a_resized_copy_hashes_alike():
    image = cv2.imread(str(BUNDLED_FOLDER / "coffee.jpg"))
    small = cv2.resize(image, (200, 133), interpolation=cv2.INTER_AREA)
    assert np.sum(thumbnail_hash(image) ^ thumbnail_hash(small)) <= 4
    other = cv2.imread(str(BUNDLED_FOLDER / "rocket.jpg"))
    assert np.sum(thumbnail_hash(image) ^ thumbnail_hash(other)) > 10


# Two builds from opencv-doc's photos, seconds: with the slow tests.
@pytest.mark.slow
@pytest.mark.skipif(
    not Path(PACKAGE_SOURCES["opencv"].root, "data/graf1.png").is_file(),
    reason="opencv-doc is not installed",
)
def test_real_pairs_and_distractors_from_opencv_doc(tmp_path):
    record = build_dataset(tmp_path / "bench", ["data", "opencv"], max_side=96)
    out = tmp_path / "bench"
    ground_truth = json.loads((out / "ground_truth.json").read_text())
    pairs = {q: e for q, e in ground_truth.items() if e["tags"][0] == "real-pair"}
    assert pairs["opencv-graf3__real-pair-hard.jpg"]["relevant"] == [
        "originals/opencv-graf1.jpg"
    ]
    assert pairs["opencv-box_in_scene__real-pair-hard.jpg"]["relevant"] == [
        "originals/opencv-box.jpg"
    ]
    assert len(pairs) == record["counts"]["real_pairs"] > 0
    relevant = {name for entry in ground_truth.values() for name in entry["relevant"]}
    distractors = {
        f"distractors/{path.name}" for path in (out / "database/distractors").iterdir()
    }
    assert distractors and not distractors & relevant
    records = json.loads((out / "sources.json").read_text())
    assert {r["role"] for r in records} <= {
        "original",
        "distractor",
        "pair",
        "duplicate",
    }
    for r in records:
        if r["package"] == "opencv-doc":
            assert r["licence"] == "Apache-2.0 AND BSD-3-Clause"
    limited = build_dataset(
        tmp_path / "few", ["data", "opencv"], max_side=96, distractors=3
    )
    assert limited["counts"]["distractors"] == 3
