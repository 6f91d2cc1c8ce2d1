"""Verification settings that follow the descriptors
(vlad.verification._presets): the preset read from each kind of
record, and spatial re-ranking that takes each setting left None from it,
keeps those given, and records which came from where."""

from __future__ import annotations

import numpy as np
import pytest

import vlad
from vlad.search import SearchResults
from vlad.search._results import results_from_arrays
from vlad.verification import (
    VERIFICATION_PRESETS,
    rerank_spatially,
    spatial_rerank,
    verification_preset,
)


def hloc(file, n_features=128):
    return {"extractor": "hloc", "file": file, "n_features": n_features}


@pytest.mark.parametrize(
    ("record", "name", "known", "reason"),
    [
        ({"extractor": "opencv-sift", "root_sift": True}, "sift", True, "opencv-sift"),
        (
            {"extractor": "aliked", "model": "aliked-n16", "max_keypoints": 4096},
            "aliked",
            True,
            "names extractor 'aliked'",
        ),
        (hloc("feats-aliked-n16.h5"), "aliked", True, "feats-aliked-n16.h5"),
        (hloc("aliked-n16-4k.h5"), "aliked", True, "'aliked'"),
        (hloc("feats-aliked-t16.h5", 64), "aliked", True, "'aliked'"),
        (hloc("FEATS_ALIKED.hdf5"), "aliked", True, "'aliked'"),
        (hloc("feats-sift.h5"), "sift", True, "'sift'"),
        (hloc("feats-superpoint-n4096-r1024.h5", 256), "sift", False, "superpoint"),
        (hloc("feats-disk.h5"), "sift", False, "'disk'"),
        (hloc("feats-aliked.h5", 256), "sift", False, "these have 256"),
        (hloc("features.h5"), "sift", False, "does not name its extractor"),
        (hloc("aliked-vs-disk.h5"), "sift", False, "several extractors"),
        (hloc(None), "sift", False, "does not name its extractor"),
        ({"extractor": "disk", "model": "depth"}, "sift", False, "'disk'"),
        ({"extractor": "python:mine:describe"}, "sift", False, "python:mine"),
        ({"extractor": "opencv-orb"}, "sift", False, "'opencv-orb'"),
        ({}, "sift", False, "do not record their extractor"),
        (None, "sift", False, "do not record their extractor"),
    ],
)
def test_the_preset_is_read_from_the_record(record, name, known, reason):
    chosen = verification_preset(record)
    assert (chosen.name, chosen.known) == (name, known)
    assert chosen.settings == VERIFICATION_PRESETS[name]
    assert reason in chosen.reason


def test_a_preset_given_wins_and_an_unknown_one_is_refused():
    chosen = verification_preset({"extractor": "opencv-sift"}, "aliked")
    assert chosen.name == "aliked" and chosen.known
    assert "'aliked' was given" in chosen.reason
    with pytest.raises(ValueError, match=r"Unknown verification preset 'alikd'; "):
        verification_preset({}, "alikd")


def test_sift_s_preset_is_the_defaults_that_were():
    from vlad.verification._matching import LOWE_RATIO
    from vlad.verification._reranking import DEFAULT_DEPTH
    from vlad.verification._spatial import MAX_KEYPOINTS, MIN_INLIERS

    sift = VERIFICATION_PRESETS["sift"]
    assert (
        (sift.ratio, sift.min_inliers, sift.max_keypoints, sift.depth)
        == (
            LOWE_RATIO,
            MIN_INLIERS,
            MAX_KEYPOINTS,
            DEFAULT_DEPTH,
        )
        == (0.8, 12, 1024, 20)
    )
    aliked = VERIFICATION_PRESETS["aliked"]
    assert (aliked.ratio, aliked.min_inliers, aliked.depth) == (0.9, 12, 50)


# Spatial re-ranking with the presets, on made-up images: image 1 shares 30
# keypoints with image 0 (a moved and scaled view), each match with a second
# neighbour in image 1 at 1 / 0.85 of its distance, which Lowe's test at 0.9
# keeps and at 0.8 drops; image 2 shares 40 without; the others share none.

