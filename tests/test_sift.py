"""SIFT and RootSIFT descriptors of one image: vlad.images._sift."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
from photos import DATA

from vlad.images._files import read_image
from vlad.images._sift import (
    DENSE_MIN_STEP,
    DENSE_SIZES,
    SiftOptions,
    extract_keypoints_with_options,
    extract_sift,
    extract_with_options,
    root_sift,
)


@pytest.fixture(scope="module")
def gravel():
    return read_image(DATA / "gravel.jpg")


@pytest.fixture(scope="module")
def gravel_sift(gravel):
    """Every plain SIFT descriptor of the gravel photo."""
    return extract_sift(gravel, root_sift=False, max_keypoints=0)


@pytest.fixture(scope="module")
def opencv_gravel(gravel):
    """OpenCV's own SIFT keypoints and descriptors of the gravel photo."""
    return cv2.SIFT_create().detectAndCompute(gravel, None)


def test_plain_sift_is_opencv_sift(gravel_sift, opencv_gravel):
    _, expected = opencv_gravel
    np.testing.assert_array_equal(gravel_sift, expected)
    assert gravel_sift.dtype == np.float32 and gravel_sift.shape[1] == 128


def test_root_sift_is_the_square_root_of_l1_normalised_sift(gravel, gravel_sift):
    descriptors = extract_sift(gravel, max_keypoints=0)
    expected = np.sqrt(gravel_sift / gravel_sift.sum(axis=1, keepdims=True))
    np.testing.assert_allclose(descriptors, expected, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(np.linalg.norm(descriptors, axis=1), 1.0, rtol=1e-5)
    assert descriptors.dtype == np.float32 and descriptors.min() >= 0.0


def test_root_sift_keeps_zero_rows_zero():
    np.testing.assert_array_equal(root_sift(np.zeros((2, 4))), np.zeros((2, 4)))


def test_root_sift_refuses_negative_values():
    with pytest.raises(ValueError, match="non-negative"):
        root_sift([[1.0, -1.0]])


@pytest.mark.parametrize("max_keypoints", [1, 100, 1000])
def test_max_keypoints_keeps_the_strongest(gravel, gravel_sift, max_keypoints):
    keypoints = cv2.SIFT_create().detect(gravel, None)
    assert len(keypoints) > max_keypoints
    kept = extract_sift(gravel, root_sift=False, max_keypoints=max_keypoints)
    assert kept.shape == (max_keypoints, 128)
    all_rows = {row.tobytes(): index for index, row in enumerate(gravel_sift)}
    kept_indices = [all_rows[row.tobytes()] for row in kept]
    responses = np.array([keypoint.response for keypoint in keypoints])
    weakest_kept = responses[kept_indices].min()
    dropped = np.setdiff1d(np.arange(len(keypoints)), kept_indices)
    assert responses[dropped].max() <= weakest_kept


def test_max_side_shrinks_large_images_first(gravel):
    large = cv2.resize(gravel, (1536, 1024), interpolation=cv2.INTER_CUBIC)
    shrunk = cv2.resize(large, (768, 512), interpolation=cv2.INTER_AREA)
    np.testing.assert_array_equal(
        extract_sift(large, max_side=768), extract_sift(shrunk, max_side=0)
    )


def test_max_side_leaves_small_images_alone(gravel):
    np.testing.assert_array_equal(
        extract_sift(gravel, max_side=512), extract_sift(gravel, max_side=0)
    )


def test_a_textureless_image_has_no_keypoints_but_dense_descriptors():
    blank = np.full((240, 320), 128, np.uint8)
    assert extract_sift(blank).shape == (0, 128)
    dense = extract_sift(blank, dense=True, max_keypoints=200)
    assert dense.shape[0] > 0 and np.isfinite(dense).all()


@pytest.mark.parametrize("max_keypoints", [3, 100, 1000, 0])
def test_dense_grid_fits_the_keypoint_budget(gravel, max_keypoints):
    corner = gravel[:160, :160]
    descriptors = extract_sift(corner, dense=True, max_keypoints=max_keypoints)
    if max_keypoints:
        assert len(DENSE_SIZES) <= len(descriptors) <= max_keypoints
    else:
        assert len(descriptors) == len(DENSE_SIZES) * (160 // DENSE_MIN_STEP) ** 2
    assert len(descriptors) % len(DENSE_SIZES) == 0
    np.testing.assert_allclose(np.linalg.norm(descriptors, axis=1), 1.0, rtol=1e-5)


# test_dense_grid_fits_the_keypoint_budget is the default run's.
@pytest.mark.slow
def test_dense_grid_uses_most_of_the_budget(gravel):
    assert 1500 < len(extract_sift(gravel, dense=True, max_keypoints=2000)) <= 2000


def test_colour_arrays_are_described_in_grey():
    bgr = cv2.imread(str(DATA / "coffee.jpg"))
    grey = cv2.cvtColor(bgr, cv2.COLOR_BGR2GRAY)
    np.testing.assert_array_equal(
        extract_sift(bgr[:, :, ::-1], max_keypoints=200),
        extract_sift(grey, max_keypoints=200),
    )


def test_extraction_is_deterministic(gravel):
    np.testing.assert_array_equal(extract_sift(gravel), extract_sift(gravel))


@pytest.mark.parametrize("shape", [(1, 1), (2, 3), (16, 16)])
def test_tiny_images_do_not_fail(shape):
    descriptors = extract_sift(np.zeros(shape, np.uint8), dense=True)
    assert descriptors.ndim == 2 and descriptors.shape[1] == 128


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"max_side": -1}, ValueError, "max_side must be an integer >= 0"),
        ({"max_keypoints": 2.5}, TypeError, "max_keypoints must be an integer"),
        ({"root_sift": "yes"}, TypeError, "root_sift must be True, False or None"),
        ({"dense": 1}, TypeError, "dense must be True or False"),
    ],
)
def test_bad_options_name_the_parameter(options, error, message):
    with pytest.raises(error, match=message):
        SiftOptions(**options)
    with pytest.raises(error, match=message):
        extract_sift(np.zeros((8, 8), np.uint8), **options)


