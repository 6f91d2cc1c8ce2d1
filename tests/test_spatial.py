"""Spatial verification of candidates: vlad.verification._spatial."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from photos import DATA, FAST_OPTIONS

import vlad
from vlad.images._files import read_image
from vlad.images._sift import SiftOptions, extract_keypoints_with_options
from vlad.verification._spatial import (
    MIN_INLIERS,
    REPROJECTION_THRESHOLD,
    count_inliers,
    match_descriptors,
    spatial_rerank,
)

OPTIONS = SiftOptions(**FAST_OPTIONS)
#: Photos with texture enough for a few hundred keypoints at 256 pixels.
TEXTURED = ["astronaut.jpg", "camera.png", "chelsea.jpg", "coffee.jpg"]


def warp_matrix(kind: str, width: int, height: int) -> np.ndarray:
    """A known 3 x 3 transform of an image of ``width`` x ``height``."""
    if kind == "rotation":
        return np.vstack(
            [cv2.getRotationMatrix2D((width / 2, height / 2), 30, 0.8), [0, 0, 1]]
        )
    if kind == "scale and crop":
        return np.array([[1.4, 0, -0.2 * width], [0, 1.4, -0.2 * height], [0, 0, 1]])
    corners = np.float32([[0, 0], [width, 0], [width, height], [0, height]])
    moved = corners * np.float32([[1, 1]]) + np.float32(
        [[0.1 * width, 0.05 * height], [-0.05 * width, 0], [0, 0], [0, -0.1 * height]]
    )
    return cv2.getPerspectiveTransform(corners, moved)


@pytest.fixture(scope="module")
def photos():
    """Keypoints and descriptors of each textured photo at FAST_OPTIONS."""
    return {
        name: extract_keypoints_with_options(read_image(DATA / name), OPTIONS)
        for name in TEXTURED
    }


def warped_features(name: str, kind: str):
    """The warp matrix, and the keypoints and descriptors of the warped photo."""
    image = read_image(DATA / name)
    height, width = image.shape
    matrix = warp_matrix(kind, width, height)
    warped = cv2.warpPerspective(image, matrix, (width, height))
    return matrix, *extract_keypoints_with_options(warped, OPTIONS)


def reference_matches(query, descriptors, ratio):
    """Lowe's ratio test and one match per candidate descriptor, by plain loops
    in float64."""
    query = np.asarray(query, dtype=np.float64)
    descriptors = np.asarray(descriptors, dtype=np.float64)
    best = {}
    if len(descriptors) < 2:
        return np.zeros((0, 2), dtype=np.int64)
    for q, row in enumerate(query):
        distances = np.sqrt(((descriptors - row) ** 2).sum(axis=1))
        nearest, second = np.argsort(distances, kind="stable")[:2]
        if distances[nearest] < ratio * distances[second]:
            candidate = (distances[nearest], q)
            if nearest not in best or candidate < best[nearest]:
                best[nearest] = candidate
    pairs = sorted((q, int(t)) for t, (_, q) in best.items())
    return np.array(pairs, dtype=np.int64).reshape(-1, 2)


@settings(max_examples=60, deadline=None)
@given(
    n_query=st.integers(0, 12),
    n_candidate=st.integers(0, 12),
    ratio=st.sampled_from([0.7, 1.0]),
    seed=st.integers(0, 2**16),
)
def test_matches_are_the_ratio_test_of_a_plain_loop(n_query, n_candidate, ratio, seed):
    # Small integer descriptors: their distances are square roots of distinct
    # integers, never so close that float32 and float64 disagree on a test.
    rng = np.random.default_rng(seed)
    query = rng.integers(0, 4, size=(n_query, 4))
    descriptors = rng.integers(0, 4, size=(n_candidate, 4))
    np.testing.assert_array_equal(
        match_descriptors(query, descriptors, matching="ratio", ratio=ratio),
        reference_matches(query, descriptors, ratio),
    )


@pytest.mark.parametrize("matching", ["ratio", "mutual+ratio"])
def test_no_second_neighbour_means_no_ratio_matches(matching):
    for query, descriptors in [
        (np.ones((3, 2)), np.ones((1, 2))),
        (np.ones((3, 2)), np.ones((0, 2))),
        (np.ones((0, 2)), np.eye(2)),
    ]:
        pairs = match_descriptors(query, descriptors, matching=matching)
        assert pairs.shape == (0, 2)


def ground_truth_inliers(query_keypoints, keypoints, matches, matrix, threshold):
    """Matches whose query keypoint, moved by the known warp, lands within
    ``threshold`` pixels of its candidate keypoint."""
    moved = cv2.perspectiveTransform(
        query_keypoints[matches[:, 0], None, :2].astype(np.float64), matrix
    )[:, 0]
    errors = np.linalg.norm(moved - keypoints[matches[:, 1], :2], axis=1)
    return int(np.count_nonzero(errors < threshold))


@pytest.mark.parametrize(
    ("kind", "model"),
    [
        ("rotation", "affine"),
        ("rotation", "similarity"),
        ("scale and crop", "affine"),
        ("perspective", "homography"),
    ],
)
@pytest.mark.parametrize("name", ["astronaut.jpg", "coffee.jpg"])
@pytest.mark.parametrize("matching", ["ratio", "mutual"])
def test_inliers_of_a_warped_copy_are_the_matches_the_warp_explains(
    photos, name, kind, model, matching
):
    query_keypoints, query = photos[name]
    matrix, keypoints, descriptors = warped_features(name, kind)
    inliers = count_inliers(
        query_keypoints, query, keypoints, descriptors, model=model, matching=matching
    )
    matches = match_descriptors(query, descriptors, matching=matching)
    expected = ground_truth_inliers(
        query_keypoints, keypoints, matches, matrix, REPROJECTION_THRESHOLD
    )
    assert expected >= 30
    assert abs(inliers - expected) <= max(3, 0.1 * expected), (inliers, expected)


def test_an_affine_model_explains_most_of_a_perspective_warp(photos):
    query_keypoints, query = photos["chelsea.jpg"]
    _, keypoints, descriptors = warped_features("chelsea.jpg", "perspective")
    inliers = count_inliers(
        query_keypoints, query, keypoints, descriptors, model="affine"
    )
    assert inliers >= 30


@pytest.mark.parametrize("model", ["fundamental", "affine", "similarity", "homography"])
def test_unrelated_photos_get_few_inliers(photos, model):
    for name, (query_keypoints, query) in photos.items():
        for other, (keypoints, descriptors) in photos.items():
            if other != name:
                inliers = count_inliers(
                    query_keypoints, query, keypoints, descriptors, model=model
                )
                assert inliers < MIN_INLIERS, (name, other, inliers)


def test_inlier_counts_do_not_depend_on_opencvs_random_state(photos):
    query_keypoints, query = photos["camera.png"]
    _, keypoints, descriptors = warped_features("camera.png", "perspective")
    counts = set()
    for seed in (0, 1, 12345):
        cv2.setRNGSeed(seed)
        for model in ("fundamental", "affine", "homography"):
            counts.add(
                (
                    model,
                    count_inliers(
                        query_keypoints, query, keypoints, descriptors, model=model
                    ),
                )
            )
    assert len(counts) == 3


def test_too_few_matches_count_no_inliers(photos):
    query_keypoints, query = photos["chelsea.jpg"]
    _, keypoints, descriptors = warped_features("chelsea.jpg", "rotation")
    n_matches = len(match_descriptors(query, descriptors))
    arguments = (query_keypoints, query, keypoints, descriptors)
    assert count_inliers(*arguments, min_matches=n_matches) > 0
    assert count_inliers(*arguments, min_matches=n_matches + 1) == 0
    assert count_inliers(query_keypoints[:0], query[:0], keypoints, descriptors) == 0


def reference_rerank(candidates, inliers_of, depth, min_inliers):
    """The re-ranking, by Python's stable sort on plain lists."""
    verified = list(candidates[:depth])
    strong = sorted(
        (c for c in verified if inliers_of[c] >= min_inliers),
        key=lambda c: -inliers_of[c],
    )
    rest = [c for c in candidates if c not in strong]
    ranking = strong + rest
    inliers = [inliers_of[c] if c in verified else -1 for c in ranking]
    return ranking, inliers