N_IMAGES = 8


def unit(rng, shape):
    vectors = rng.normal(size=shape)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def scene(metadata):
    rng = np.random.default_rng(5)
    descriptors = [
        rng.normal(size=(80, 32)).astype(np.float32) for _ in range(N_IMAGES)
    ]
    keypoints = [
        np.column_stack(
            [rng.uniform(0, 600, (80, 2)), rng.uniform(1, 10, 80), np.zeros(80)]
        ).astype(np.float32)
        for _ in range(N_IMAGES)
    ]
    for image, shared in ((1, 30), (2, 40)):
        descriptors[image][:shared] = descriptors[0][:shared] + 0.5 * unit(
            rng, (shared, 32)
        )
        keypoints[image][:shared, :2] = keypoints[0][:shared, :2] * 0.8 + 30
        keypoints[image][:shared, 0] += rng.uniform(0, 20, shared)  # parallax
    # Image 1's second neighbours, at 0.5 / 0.85 from image 0's descriptors.
    descriptors[1][30:60] = descriptors[0][:30] + (0.5 / 0.85) * unit(rng, (30, 32))
    names = [f"{n}.jpg" for n in range(N_IMAGES)]
    return vlad.DescriptorSets.from_list(
        descriptors, names, keypoints=keypoints, metadata=metadata
    )


def ranked(sets):
    """Every image ranked for image 0, in reverse order of name (so that
    verification has something to move)."""
    rows = np.arange(N_IMAGES)[::-1].copy()
    scores = np.linspace(1, 0, N_IMAGES, dtype=np.float32)
    name_array = np.array(sets.names, dtype=object)
    return SearchResults(
        results_from_arrays(["0.jpg"], name_array, scores[None], rows[None]),
        {"k": N_IMAGES},
    )


def verified_counts(results):
    (result,) = results.queries
    return dict(zip(result.names, result.inliers.tolist(), strict=True))


@pytest.mark.parametrize(
    ("metadata", "preset"),
    [
        ({"extractor": "opencv-sift"}, "sift"),
        ({"extractor": "aliked", "model": "aliked-n16"}, "aliked"),
        (hloc("feats-aliked-n16.h5", 32) | {"n_features": 128}, "aliked"),
    ],
)
def test_settings_left_none_follow_the_descriptors(metadata, preset):
    sets = scene(metadata)
    found = rerank_spatially(ranked(sets), sets, sets, n_jobs=1)
    settings = VERIFICATION_PRESETS[preset]
    # The same as the settings given, on descriptors that record nothing.
    plain = scene({})
    explicit = rerank_spatially(
        ranked(plain),
        plain,
        plain,
        depth=settings.depth,
        ratio=settings.ratio,
        min_inliers=settings.min_inliers,
        verify_keypoints=settings.max_keypoints,
        n_jobs=1,
    )
    assert found.rankings() == explicit.rankings()
    np.testing.assert_array_equal(found[0].inliers, explicit[0].inliers)
    recorded = found.record["spatial_verification"]
    assert {key: recorded[key] for key in ("ratio", "min_inliers", "depth")} == {
        "ratio": settings.ratio,
        "min_inliers": settings.min_inliers,
        "depth": settings.depth,
    }
    assert recorded["max_keypoints"] == settings.max_keypoints
    assert recorded["preset"]["name"] == preset and recorded["preset"]["known"]
    assert recorded["settings_from"] == dict.fromkeys(
        ("depth", "ratio", "min_inliers", "max_keypoints"), preset
    )
    assert not found.notes
    # Image 1's matches pass ALIKED's ratio, 0.9, not SIFT's, 0.8: it is
    # verified with the one and not the other; image 2 with both.
    counts = verified_counts(found)
    assert counts["2.jpg"] >= 30
    if preset == "sift":
        assert counts["1.jpg"] < 8
        assert set(found[0].names[:2]) == {"0.jpg", "2.jpg"}
    else:
        assert counts["1.jpg"] >= 25
        assert set(found[0].names[:3]) == {"0.jpg", "1.jpg", "2.jpg"}