def test_options_round_trip_through_their_record():
    options = SiftOptions(root_sift=False, dense=True, max_side=300, max_keypoints=7)
    record = options.record()
    assert record["extractor"] == "opencv-sift"
    assert record["opencv_version"] == cv2.__version__
    assert SiftOptions.from_record(record) == options
    assert SiftOptions.from_record({}) is None
    assert SiftOptions.from_record({"extractor": "something else"}) is None


def test_options_describe_their_kind():
    assert SiftOptions().kind == "RootSIFT at detected keypoints"
    assert SiftOptions(root_sift=False, dense=True).kind == "SIFT on a dense grid"


def opencv_keypoints(keypoints) -> np.ndarray:
    """(x, y, size, angle) rows of OpenCV keypoints, in float64."""
    return np.array([(*k.pt, k.size, k.angle) for k in keypoints]).reshape(-1, 4)


def test_keypoints_are_opencv_keypoints_beside_their_descriptors(gravel, opencv_gravel):
    options = SiftOptions(root_sift=False, max_side=0, max_keypoints=0)
    keypoints, descriptors = extract_keypoints_with_options(gravel, options)
    expected_keypoints, expected = opencv_gravel
    np.testing.assert_array_equal(descriptors, expected)
    np.testing.assert_allclose(keypoints, opencv_keypoints(expected_keypoints))
    assert keypoints.dtype == np.float32 and keypoints.flags.c_contiguous


@pytest.mark.parametrize(
    "options",
    [SiftOptions(), SiftOptions(root_sift=False, dense=True, max_keypoints=300)],
)
def test_extract_with_options_is_the_descriptors_of_the_keypoint_version(
    gravel, options
):
    keypoints, descriptors = extract_keypoints_with_options(gravel, options)
    np.testing.assert_array_equal(extract_with_options(gravel, options), descriptors)
    assert keypoints.shape == (len(descriptors), 4)


@pytest.fixture(scope="module")
def gravel_keypoints(gravel):
    """Every plain SIFT keypoint of the gravel photo and its descriptor."""
    every = SiftOptions(root_sift=False, max_side=0, max_keypoints=0)
    return extract_keypoints_with_options(gravel, every)


