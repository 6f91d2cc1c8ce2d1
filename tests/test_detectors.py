"""OpenCV's AKAZE and ORB as real-valued descriptors, and detection retried at
lower thresholds (min_keypoints): vlad.images._detectors and vlad.images._sift."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from photos import DATA

import vlad
from vlad.images._detectors import DETECTORS, detector, unpack_bits
from vlad.images._files import read_image
from vlad.images._sift import SiftOptions, extract_keypoints_with_options

HAS_AKAZE = hasattr(cv2, "AKAZE_create")
needs_akaze = pytest.mark.skipif(not HAS_AKAZE, reason="this OpenCV lacks AKAZE")


@pytest.fixture(scope="module")
def chelsea():
    return read_image(DATA / "chelsea.jpg")


@pytest.fixture(scope="module")
def faint():
    """The brick photo at a tenth of its contrast: no SIFT keypoints at
    OpenCV's default contrast threshold."""
    brick = read_image(DATA / "brick.jpg").astype(np.float32)
    return np.rint(brick * 0.05 + 120).astype(np.uint8)


def test_orb_is_opencv_orb_with_its_bits_unpacked_by_hand(chelsea):
    options = SiftOptions(features="orb", max_side=0, max_keypoints=300)
    keypoints, descriptors = extract_keypoints_with_options(chelsea, options)
    orb = cv2.ORB_create(nfeatures=300)
    expected_keypoints, packed = orb.detectAndCompute(chelsea, None)
    expected = np.zeros((len(packed), 256), np.float32)
    for row, code in enumerate(packed):
        for byte in range(32):
            for bit in range(8):
                expected[row, 8 * byte + bit] = (code[byte] >> (7 - bit)) & 1
    order = np.argsort([-k.response for k in expected_keypoints], kind="stable")
    kept = np.sort(order[:300])
    np.testing.assert_array_equal(descriptors, expected[kept])
    np.testing.assert_allclose(
        keypoints[:, :2], [expected_keypoints[i].pt for i in kept], rtol=1e-6
    )
    assert descriptors.dtype == np.float32


def test_squared_distances_of_unpacked_bits_are_hamming_distances(chelsea):
    _, packed = cv2.ORB_create(nfeatures=50).detectAndCompute(chelsea, None)
    bits = unpack_bits(packed, 256)
    for i in range(0, 50, 7):
        for j in range(0, 50, 5):
            squared = float(((bits[i] - bits[j]) ** 2).sum())
            assert squared == cv2.norm(packed[i], packed[j], cv2.NORM_HAMMING)


@given(st.lists(st.integers(0, 255), min_size=1, max_size=12), st.integers(1, 8))
def test_unpack_bits_keeps_the_first_bits_most_significant_first(codes, cut):
    packed = np.array([codes], np.uint8)
    n_bits = 8 * len(codes) - (8 - cut)
    expected = [float(c >> (7 - b) & 1) for c in codes for b in range(8)][:n_bits]
    assert unpack_bits(packed, n_bits).tolist() == [expected]


@needs_akaze
def test_akaze_is_opencv_akaze_with_486_bits(chelsea):
    options = SiftOptions(features="akaze", max_side=0, max_keypoints=0)
    descriptors = extract_keypoints_with_options(chelsea, options)[1]
    _, packed = cv2.AKAZE_create().detectAndCompute(chelsea, None)
    assert descriptors.shape == (len(packed), 486)
    np.testing.assert_array_equal(
        descriptors, np.unpackbits(packed, axis=1)[:, :486].astype(np.float32)
    )


@pytest.mark.skipif(HAS_AKAZE, reason="this OpenCV has AKAZE")
def test_akaze_without_opencv_akaze_says_how_to_get_it():
    with pytest.raises(ImportError, match="opencv-python-headless<5"):
        SiftOptions(features="akaze")


def test_min_keypoints_retries_at_halved_contrast_thresholds(faint):
    expected = None
    for threshold in DETECTORS["sift"].thresholds:
        sift = cv2.SIFT_create(nfeatures=2000, contrastThreshold=threshold)
        keypoints, expected = sift.detectAndCompute(faint, None)
        if len(keypoints) >= 20:
            break
    assert 20 <= len(expected)
    once = vlad.extract_sift(faint, root_sift=False, min_keypoints=0)
    retried = vlad.extract_sift(faint, root_sift=False, min_keypoints=20)
    assert once.shape == (0, 128)
    np.testing.assert_array_equal(retried, expected)


def test_min_keypoints_changes_nothing_where_there_are_enough(chelsea):
    once = vlad.extract_sift(chelsea, min_keypoints=0)
    np.testing.assert_array_equal(vlad.extract_sift(chelsea, min_keypoints=50), once)


def test_min_keypoints_keeps_the_last_try_when_none_is_enough():
    blank = np.full((64, 64), 128, np.uint8)
    assert vlad.extract_sift(blank, min_keypoints=10).shape == (0, 128)
    assert vlad.extract_sift(blank, features="orb").shape == (0, 256)


@pytest.mark.parametrize(
    ("options", "error", "match"),
    [
        ({"features": "surf"}, ValueError, r"features must be one of .*; got 'surf'"),
        ({"features": "orb", "root_sift": True}, ValueError, "root_sift=True"),
        ({"features": "orb", "dense": True}, ValueError, "dense=True"),
        ({"min_keypoints": -1}, ValueError, "min_keypoints must be an integer >= 0"),
        ({"min_keypoints": 2.0}, TypeError, "min_keypoints must be an integer"),
    ],
)
def test_bad_options_are_refused(options, error, match):
    with pytest.raises(error, match=match):
        SiftOptions(**options)


def test_records_name_the_features_and_read_back():
    for name in ("sift", "orb") + (("akaze",) if HAS_AKAZE else ()):
        options = SiftOptions(features=name, min_keypoints=5)
        record = options.record()
        assert record["extractor"] == f"opencv-{name}"
        assert SiftOptions.from_record(record) == options
        assert options.n_features == detector(name).n_features
        assert options.root_sift == (name == "sift")


def test_a_codebook_of_orb_refuses_sift_and_encodes_orb(tmp_path):
    options = {"features": "orb", "max_side": 256}
    codebook, _ = vlad.fit_codebook_to_images(
        DATA, 4, descriptor_options=options, n_jobs=2
    )
    assert codebook.n_features == 256
    assert codebook.metadata["descriptor"]["extractor"] == "opencv-orb"
    with pytest.raises(ValueError, match="'opencv-orb' descriptors but these are"):
        vlad.encode_images(DATA, codebook, descriptor_options={"features": "sift"})
    result = vlad.encode_images(DATA, codebook, n_jobs=2)
    sets, _ = vlad.extract_images(DATA, options, n_jobs=1)
    np.testing.assert_allclose(
        result.vectors, vlad.encode(sets, codebook), rtol=1e-5, atol=1e-6
    )
    assert result.descriptor["features"] == "orb"