def test_settings_given_are_kept_and_recorded_as_given():
    sets = scene({"extractor": "aliked"})
    found = rerank_spatially(
        ranked(sets), sets, sets, min_inliers=20, verify_keypoints=0, n_jobs=1
    )
    recorded = found.record["spatial_verification"]
    assert recorded["settings_from"] == {
        "depth": "aliked",
        "ratio": "aliked",
        "min_inliers": "given",
        "max_keypoints": "given",
    }
    assert (recorded["min_inliers"], recorded["ratio"], recorded["depth"]) == (
        20,
        0.9,
        50,
    )
    assert recorded["max_keypoints"] is None  # every keypoint, as inlier_matches
    # The library's lower-level re-ranking, with the same settings.
    ranking, inliers = spatial_rerank(
        sets.keypoints_of(0),
        sets[0],
        np.arange(N_IMAGES)[::-1].copy(),
        sets,
        depth=50,
        ratio=0.9,
        min_inliers=20,
        verify_keypoints=None,
    )
    assert list(found[0].names) == [sets.names[row] for row in ranking]
    np.testing.assert_array_equal(found[0].inliers, inliers)
    # A preset given wins over the record for the settings not given.
    chosen = rerank_spatially(ranked(sets), sets, sets, preset="sift", n_jobs=1)
    assert chosen.record["spatial_verification"]["ratio"] == 0.8
    assert chosen.record["spatial_verification"]["preset"]["name"] == "sift"


def test_an_unknown_extractor_takes_the_defaults_and_says_so():
    sets = scene({"extractor": "disk", "model": "depth"})
    found = rerank_spatially(ranked(sets), sets, sets, ratio=0.9, n_jobs=1)
    recorded = found.record["spatial_verification"]
    assert recorded["preset"]["name"] == "sift"
    assert recorded["preset"]["known"] is False
    assert "'disk'" in recorded["preset"]["reason"]
    assert recorded["settings_from"]["ratio"] == "given"
    assert (recorded["ratio"], recorded["min_inliers"], recorded["depth"]) == (
        0.9,
        12,
        20,
    )
    (note,) = found.notes
    assert note.startswith(
        "spatial verification took depth, min_inliers, verify_keypoints from the "
        "defaults, measured on SIFT"
    )
    assert "'disk'" in note and "\n" not in note
    # Every setting given: nothing taken from the defaults, nothing to say.
    given = rerank_spatially(
        ranked(sets),
        sets,
        sets,
        depth=20,
        ratio=0.9,
        min_inliers=12,
        verify_keypoints=1024,
        n_jobs=1,
    )
    assert not given.notes
    assert found.rankings() == given.rankings()


def test_queries_and_database_of_two_extractors_are_refused():
    sift, aliked = scene({"extractor": "opencv-sift"}), scene({"extractor": "aliked"})
    with pytest.raises(ValueError, match="'opencv-sift' descriptors but the database"):
        rerank_spatially(ranked(sift), sift, aliked)
    # A record without an extractor takes the other's.
    plain = scene({})
    found = rerank_spatially(ranked(plain), plain, aliked, n_jobs=1)
    assert found.record["spatial_verification"]["preset"]["name"] == "aliked"


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (
            {"verify_keypoints": 5},
            r"^verify_keypoints must be None, 0 \(every keypoint\) or an integer >= 8; "
            "got 5$",
        ),
        ({"verify_keypoints": -1}, "^verify_keypoints must be None, 0"),
        (
            {"verify_keypoints": None, "preset": "nothing"},
            "Unknown verification preset",
        ),
        ({"min_inliers": 0}, "^min_inliers must be an integer >= 1; got 0$"),
        ({"depth": -1}, "^depth must be None or an integer >= 0; got -1$"),
        ({"ratio": 1.5}, "ratio"),
    ],
)
def test_bad_settings_are_refused_before_any_work(settings, message):
    sets = scene({})
    empty = SearchResults([], {})  # nothing to verify: refused all the same
    with pytest.raises(ValueError, match=message):
        rerank_spatially(empty, sets, sets, **settings)
