"""JPEGs decoded reduced (1/2, 1/4, 1/8) when ``max_side`` allows: the
reduction chosen, the pixels against a whole decoding shrunk, and the
keypoints and descriptors against those of the whole image."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from photos import DATA
from scipy.spatial import cKDTree

import vlad
from vlad.images._describe import describe_image_with_keypoints
from vlad.images._files import jpeg_reduction, read_image, read_image_reduced
from vlad.images._headers import ImageHeader
from vlad.images._sift import SiftOptions


@pytest.fixture(scope="module")
def large_jpeg(tmp_path_factory):
    """A 2048 x 1536 photograph (the astronaut, enlarged)."""
    path = tmp_path_factory.mktemp("large") / "large.jpg"
    image = cv2.resize(
        cv2.imread(str(DATA / "astronaut.jpg")), (2048, 1536), cv2.INTER_CUBIC
    )
    cv2.imwrite(str(path), image, [cv2.IMWRITE_JPEG_QUALITY, 92])
    return path


@given(
    width=st.integers(1, 20_000),
    height=st.integers(1, 20_000),
    min_side=st.integers(0, 5_000),
    image_format=st.sampled_from(["JPEG", "PNG"]),
)
def test_the_largest_reduction_that_keeps_min_side(
    width, height, min_side, image_format
):
    header = ImageHeader(image_format, width, height, False)
    longest = max(width, height)
    allowed = [
        reduction
        for reduction in (2, 4, 8)
        if min_side and image_format == "JPEG" and -(-longest // reduction) >= min_side
    ]
    assert jpeg_reduction(header, min_side) == max(allowed, default=1)


@pytest.mark.parametrize(
    ("min_side", "shape"),
    [
        (0, (1536, 2048)),
        (1024, (768, 1024)),
        (1025, (1536, 2048)),
        (300, (384, 512)),
        (256, (192, 256)),
        (100, (192, 256)),
    ],
)
def test_a_reduced_decoding_is_close_to_a_whole_one_shrunk(large_jpeg, min_side, shape):
    image, full_shape = read_image_reduced(large_jpeg, min_side=min_side)
    assert image.shape == shape and full_shape == (1536, 2048)
    whole = read_image(large_jpeg)
    shrunk = cv2.resize(whole, shape[::-1], interpolation=cv2.INTER_AREA)
    difference = np.abs(image.astype(int) - shrunk.astype(int))
    assert difference.mean() < 0.5 and difference.max() <= 8
    if shape != full_shape:
        assert difference.any()  # close, not the same pixels


def test_other_formats_are_decoded_whole(tmp_path):
    path = tmp_path / "large.png"
    cv2.imwrite(str(path), np.zeros((900, 1200), np.uint8))
    image, full_shape = read_image_reduced(path, min_side=100)
    assert image.shape == full_shape == (900, 1200)


def test_keypoints_and_descriptors_are_close_to_the_whole_images(large_jpeg):
    whole_options = SiftOptions(max_side=512, max_keypoints=300)
    options = SiftOptions(max_side=512, max_keypoints=300, reduce_jpeg=True)
    whole_positions, whole_descriptors = describe_image_with_keypoints(
        large_jpeg, whole_options
    )
    positions, descriptors = describe_image_with_keypoints(large_jpeg, options)
    assert len(positions) == len(whole_positions) == 300
    # Positions are in the whole image's pixels, as without the reduction.
    distances, nearest = cKDTree(whole_positions[:, :2]).query(positions[:, :2])
    matched = distances < 1.0
    assert matched.mean() > 0.9
    sizes = positions[matched, 2] / whole_positions[nearest[matched], 2]
    assert np.median(sizes) == pytest.approx(1.0, abs=0.02)
    similarity = np.sum(descriptors[matched] * whole_descriptors[nearest[matched]], 1)
    assert np.median(similarity) > 0.99


def test_the_option_is_recorded_only_when_on(large_jpeg, tmp_path):
    assert "reduce_jpeg" not in SiftOptions().record()
    record = SiftOptions(reduce_jpeg=True).record()
    assert record["reduce_jpeg"] is True
    assert SiftOptions.from_record(record).reduce_jpeg
    assert not SiftOptions.from_record(SiftOptions().record()).reduce_jpeg
    with pytest.raises(TypeError, match="reduce_jpeg must be True or False"):
        SiftOptions(reduce_jpeg="yes")
    options = {"max_side": 256, "reduce_jpeg": True}
    sets, _ = vlad.extract_images([large_jpeg], options, n_jobs=1)
    assert sets.metadata["reduce_jpeg"] is True
    codebook = vlad.fit_codebook(sets, 2)
    codebook.metadata["descriptor"] = sets.metadata
    # Encoding makes descriptors as the codebook's were: reduced.
    encoded = vlad.encode_images([large_jpeg], codebook, n_jobs=1)
    assert np.allclose(encoded.vectors, vlad.encode(sets, codebook), atol=1e-6)