def planted_database(copies: list[int], seed: int):
    """A query, and a database whose image ``t`` holds ``copies[t]`` of the
    query's descriptors at the query's positions among 3 random ones."""
    rng = np.random.default_rng(seed)
    query = rng.normal(size=(16, 128)).astype(np.float32)
    query_keypoints = np.column_stack(
        [rng.uniform(0, 500, size=(16, 2)), np.full(16, 4.0), np.zeros(16)]
    )
    descriptors, keypoints = [], []
    for n_copies in copies:
        rows = rng.choice(16, size=n_copies, replace=False)
        descriptors.append(
            np.vstack([query[rows], rng.normal(size=(3, 128)).astype(np.float32)])
        )
        keypoints.append(
            np.vstack([query_keypoints[rows], rng.uniform(0, 500, size=(3, 4))])
        )
    database = vlad.DescriptorSets.from_list(descriptors, keypoints=keypoints)
    return query_keypoints, query, database


@settings(max_examples=25, deadline=None)
@given(
    copies=st.lists(st.integers(0, 12), min_size=1, max_size=7),
    depth=st.one_of(st.none(), st.integers(0, 8)),
    min_inliers=st.integers(1, 10),
    data=st.data(),
)
def test_rerank_orders_as_a_plain_sort(copies, depth, min_inliers, data):
    query_keypoints, query, database = planted_database(copies, seed=len(copies))
    candidates = data.draw(st.permutations(range(len(copies))))
    inliers_of = {
        t: count_inliers(
            query_keypoints,
            query,
            database.keypoints_of(t),
            database[t],
            model="affine",
            min_matches=3,
        )
        for t in range(len(copies))
    }
    # Exact copies at the same place: the identity explains every one of them.
    assert inliers_of == {t: n if n >= 3 else 0 for t, n in enumerate(copies)}
    ranking, inliers = spatial_rerank(
        query_keypoints,
        query,
        candidates,
        database,
        depth=depth,
        model="affine",
        min_inliers=min_inliers,
        n_jobs=1,
    )
    expected_ranking, expected_inliers = reference_rerank(
        candidates, inliers_of, len(candidates) if depth is None else depth, min_inliers
    )
    assert ranking.tolist() == expected_ranking
    assert inliers.tolist() == expected_inliers


