"""The inlier correspondences of spatial verification:
vlad.verification._spatial.inlier_matches."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
from photos import DATA, FAST_OPTIONS

from vlad.images._files import read_image
from vlad.images._sift import SiftOptions, extract_keypoints_with_options
from vlad.verification._spatial import (
    REPROJECTION_THRESHOLD,
    count_inliers,
    inlier_matches,
    match_descriptors,
)

OPTIONS = SiftOptions(**FAST_OPTIONS)


def test_a_hand_made_pair_keeps_exactly_the_consistent_matches():
    """Twenty distinct descriptors; the candidate holds the same ones, fifteen
    at the query's positions moved by a known affine map and five far from
    where it sends them: the fifteen, and only they, are inliers."""
    rng = np.random.default_rng(0)
    descriptors = np.eye(20, 32, dtype=np.float32) * 10
    query_points = rng.uniform(0, 400, size=(20, 2))
    affine = np.array([[0.9, -0.2, 30.0], [0.25, 1.1, -12.0]])
    moved = query_points @ affine[:, :2].T + affine[:, 2]
    moved[15:] += rng.choice([-1, 1], size=(5, 2)) * rng.uniform(60, 120, (5, 2))
    # The candidate lists its keypoints in another order.
    order = rng.permutation(20)
    pairs = inlier_matches(
        query_points, descriptors, moved[order], descriptors[order], model="affine"
    )
    expected = [[row, int(np.flatnonzero(order == row)[0])] for row in range(15)]
    assert pairs.dtype == np.int64
    assert pairs.tolist() == expected


@pytest.mark.parametrize("name", ["astronaut.jpg", "chelsea.jpg", "coffee.jpg"])
def test_every_inlier_lands_where_the_known_warp_sends_it(name):
    image = read_image(DATA / name)
    height, width = image.shape
    matrix = np.vstack(
        [cv2.getRotationMatrix2D((width / 2, height / 2), 20, 0.8), [0, 0, 1]]
    )
    warped = cv2.warpPerspective(image, matrix, (width, height))
    query = extract_keypoints_with_options(image, OPTIONS)
    candidate = extract_keypoints_with_options(warped, OPTIONS)
    pairs = inlier_matches(*query, *candidate, model="affine")
    assert len(pairs) == count_inliers(*query, *candidate, model="affine") > 20
    # Each is a mutual match, and no candidate keypoint is used twice.
    matches = {tuple(pair) for pair in match_descriptors(query[1], candidate[1])}
    assert {tuple(pair) for pair in pairs.tolist()} <= matches
    assert len(set(pairs[:, 1].tolist())) == len(pairs)
    # By query index, as match_descriptors orders them.
    assert (np.diff(pairs[:, 0]) > 0).all()
    sent = cv2.perspectiveTransform(
        query[0][pairs[:, 0], None, :2].astype(np.float64), matrix
    )[:, 0]
    error = np.linalg.norm(sent - candidate[0][pairs[:, 1], :2], axis=1)
    # RANSAC's model is not the true warp, but close to it.
    assert np.median(error) < 2 and error.max() < 2 * REPROJECTION_THRESHOLD


def test_too_few_matches_give_no_pairs():
    descriptors = np.eye(2, 8, dtype=np.float32)
    points = np.array([[0.0, 0.0], [10.0, 5.0]])
    pairs = inlier_matches(points, descriptors, points, descriptors)
    assert pairs.shape == (0, 2) and pairs.dtype == np.int64
    assert count_inliers(points, descriptors, points, descriptors) == 0


def test_bad_parameters_are_refused_as_count_inliers_refuses_them():
    points = np.zeros((3, 2))
    descriptors = np.eye(3, 8, dtype=np.float32)
    with pytest.raises(ValueError, match="model must be one of .*; got 'rigid'"):
        inlier_matches(points, descriptors, points, descriptors, model="rigid")
    with pytest.raises(ValueError, match="features"):
        inlier_matches(points, descriptors, points, descriptors[:, :4])
