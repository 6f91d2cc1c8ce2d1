"""Matchings and geometric models of spatial verification on synthetic scenes
with known geometry: vlad.verification._spatial."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import vlad.verification._matching
from vlad.verification._spatial import (
    EPIPOLAR_THRESHOLD,
    MATCHINGS,
    inlier_matches,
    match_descriptors,
)

#: Both synthetic cameras: 500 pixels focal length, 640 x 480 images.
CAMERA = np.array([[500.0, 0.0, 320.0], [0.0, 500.0, 240.0], [0.0, 0.0, 1.0]])


def reference_mutual(query, descriptors, ratio=None):
    """Mutual nearest neighbours (and the ratio test) by plain loops in
    float64; ties go to the lowest index, as argmin gives them."""
    query = np.asarray(query, dtype=np.float64)
    descriptors = np.asarray(descriptors, dtype=np.float64)
    if len(query) == 0 or len(descriptors) < (1 if ratio is None else 2):
        return np.zeros((0, 2), dtype=np.int64)
    pairs = []
    for q, row in enumerate(query):
        distances = [np.sqrt(((row - other) ** 2).sum()) for other in descriptors]
        nearest = int(np.argmin(distances))
        back = [np.sqrt(((descriptors[nearest] - other) ** 2).sum()) for other in query]
        if int(np.argmin(back)) != q:
            continue
        if ratio is not None:
            second = sorted(distances)[1]
            if not distances[nearest] < ratio * second:
                continue
        pairs.append((q, nearest))
    return np.array(pairs, dtype=np.int64).reshape(-1, 2)


@settings(max_examples=80, deadline=None)
@given(
    n_query=st.integers(0, 12),
    n_candidate=st.integers(0, 12),
    n_features=st.integers(1, 5),
    matching=st.sampled_from(["mutual", "mutual+ratio"]),
    ratio=st.sampled_from([0.7, 1.0]),
    block=st.sampled_from([1, 7, 1 << 24]),
    seed=st.integers(0, 2**16),
)
def test_mutual_matches_are_those_of_a_plain_loop(
    n_query, n_candidate, n_features, matching, ratio, block, seed
):
    # Small integers: float32 products are exact, ties are real ties and go to
    # the lowest index both ways; blocks of a few rows meet across blocks.
    rng = np.random.default_rng(seed)
    query = rng.integers(0, 3, size=(n_query, n_features))
    descriptors = rng.integers(0, 3, size=(n_candidate, n_features))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(vlad.verification._matching, "_PRODUCT_BLOCK", block)
        found = match_descriptors(query, descriptors, matching=matching, ratio=ratio)
    expected = reference_mutual(
        query, descriptors, ratio if matching == "mutual+ratio" else None
    )
    assert found.dtype == np.int64
    np.testing.assert_array_equal(found, expected)


@settings(max_examples=60, deadline=None)
@given(
    n_query=st.integers(1, 10),
    n_candidate=st.integers(1, 10),
    repeats=st.lists(st.integers(0, 9), max_size=6),
    block=st.sampled_from([1, 3, 1 << 24]),
    seed=st.integers(0, 2**16),
)
def test_repeated_descriptors_tie_as_a_plain_loop(
    n_query, n_candidate, repeats, block, seed
):
    # Repeated rows on either side tie exactly: a candidate's nearest is the
    # first of them, whether or not that one is mutual.
    rng = np.random.default_rng(seed)
    query = rng.integers(0, 4, size=(n_query, 3))
    descriptors = rng.integers(0, 4, size=(n_candidate, 3))
    query = np.concatenate([query, query[[r % n_query for r in repeats]]])
    descriptors = np.concatenate(
        [descriptors, descriptors[[r % n_candidate for r in repeats[::-1]]]]
    )
    rng.shuffle(query)
    for matching in ("mutual", "mutual+ratio"):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(vlad.verification._matching, "_PRODUCT_BLOCK", block)
            found = match_descriptors(query, descriptors, matching=matching)
        ratio = 0.8 if matching == "mutual+ratio" else None
        np.testing.assert_array_equal(
            found, reference_mutual(query, descriptors, ratio)
        )


@pytest.mark.parametrize("matching", ["mutual", "mutual+ratio"])
def test_mutual_matches_of_unit_rows_are_those_of_a_plain_loop(matching):
    # Unit rows (RootSIFT's) take the path where norms drop out of the argmax.
    rng = np.random.default_rng(3)
    query = rng.normal(size=(60, 16))
    descriptors = rng.normal(size=(45, 16))
    query /= np.linalg.norm(query, axis=1, keepdims=True)
    descriptors /= np.linalg.norm(descriptors, axis=1, keepdims=True)
    ratio = 0.9 if matching == "mutual+ratio" else None
    found = match_descriptors(query, descriptors, matching=matching, ratio=0.9)
    np.testing.assert_array_equal(found, reference_mutual(query, descriptors, ratio))
    assert len(found) > 5


def project(points: np.ndarray, rotation: np.ndarray, centre: np.ndarray):
    """Pixel positions of 3-D points seen by CAMERA at ``centre``, turned by
    ``rotation``."""
    seen = (points - centre) @ rotation.T @ CAMERA.T
    return seen[:, :2] / seen[:, 2:]


def turned(degrees: float) -> np.ndarray:
    """A rotation about the vertical axis."""
    angle = np.radians(degrees)
    return np.array(
        [
            [np.cos(angle), 0.0, np.sin(angle)],
            [0.0, 1.0, 0.0],
            [-np.sin(angle), 0.0, np.cos(angle)],
        ]
    )


def two_views(points: np.ndarray, seed: int, n_repeated: int = 40):
    """Keypoints and descriptors of two views of ``points``, a rigid scene
    seen from two places, and the true matches ``[[query_row, row], ...]``.

    Each point has its own descriptor in both views (with a little noise).
    Both views add 80 keypoints of their own (clutter) and ``n_repeated``
    more of one repeated texture, windows of a facade: nearly the same
    descriptor at different places, which nearest neighbours pair at random.
    """
    rng = np.random.default_rng(seed)
    n_points = len(points)
    own = rng.normal(size=(n_points, 128))
    window = rng.normal(size=128)
    views = []
    for rotation, centre in [(np.eye(3), np.zeros(3)), (turned(-12.0), [1.2, 0.1, 0])]:
        positions = project(points, rotation, np.asarray(centre))
        descriptors = own + 0.05 * rng.normal(size=own.shape)
        clutter = rng.normal(size=(80, 128))
        repeated = window + 0.05 * rng.normal(size=(n_repeated, 128))
        extra = rng.uniform([0, 0], [640, 480], size=(80 + n_repeated, 2))
        rows = np.vstack([descriptors, clutter, repeated])
        rows /= np.linalg.norm(rows, axis=1, keepdims=True)
        # The candidate lists its keypoints in another order.
        order = rng.permutation(len(rows)) if views else np.arange(len(rows))
        keypoints = np.vstack([positions, extra])
        views.append((keypoints[order], rows[order].astype(np.float32), order))
    (query_keypoints, query, _), (keypoints, descriptors, order) = views
    where = np.argsort(order)
    truth = np.column_stack([np.arange(n_points), where[:n_points]])
    return query_keypoints, query, keypoints, descriptors, truth


def scene_points(n_points: int, seed: int) -> np.ndarray:
    """Points of a 3-D scene 4 to 9 units in front of the first camera."""
    rng = np.random.default_rng(seed)
    depth = rng.uniform(4.0, 9.0, size=n_points)
    pixels = rng.uniform([40, 40], [600, 440], size=(n_points, 2))
    rays = np.column_stack([pixels, np.ones(n_points)]) @ np.linalg.inv(CAMERA).T
    return rays * depth[:, None]


def epipolar_distances(fundamental, sources, targets):
    """Distance of each target from the epipolar line of its source."""
    lines = np.column_stack([sources, np.ones(len(sources))]) @ fundamental.T
    residual = np.einsum(
        "ij,ij->i", lines, np.column_stack([targets, np.ones(len(targets))])
    )
    return np.abs(residual) / np.linalg.norm(lines[:, :2], axis=1)


def true_fundamental(rotation: np.ndarray, centre: np.ndarray) -> np.ndarray:
    """F of the first camera and one at ``centre`` turned by ``rotation``:
    K^-T [t]x R K^-1, with t = -R centre."""
    t = -rotation @ centre
    cross = np.array([[0, -t[2], t[1]], [t[2], 0, -t[0]], [-t[1], t[0], 0]])
    inverse = np.linalg.inv(CAMERA)
    return inverse.T @ cross @ rotation @ inverse


@pytest.mark.parametrize("matching", ["mutual", "mutual+ratio"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_fundamental_matrix_keeps_the_true_matches_of_a_3d_scene(seed, matching):
    points = scene_points(150, seed)
    query_keypoints, query, keypoints, descriptors, truth = two_views(points, seed)
    # The known geometry puts every true match on its epipolar line.
    fundamental = true_fundamental(turned(-12.0), np.array([1.2, 0.1, 0.0]))
    distances = epipolar_distances(
        fundamental, query_keypoints[truth[:, 0]], keypoints[truth[:, 1]]
    )
    assert distances.max() < 1e-6
    pairs = inlier_matches(
        query_keypoints, query, keypoints, descriptors, matching=matching
    )
    found = {tuple(pair) for pair in pairs.tolist()}
    true = {tuple(pair) for pair in truth.tolist()}
    assert len(found & true) >= 0.95 * len(true)
    # A wrong match lies within the threshold of its epipolar line by chance
    # (about 2 pixels of a 600-pixel line): a few at most.
    assert len(found - true) <= 4, len(found - true)
    wrong = np.array(sorted(found - true), dtype=np.int64).reshape(-1, 2)
    close = epipolar_distances(
        fundamental, query_keypoints[wrong[:, 0]], keypoints[wrong[:, 1]]
    )
    assert (close < 3 * EPIPOLAR_THRESHOLD).all()


def test_a_homography_keeps_the_true_matches_of_a_plane():
    rng = np.random.default_rng(5)
    pixels = rng.uniform([40, 40], [600, 440], size=(150, 2))
    rays = np.column_stack([pixels, np.ones(150)]) @ np.linalg.inv(CAMERA).T
    # A wall leaning away: depth grows from left to right.
    plane = rays * (5.0 / (1.0 - 0.3 * rays[:, :1]))
    query_keypoints, query, keypoints, descriptors, truth = two_views(plane, 5)
    pairs = inlier_matches(
        query_keypoints, query, keypoints, descriptors, model="homography"
    )
    found = {tuple(pair) for pair in pairs.tolist()}
    true = {tuple(pair) for pair in truth.tolist()}
    assert len(found & true) >= 0.95 * len(true)
    assert len(found - true) <= 2


def test_mutual_matching_does_not_pile_matches_on_a_repeated_texture():
    points = scene_points(100, 7)
    query_keypoints, query, keypoints, descriptors, truth = two_views(points, 7, 60)
    pairs = match_descriptors(query, descriptors)
    # One match per descriptor of either image.
    assert len(set(pairs[:, 0].tolist())) == len(pairs)
    assert len(set(pairs[:, 1].tolist())) == len(pairs)
    assert {tuple(pair) for pair in truth.tolist()} <= {
        tuple(pair) for pair in pairs.tolist()
    }


@pytest.mark.parametrize("matching", sorted(MATCHINGS))
def test_fundamental_inliers_do_not_depend_on_opencvs_random_state(matching):
    import cv2

    points = scene_points(60, 9)
    views = two_views(points, 9)[:4]
    counts = set()
    for seed in (0, 1, 12345):
        cv2.setRNGSeed(seed)
        counts.add(len(inlier_matches(*views, matching=matching)))
    assert len(counts) == 1


def test_unknown_matching_is_refused():
    points = np.zeros((3, 2))
    descriptors = np.eye(3, 8, dtype=np.float32)
    message = (
        r"^matching must be one of \['mutual', 'mutual\+ratio', 'ratio'\]; got 'best'$"
    )
    with pytest.raises(ValueError, match=message):
        inlier_matches(points, descriptors, points, descriptors, matching="best")
    with pytest.raises(ValueError, match=message):
        match_descriptors(descriptors, descriptors, matching="best")


def with_sizes(keypoints: np.ndarray, large: np.ndarray) -> np.ndarray:
    """Keypoints as (x, y, size, angle): size 8 at rows ``large``, else 2."""
    sizes = np.full(len(keypoints), 2.0)
    sizes[large] = 8.0
    return np.column_stack([keypoints, sizes, np.zeros(len(keypoints))])


def test_the_largest_keypoints_are_matched_and_reported_as_rows_of_all():
    points = scene_points(120, 11)
    query_keypoints, query, keypoints, descriptors, truth = two_views(points, 11)
    # The scene's points are the large keypoints; clutter and texture small.
    query_keypoints = with_sizes(query_keypoints, truth[:, 0])
    keypoints = with_sizes(keypoints, truth[:, 1])
    pairs = inlier_matches(
        query_keypoints, query, keypoints, descriptors, verify_keypoints=120
    )
    # Rows of the keypoints given, not of the 120 kept.
    assert {tuple(pair) for pair in pairs.tolist()} == {
        tuple(pair) for pair in truth.tolist()
    }
    everything = inlier_matches(
        query_keypoints, query, keypoints, descriptors, verify_keypoints=None
    )
    assert len(everything) >= len(pairs)
    # Keypoints without sizes are all kept.
    assert np.array_equal(
        inlier_matches(
            query_keypoints[:, :2],
            query,
            keypoints[:, :2],
            descriptors,
            verify_keypoints=8,
        ),
        everything,
    )


@pytest.mark.parametrize("verify_keypoints", [-1, 1, 7, 2.5, True])
def test_verify_keypoints_below_a_sample_is_refused(verify_keypoints):
    points = np.zeros((3, 2))
    descriptors = np.eye(3, 8, dtype=np.float32)
    message = (
        r"^verify_keypoints must be None, 0 \(every keypoint\) or an integer >= 8; "
        f"got {verify_keypoints!r}$"
    )
    with pytest.raises(ValueError, match=message):
        inlier_matches(
            points, descriptors, points, descriptors, verify_keypoints=verify_keypoints
        )


def test_verify_keypoints_0_matches_every_keypoint_as_none_does():
    points = scene_points(60, 5)
    views = two_views(points, 5)[:4]
    assert np.array_equal(
        inlier_matches(*views, verify_keypoints=0),
        inlier_matches(*views, verify_keypoints=None),
    )


def test_max_keypoints_is_the_deprecated_name_of_verify_keypoints():
    points = scene_points(120, 11)
    query_keypoints, query, keypoints, descriptors, truth = two_views(points, 11)
    query_keypoints = with_sizes(query_keypoints, truth[:, 0])
    keypoints = with_sizes(keypoints, truth[:, 1])
    views = (query_keypoints, query, keypoints, descriptors)
    with pytest.warns(DeprecationWarning, match="max_keypoints was renamed"):
        old = inlier_matches(*views, max_keypoints=120)
    assert np.array_equal(old, inlier_matches(*views, verify_keypoints=120))
    # The value reaches verify_keypoints' check.
    with pytest.warns(DeprecationWarning), pytest.raises(ValueError, match="^verify_k"):
        inlier_matches(*views, max_keypoints=7)
    with pytest.raises(TypeError, match="give verify_keypoints only"):
        inlier_matches(*views, max_keypoints=120, verify_keypoints=120)