@pytest.fixture(scope="module")
def photo_database(photo_sets):
    """The bundled photos at FAST_OPTIONS, with keypoints."""
    return photo_sets


def test_rerank_puts_the_warped_photo_first_whatever_n_jobs(photo_database):
    _, keypoints, descriptors = warped_features("coffee.jpg", "rotation")
    candidates = np.arange(len(photo_database))[::-1]
    one = spatial_rerank(keypoints, descriptors, candidates, photo_database, n_jobs=1)
    two = spatial_rerank(keypoints, descriptors, candidates, photo_database, n_jobs=2)
    np.testing.assert_array_equal(one[0], two[0])
    np.testing.assert_array_equal(one[1], two[1])
    ranking, inliers = one
    assert photo_database.names[ranking[0]] == "coffee.jpg"
    assert inliers[0] >= 30 and inliers[1:].max() < MIN_INLIERS
    # The unverified rest keeps its order.
    np.testing.assert_array_equal(ranking[1:], candidates[candidates != ranking[0]])


def test_rerank_needs_keypoints(photo_database):
    without = vlad.DescriptorSets(photo_database.descriptors, photo_database.offsets)
    query = photo_database[0]
    with pytest.raises(ValueError, match="^database holds no keypoint positions; "):
        spatial_rerank(photo_database.keypoints_of(0), query, [0], without)
    with pytest.raises(ValueError, match="^query_keypoints is None: the query holds"):
        spatial_rerank(None, query, [0], photo_database)


@pytest.mark.parametrize(
    ("settings_", "error", "message"),
    [
        ({"candidates": [0, 8]}, ValueError, r"rows of the database, in \[0, 8\)"),
        ({"candidates": [0.5]}, TypeError, "candidates must hold integer"),
        ({"candidates": [[0]]}, ValueError, "candidates must be a 1-D array"),
        ({"depth": -1}, ValueError, "depth must be None or an integer >= 0"),
        ({"model": "rigid"}, ValueError, r"model must be one of \['fundamental'"),
        ({"matching": "knn"}, ValueError, r"matching must be one of \['mutual'"),
        ({"ratio": 0}, ValueError, r"ratio must be a number in \(0, 1\]"),
        ({"reprojection_threshold": -1}, ValueError, "reprojection_threshold must"),
        ({"min_inliers": 0}, ValueError, "min_inliers must be an integer >= 1"),
        ({"n_jobs": 0}, ValueError, "n_jobs must be None"),
        ({"query_keypoints": np.zeros((3, 4))}, ValueError, "query_keypoints must"),
        ({"query_descriptors": np.zeros((5, 64))}, ValueError, "64 features"),
    ],
)
def test_bad_arguments_name_the_parameter(photo_database, settings_, error, message):
    arguments = {
        "query_keypoints": np.zeros((5, 4)),
        "query_descriptors": np.zeros((5, 128)),
        "candidates": [0, 1],
        "database": photo_database,
        **settings_,
    }
    with pytest.raises(error, match=message):
        spatial_rerank(**arguments)


def test_count_inliers_checks_its_arguments():
    keypoints, descriptors = np.zeros((3, 4)), np.eye(3, 8)
    with pytest.raises(ValueError, match=r"keypoints must have shape \(3, 4\)"):
        count_inliers(keypoints, descriptors, keypoints[:2], descriptors)
    with pytest.raises(ValueError, match="min_matches must be an integer >= 1"):
        count_inliers(keypoints, descriptors, keypoints, descriptors, min_matches=0)
    with pytest.raises(ValueError, match="have 8 features but descriptors have 4"):
        count_inliers(keypoints, descriptors, keypoints, descriptors[:, :4])