@pytest.mark.parametrize("max_keypoints", [1, 100, 1000])
def test_max_keypoints_keeps_the_keypoints_of_the_kept_descriptors(
    gravel, gravel_keypoints, max_keypoints
):
    all_keypoints, all_descriptors = gravel_keypoints
    options = SiftOptions(root_sift=False, max_side=0, max_keypoints=max_keypoints)
    keypoints, descriptors = extract_keypoints_with_options(gravel, options)
    # Each (keypoint, descriptor) row of the capped extraction is a row of the
    # full one: the cap drops keypoints and descriptors together.
    rows = {
        (k.tobytes(), d.tobytes()): index
        for index, (k, d) in enumerate(zip(all_keypoints, all_descriptors, strict=True))
    }
    indices = [
        rows[(k.tobytes(), d.tobytes())]
        for k, d in zip(keypoints, descriptors, strict=True)
    ]
    assert len(set(indices)) == max_keypoints


def test_keypoints_of_a_shrunk_image_are_in_original_coordinates(gravel):
    large = cv2.resize(gravel, (768, 500), interpolation=cv2.INTER_CUBIC)
    options = SiftOptions(root_sift=False, max_side=384, max_keypoints=0)
    keypoints, descriptors = extract_keypoints_with_options(large, options)
    # By hand: shrink, detect, then map pixel centres back through the resize.
    shrunk = cv2.resize(large, (384, 250), interpolation=cv2.INTER_AREA)
    found, expected_descriptors = cv2.SIFT_create().detectAndCompute(shrunk, None)
    expected = opencv_keypoints(found)
    scale_x, scale_y = 768 / 384, 500 / 250
    expected[:, 0] = (expected[:, 0] + 0.5) * scale_x - 0.5
    expected[:, 1] = (expected[:, 1] + 0.5) * scale_y - 0.5
    expected[:, 2] *= 2.0
    np.testing.assert_array_equal(descriptors, expected_descriptors)
    np.testing.assert_allclose(keypoints, expected, rtol=1e-6, atol=1e-3)


# Full-size SIFT twice: test_max_side_shrinks_large_images_first is the default's.
@pytest.mark.slow
def test_the_same_points_are_found_at_the_same_place_at_two_sizes(gravel):
    """Extraction at max_side 256 and at full size (512) finds many of the same
    points: their positions, scaled back, agree to a pixel or two."""
    options = SiftOptions(root_sift=False, max_keypoints=0)
    full_keypoints, full = extract_keypoints_with_options(gravel, options)
    small_keypoints, small = extract_keypoints_with_options(
        gravel, SiftOptions(root_sift=False, max_side=256, max_keypoints=0)
    )
    assert small_keypoints[:, :2].max() > 256
    matches = cv2.BFMatcher(cv2.NORM_L2, crossCheck=True).match(small, full)
    small_rows = [match.queryIdx for match in matches]
    full_rows = [match.trainIdx for match in matches]
    offsets = small_keypoints[small_rows, :2] - full_keypoints[full_rows, :2]
    distances = np.linalg.norm(offsets, axis=1)
    close = distances < 2.0
    assert close.sum() > 200 and np.median(distances) < 0.5
    size_ratios = small_keypoints[small_rows, 2] / full_keypoints[full_rows, 2]
    assert abs(np.median(size_ratios[close]) - 1.0) < 0.05


def test_dense_keypoints_are_the_grid_in_original_coordinates(gravel):
    options = SiftOptions(dense=True, max_side=256, max_keypoints=0)
    keypoints, descriptors = extract_keypoints_with_options(gravel, options)
    # The 512-pixel photo is described at 256 pixels, on a grid of step 8 there.
    centres = (np.arange(DENSE_MIN_STEP / 2, 256, DENSE_MIN_STEP) + 0.5) * 2 - 0.5
    expected = np.array(
        [
            (x, y, 2 * size, 0.0)
            for size in DENSE_SIZES
            for y in centres
            for x in centres
        ]
    )
    assert len(descriptors) == len(expected)
    np.testing.assert_allclose(keypoints, expected)


