"""Any callable as the extractor of a batch: vlad.images._callables, the
``extractor=`` of the batch functions, vlad.FeatureExtractor and ``vlad
extract --extractor``."""

from __future__ import annotations

import shutil
import sys

import cv2
import numpy as np
import pytest
from photos import DATA, PHOTOS

import vlad
from vlad.errors import VladError
from vlad.images._callables import CallableExtractor, extractor_name, load_extractor

MODULE = '''
import numpy as np

def means(image):
    """Mean colour of each 16 x 16 block."""
    if image.shape[:2] == (300, 451):  # chelsea.jpg
        raise RuntimeError("no cats")
    height, width = image.shape[0] // 16 * 16, image.shape[1] // 16 * 16
    blocks = image[:height, :width].reshape(height // 16, 16, width // 16, 16, 3)
    return blocks.mean(axis=(1, 3)).reshape(-1, 3) / 255

def nan(image):
    return np.full((2, 3), np.nan)

def integers(image):
    return np.zeros((2, 3), np.uint8)

def flat(image):
    return np.zeros(3)

def grows(image):
    return np.zeros((2, image.shape[1] % 7 + 1))

not_callable = 3
'''


def block_means(image):
    """The reference: mean colour of each 16 x 16 block, by loops."""
    height, width = image.shape[0] // 16, image.shape[1] // 16
    means = np.empty((height * width, 3))
    for row in range(height):
        for column in range(width):
            block = image[16 * row : 16 * row + 16, 16 * column : 16 * column + 16]
            means[row * width + column] = block.reshape(-1, 3).mean(axis=0) / 255
    return means


@pytest.fixture(scope="module")
def module(tmp_path_factory):
    """``callable_features``, a module on sys.path holding MODULE's callables."""
    folder = tmp_path_factory.mktemp("module")
    (folder / "callable_features.py").write_text(MODULE)
    sys.path.insert(0, str(folder))
    import callable_features

    yield callable_features
    sys.path.remove(str(folder))
    del sys.modules["callable_features"]


@pytest.fixture(scope="module")
def photos(tmp_path_factory):
    folder = tmp_path_factory.mktemp("photos")
    for name in ("astronaut.jpg", "chelsea.jpg", "coffee.jpg", "camera.png"):
        shutil.copy(DATA / name, folder)
    return folder


def rgb(path):
    return cv2.cvtColor(cv2.imread(str(path)), cv2.COLOR_BGR2RGB)


def test_the_callable_gets_rgb_images_and_an_image_it_raises_on_is_skipped(
    module, photos
):
    sets, report = vlad.extract_images(photos, extractor=module.means, n_jobs=2)
    assert report.names == ["astronaut.jpg", "camera.png", "coffee.jpg"]
    assert report.skipped == {
        "chelsea.jpg": "the extractor callable_features:means raised "
        "RuntimeError: no cats"
    }
    for index, name in enumerate(report.names):
        expected = block_means(rgb(photos / name))
        np.testing.assert_allclose(sets[index], expected, rtol=1e-5)
    assert sets.descriptors.dtype == np.float32
    assert sets.metadata == {
        "extractor": "python:callable_features:means",
        "max_pixels": vlad.SiftOptions().max_pixels,
    }
    assert sets.keypoints is None


def test_the_callable_by_name_gives_the_same(module, photos):
    by_object, _ = vlad.extract_images(photos, extractor=module.means, n_jobs=1)
    by_name, _ = vlad.extract_images(
        photos, extractor="callable_features:means", n_jobs=2
    )
    np.testing.assert_array_equal(by_object.descriptors, by_name.descriptors)
    assert by_object.metadata == by_name.metadata


@pytest.mark.parametrize(
    ("name", "error", "match"),
    [
        ("nan", ValueError, "returned NaN or infinite values for"),
        ("integers", VladError, "returned dtype uint8 for"),
        ("flat", ValueError, r"returned shape \(3,\) for"),
        ("grows", ValueError, "every image's descriptors must have the same width"),
    ],
)
def test_a_callable_that_returns_the_wrong_thing_stops_the_batch(
    module, photos, name, error, match
):
    with pytest.raises(error, match=match):
        vlad.extract_images(photos, extractor=getattr(module, name), n_jobs=2)


@pytest.mark.parametrize(
    ("spec", "error", "match"),
    [
        ("callable_features", ValueError, "must be 'package.module:function'"),
        ("no_such_module_here:f", ImportError, "No module named 'no_such_module_here'"),
        ("callable_features:missing", ImportError, "has no 'missing'"),
        ("callable_features:not_callable", ValueError, "must be callable"),
    ],
)
def test_names_that_cannot_be_imported_say_why(module, spec, error, match):
    with pytest.raises(error, match=match):
        load_extractor(spec)


def test_opencv_options_with_an_extractor_are_refused(module, photos):
    with pytest.raises(ValueError, match=r"\(max_side\) apply to OpenCV's features"):
        vlad.extract_images(photos, {"max_side": 100}, extractor=module.means)


def test_fit_and_encode_with_a_callable(module, photos):
    codebook, report = vlad.fit_codebook_to_images(
        photos, 3, extractor=module.means, n_jobs=2
    )
    assert codebook.n_features == 3 and "chelsea.jpg" in report.skipped
    assert codebook.metadata["descriptor"]["extractor"].startswith("python:")
    result = vlad.encode_images(photos, codebook, extractor=module.means, n_jobs=2)
    sets, _ = vlad.extract_images(photos, extractor=module.means, n_jobs=1)
    np.testing.assert_allclose(result.vectors, vlad.encode(sets, codebook), atol=1e-6)
    with pytest.raises(ValueError, match="pass extractor=, or --extractor"):
        vlad.encode_images(photos, codebook)
    with pytest.raises(ValueError, match="python:callable_features:nan"):
        vlad.encode_images(photos, codebook, extractor=module.nan)


def test_extractor_names():
    assert extractor_name(np.mean) == "numpy:mean"
    assert CallableExtractor(np.mean).name == "numpy:mean"

    class Named:
        extractor_name = "my model"

        def __call__(self, image):
            return image

    assert extractor_name(Named()) == "my model"
    with pytest.raises(TypeError, match="extractor must be a callable"):
        CallableExtractor(3)


def test_feature_extractor_takes_arrays_and_skips_on_request(module):
    images = [rgb(DATA / name) for name in PHOTOS[:3]]
    sets = vlad.FeatureExtractor(module.means, n_jobs=2).fit_transform(images)
    for index, image in enumerate(images):
        np.testing.assert_allclose(sets[index], block_means(image), rtol=1e-5)
    chelsea = [DATA / "chelsea.jpg", DATA / "coffee.jpg"]
    with pytest.raises(vlad.ImageReadError, match="no cats"):
        vlad.FeatureExtractor(module.means).transform(chelsea)
    skipped = vlad.FeatureExtractor(module.means, on_error="skip").transform(chelsea)
    assert skipped.lengths[0] == 0 and skipped.lengths[1] > 0
    grey = vlad.FeatureExtractor(module.means).transform([images[0][:, :, 0]])
    np.testing.assert_allclose(
        grey[0], block_means(np.repeat(images[0][:, :, :1], 3, axis=2)), rtol=1e-5
    )
