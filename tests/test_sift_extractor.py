"""The scikit-learn transformer from images to descriptor sets:
vlad.estimators._sift_extractor."""

from __future__ import annotations

import pickle
import subprocess
import sys

import numpy as np
import pytest
from photos import DATA, FAST_OPTIONS, PHOTOS
from sklearn.base import clone
from sklearn.pipeline import make_pipeline

import vlad
from vlad.images._files import ImageReadError, read_image

PATHS = [str(DATA / name) for name in PHOTOS[:4]]


@pytest.fixture(scope="module")
def extractor():
    return vlad.SIFTExtractor(max_side=FAST_OPTIONS["max_side"])


@pytest.fixture(scope="module")
def path_sets(extractor):
    return extractor.fit_transform(PATHS)


def test_transform_equals_the_batch_extraction(path_sets):
    expected, _ = vlad.extract_images(PATHS, FAST_OPTIONS, n_jobs=1)
    np.testing.assert_array_equal(path_sets.descriptors, expected.descriptors)
    np.testing.assert_array_equal(path_sets.offsets, expected.offsets)
    assert path_sets.names == PATHS
    assert path_sets.metadata == expected.metadata


def test_arrays_are_described_like_their_files(extractor, path_sets):
    images = [read_image(path) for path in PATHS]
    sets = extractor.transform(images)
    np.testing.assert_array_equal(sets.descriptors, path_sets.descriptors)
    assert sets.names == ["0", "1", "2", "3"]


def test_the_result_does_not_depend_on_n_jobs(path_sets):
    sets = vlad.SIFTExtractor(max_side=FAST_OPTIONS["max_side"], n_jobs=2).transform(
        PATHS
    )
    np.testing.assert_array_equal(sets.descriptors, path_sets.descriptors)


def test_it_is_stateless(extractor):
    fresh = vlad.SIFTExtractor(max_side=FAST_OPTIONS["max_side"])
    assert fresh.fit(PATHS) is fresh
    assert vars(fresh) == vars(clone(fresh))
    tags = fresh.__sklearn_tags__()
    assert tags.requires_fit is False
    assert tags.input_tags.two_d_array is False and tags.input_tags.string is True


def test_params_clone_and_pickle(extractor, path_sets):
    params = {
        "root_sift": False,
        "max_side": 64,
        "max_keypoints": 10,
        "dense": True,
        "max_pixels": 10**6,
        "min_keypoints": 5,
        "features": "sift",
        "affine_tilts": 2,
        "on_error": "skip",
        "n_jobs": 2,
    }
    configured = vlad.SIFTExtractor().set_params(**params)
    assert configured.get_params() == params
    assert clone(configured).get_params() == params
    restored = pickle.loads(pickle.dumps(extractor))
    np.testing.assert_array_equal(
        restored.transform(PATHS).descriptors, path_sets.descriptors
    )


def test_affine_tilts_are_those_of_the_batch_extraction():
    options = {"affine_tilts": 1, **FAST_OPTIONS}
    sets = vlad.SIFTExtractor(**options).transform(PATHS[:1])
    expected, _ = vlad.extract_images(PATHS[:1], options, n_jobs=1)
    np.testing.assert_array_equal(sets.descriptors, expected.descriptors)
    assert sets.metadata == expected.metadata


def test_it_runs_in_a_pipeline_from_paths_to_vectors(path_sets):
    pipeline = make_pipeline(
        vlad.SIFTExtractor(max_side=FAST_OPTIONS["max_side"]),
        vlad.VLADEncoder(8, random_state=0),
    )
    vectors = pipeline.fit_transform(PATHS)
    expected = vlad.VLADEncoder(8, random_state=0).fit_transform(path_sets)
    np.testing.assert_array_equal(vectors, expected)
    assert vectors.shape == (len(PATHS), 8 * 128)


@pytest.mark.parametrize(
    ("params", "error", "message"),
    [
        ({"max_side": -5}, ValueError, "'max_side' parameter of SIFTExtractor"),
        ({"root_sift": "no"}, TypeError, "'root_sift' parameter of SIFTExtractor"),
        ({"n_jobs": 0}, ValueError, "'n_jobs' parameter of SIFTExtractor"),
        ({"affine_tilts": -1}, ValueError, "'affine_tilts' parameter of SIFTExtr"),
    ],
)
def test_bad_parameters_fail_in_fit_and_transform(params, error, message):
    with pytest.raises(error, match=message):
        vlad.SIFTExtractor(**params).fit(PATHS)
    with pytest.raises(error, match=message):
        vlad.SIFTExtractor(**params).transform(PATHS)


def test_an_unreadable_file_is_an_error(tmp_path):
    (tmp_path / "bad.jpg").write_bytes(b"")
    with pytest.raises(ImageReadError, match="bad.jpg: the file is empty"):
        vlad.SIFTExtractor().transform([tmp_path / "bad.jpg"])


def test_a_single_path_must_be_wrapped_in_a_list():
    with pytest.raises(TypeError, match="wrap it in a list"):
        vlad.SIFTExtractor().transform(PATHS[0])


def test_importing_vlad_imports_neither_sklearn_nor_opencv():
    code = (
        "import sys, vlad; "
        "print(sorted(m for m in ('sklearn', 'cv2') if m in sys.modules)); "
        "vlad.SIFTExtractor; print('sklearn' in sys.modules)"
    )
    completed = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60
    )
    assert completed.stdout.split("\n")[:2] == ["[]", "True"], completed.stderr