def test_images_without_keypoints_have_empty_keypoints():
    keypoints, descriptors = extract_keypoints_with_options(
        np.full((64, 64), 128, np.uint8), SiftOptions()
    )
    assert keypoints.shape == (0, 4) and descriptors.shape == (0, 128)
    keypoints, _ = extract_keypoints_with_options(
        np.zeros((2, 3), np.uint8), SiftOptions(dense=True)
    )
    assert keypoints.shape == (0, 4) and keypoints.dtype == np.float32


@pytest.fixture(scope="module")
def chelsea():
    return read_image(DATA / "chelsea.jpg")


def test_affine_views_are_opencv_affine_feature(chelsea):
    options = SiftOptions(root_sift=False, max_side=0, max_keypoints=0, affine_tilts=1)
    keypoints, descriptors = extract_keypoints_with_options(chelsea, options)
    backend = cv2.AffineFeature_create(cv2.SIFT_create(), maxTilt=1)
    expected_keypoints, expected = backend.detectAndCompute(chelsea, None)
    np.testing.assert_array_equal(descriptors, expected)
    expected_keypoints = opencv_keypoints(expected_keypoints)
    height, width = chelsea.shape[:2]
    # Those mapped back a little outside the image are moved to its border.
    np.clip(expected_keypoints[:, 0], -0.5, width - 0.5, out=expected_keypoints[:, 0])
    np.clip(expected_keypoints[:, 1], -0.5, height - 0.5, out=expected_keypoints[:, 1])
    np.testing.assert_allclose(keypoints, expected_keypoints)


def test_affine_views_add_keypoints_to_those_of_the_image(chelsea):
    plain = extract_sift(chelsea, max_keypoints=0)
    affine = extract_sift(chelsea, max_keypoints=0, affine_tilts=1)
    assert affine.shape[1] == plain.shape[1] == 128
    assert len(affine) > 2 * len(plain)
    # The untilted view is the image itself: its RootSIFT descriptors are all there.
    rows = {row.tobytes() for row in affine}
    assert all(row.tobytes() in rows for row in plain)
    np.testing.assert_allclose(np.linalg.norm(affine, axis=1), 1.0, rtol=1e-5)


@pytest.mark.parametrize(
    "max_keypoints", [1, pytest.param(300, marks=pytest.mark.slow)]
)
def test_affine_views_keep_max_keypoints_the_strongest(chelsea, max_keypoints):
    every = SiftOptions(max_keypoints=0, affine_tilts=1)
    _, all_descriptors = extract_keypoints_with_options(chelsea, every)
    options = SiftOptions(max_keypoints=max_keypoints, affine_tilts=1)
    keypoints, descriptors = extract_keypoints_with_options(chelsea, options)
    assert len(keypoints) == len(descriptors) == max_keypoints
    rows = {row.tobytes() for row in all_descriptors}
    assert all(row.tobytes() in rows for row in descriptors)


def test_affine_keypoints_lie_in_the_image(chelsea):
    options = SiftOptions(max_side=256, affine_tilts=2)
    keypoints, _ = extract_keypoints_with_options(chelsea, options)
    height, width = chelsea.shape[:2]
    assert keypoints[:, 0].min() >= -0.5 and keypoints[:, 0].max() <= width - 0.5
    assert keypoints[:, 1].min() >= -0.5 and keypoints[:, 1].max() <= height - 0.5


def test_affine_tilts_are_recorded_only_when_asked_for():
    assert "affine_tilts" not in SiftOptions().record()
    options = SiftOptions(affine_tilts=2)
    assert options.record()["affine_tilts"] == 2
    assert SiftOptions.from_record(options.record()) == options
    assert options.kind == (
        "RootSIFT at detected keypoints of affine views (tilts up to 2)"
    )


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"affine_tilts": -1}, ValueError, "affine_tilts must be an integer >= 0"),
        ({"affine_tilts": 1.5}, TypeError, "affine_tilts must be an integer"),
        ({"affine_tilts": 1, "dense": True}, ValueError, "not to a dense grid"),
    ],
)
def test_bad_affine_tilts_name_the_parameter(options, error, message):
    with pytest.raises(error, match=message):
        SiftOptions(**options)
