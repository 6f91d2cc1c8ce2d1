"""Arguments the public functions must refuse by name, accept as documented,
or compute with without overflow: misuse, extreme magnitudes, aggregators
that return NaN, non-images among images."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from photos import DATA

import vlad
from hostile.conftest import record
from vlad.core._finite import SAFE_MAGNITUDE

RNG = np.random.default_rng(0)
X = RNG.normal(size=(30, 4)).astype(np.float32)
C = RNG.normal(size=(3, 4)).astype(np.float32)
SETS = vlad.DescriptorSets(X, [0, 10, 30])

#: label -> (call, exception type(s), fragment naming what is wrong)
REFUSED = {
    "encode intra='no'": (lambda: vlad.encode(SETS, C, intra="no"), TypeError, "intra"),
    "encode l2=None": (lambda: vlad.encode(SETS, C, l2=None), TypeError, "l2"),
    "encode mass=1": (lambda: vlad.encode(SETS, C, mass=1), TypeError, "mass"),
    "encode power=0": (lambda: vlad.encode(SETS, C, power=0), ValueError, "power"),
    "encode power=nan": (
        lambda: vlad.encode(SETS, C, power=float("nan")),
        ValueError,
        "power",
    ),
    "encode power='0.5'": (
        lambda: vlad.encode(SETS, C, power="0.5"),
        TypeError,
        "power",
    ),
    "encode power=True": (lambda: vlad.encode(SETS, C, power=True), TypeError, "power"),
    "encode n_jobs=0": (lambda: vlad.encode(SETS, C, n_jobs=0), ValueError, "n_jobs"),
    "encode n_jobs=-2": (lambda: vlad.encode(SETS, C, n_jobs=-2), ValueError, "n_jobs"),
    "encode n_jobs=1.5": (
        lambda: vlad.encode(SETS, C, n_jobs=1.5),
        TypeError,
        "n_jobs",
    ),
    "encode colour='red'": (
        lambda: vlad.encode(SETS, C, colour=1),
        TypeError,
        "colour",
    ),
    "encode options=dict": (lambda: vlad.encode(SETS, C, {}), TypeError, "options"),
    "encode F=0": (
        lambda: vlad.encode([np.ones((3, 0))], np.ones((2, 0))),
        ValueError,
        "at least one feature",
    ),
    "encode codebook of F=3": (
        lambda: vlad.encode(SETS, np.ones((2, 3))),
        ValueError,
        "features",
    ),
    "encode strings": (
        lambda: vlad.encode([np.array([["1", "2", "3", "4"]], dtype=object)], C),
        TypeError,
        "must hold real numbers",
    ),
    "encode ragged list": (
        lambda: vlad.encode([[[1.0, 2.0], [3.0]]], C),
        ValueError,
        "descriptor array 0 is not an array of numbers",
    ),
    "encode a dict": (lambda: vlad.encode({"a": X}, C), TypeError, "descriptor sets"),
    "encode nan": (
        lambda: vlad.encode([np.full((2, 4), np.nan)], C),
        ValueError,
        "NaN",
    ),
    "encode float64 centres beyond float32": (
        lambda: vlad.encode(SETS, np.full((2, 4), 1e300)),
        ValueError,
        "centres",
    ),
    "encode aggregator returning NaN": (
        lambda: vlad.encode(
            SETS, C, aggregator=lambda *args: np.full((2, 3, 4), np.nan)
        ),
        ValueError,
        "aggregator",
    ),
    "encode aggregator of another shape": (
        lambda: vlad.encode(SETS, C, aggregator=lambda *args: np.zeros((2, 2))),
        ValueError,
        "aggregator",
    ),
    "encode aggregator returning strings": (
        lambda: vlad.encode(SETS, C, aggregator=lambda *args: np.full((2, 3, 4), "x")),
        TypeError,
        "aggregator",
    ),
    "encode unknown aggregator": (
        lambda: vlad.encode(SETS, C, aggregator="fastest"),
        ValueError,
        "aggregator",
    ),
    "aggregate returning inf": (
        lambda: vlad.aggregate(
            X, np.zeros(30, int), [0, 30], C, lambda *a: np.full((1, 3, 4), np.inf)
        ),
        ValueError,
        "aggregator",
    ),
    "aggregate F=0": (
        lambda: vlad.aggregate(
            np.ones((3, 0)), [0, 0, 0], [0, 3], np.ones((2, 0)), "masked"
        ),
        ValueError,
        "at least one feature",
    ),
    "aggregate ragged-cumsum F=0": (
        lambda: vlad.aggregate(
            np.ones((3, 0)), [0, 0, 0], [0, 3], np.ones((2, 0)), "ragged-cumsum"
        ),
        ValueError,
        "at least one feature",
    ),
    "aggregate K=0": (
        lambda: vlad.aggregate(X, np.zeros(30, int), [0, 30], np.ones((0, 4))),
        ValueError,
        "at least one centre",
    ),
    "assign K=0": (
        lambda: vlad.assign(X, np.ones((0, 4))),
        ValueError,
        "at least one centre",
    ),
    "assign chunk_bytes=0": (
        lambda: vlad.assign(X, C, chunk_bytes=0),
        ValueError,
        "chunk_bytes",
    ),
    "assign chunk_bytes=-1": (
        lambda: vlad.assign(X, C, chunk_bytes=-1),
        ValueError,
        "chunk_bytes",
    ),
    "assign chunk_bytes=2.5": (
        lambda: vlad.assign(X, C, chunk_bytes=2.5),
        TypeError,
        "chunk_bytes",
    ),
    "normalize nan": (
        lambda: vlad.normalize(np.full((1, 2, 3), np.nan)),
        ValueError,
        "residuals",
    ),
    "normalize negative counts": (
        lambda: vlad.normalize(np.ones((1, 2, 3)), counts=[[-1, 2]]),
        ValueError,
        "counts",
    ),
    "normalize float counts": (
        lambda: vlad.normalize(np.ones((1, 2, 3)), counts=[[np.nan, 2.0]]),
        TypeError,
        "counts",
    ),
    "normalize intra='yes'": (
        lambda: vlad.normalize(np.ones((1, 2, 3)), intra="yes"),
        TypeError,
        "intra",
    ),
    "DescriptorSets F=0": (
        lambda: vlad.DescriptorSets(np.ones((3, 0)), [0, 3]),
        ValueError,
        "at least one feature",
    ),
    "DescriptorSets metadata=str": (
        lambda: vlad.DescriptorSets(X, [0, 30], metadata="sift"),
        TypeError,
        "metadata",
    ),
    "Codebook metadata=list": (
        lambda: vlad.Codebook(C, metadata=[1]),
        TypeError,
        "metadata",
    ),
    "Codebook K=0": (lambda: vlad.Codebook(np.ones((0, 4))), ValueError, "centers"),
    "fit_codebook F=0": (
        lambda: vlad.fit_codebook(np.ones((10, 0)), 2),
        ValueError,
        "at least one feature",
    ),
    "fit_codebook n_clusters=True": (
        lambda: vlad.fit_codebook(X, True),
        TypeError,
        "n_clusters",
    ),
    "fit_codebook seed=-1": (
        lambda: vlad.fit_codebook(X, 2, seed=-1),
        ValueError,
        "seed",
    ),
    "EncodingOptions aggregator=42": (
        lambda: vlad.EncodingOptions(aggregator=42),
        ValueError,
        "aggregator",
    ),
    "VLADEncoder intra='no'": (
        lambda: vlad.VLADEncoder(2, intra="no").fit([X]),
        (TypeError, ValueError),
        "intra",
    ),
    "extract_sift a path": (
        lambda: vlad.extract_sift("photo.png"),
        TypeError,
        "got the path 'photo.png'",
    ),
    "extract_sift over max_pixels": (
        lambda: vlad.extract_sift(np.zeros((100, 100), np.uint8), max_pixels=99),
        ValueError,
        "max_pixels",
    ),
    "SiftOptions max_pixels=-1": (
        lambda: vlad.SiftOptions(max_pixels=-1),
        ValueError,
        "max_pixels",
    ),
    "save_vectors NaN": (
        lambda: vlad.save_vectors("v.npy", np.full((1, 2), np.nan), ["a"], {}),
        ValueError,
        "finite",
    ),
    "save_vectors line break": (
        lambda: vlad.save_vectors("v.npy", np.ones((1, 2)), ["a\nb"], {}),
        ValueError,
        "line breaks",
    ),
    "SIFTExtractor a non-image": (
        lambda: vlad.SIFTExtractor().fit_transform([np.zeros((3, 3, 2), np.uint8)]),
        ValueError,
        "image must have shape",
    ),
    "SIFTExtractor on_error='ignore'": (
        lambda: vlad.SIFTExtractor(on_error="ignore").fit_transform([]),
        ValueError,
        "on_error",
    ),
}


@pytest.mark.parametrize("label", sorted(REFUSED))
def test_misuse_is_refused_by_name(label, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    call, error, fragment = REFUSED[label]
    with pytest.raises(error) as raised:
        call()
    assert fragment in str(raised.value)
    assert "\n" not in str(raised.value)
    assert list(tmp_path.iterdir()) == []
    record("clear error")


def test_a_tiny_power_binarises_as_documented():
    """power=1e-300 is in (0, 1]: |v| ** 1e-300 is 1, the vector sign(v)."""
    residuals = vlad.aggregate(X, vlad.assign(X, C), SETS.offsets, C)
    vectors = vlad.encode(SETS, C, power=1e-300, intra=False, l2=False)
    np.testing.assert_array_equal(vectors, np.sign(residuals).reshape(2, -1))
    record("handled")


def test_many_more_threads_than_cores_change_nothing():
    np.testing.assert_array_equal(
        vlad.encode(SETS, C, n_jobs=10000), vlad.encode(SETS, C, n_jobs=1)
    )
    record("handled")


@pytest.mark.parametrize(
    ("dtype", "magnitude"),
    [
        (np.float32, 5e36),
        (np.float32, 1e-40),
        (np.float64, 1e308),
        (np.float64, 1e-310),
    ],
)
@pytest.mark.parametrize(
    "aggregator", ["loop", "sparse", "masked", "ragged-cumsum", "auto"]
)
def test_extreme_magnitudes_encode_as_the_same_values_scaled(
    dtype, magnitude, aggregator
):
    """Normalised vectors do not depend on the scale: descriptors and centres
    of 5e36 (float32) or 1e308 (float64) give the vectors of the same values
    near 1, never NaN."""
    unit = RNG.uniform(-1, 1, (40, 4))
    unit_centers = RNG.uniform(-1, 1, (3, 4))
    offsets = [0, 15, 40]
    big = vlad.DescriptorSets((unit * magnitude).astype(dtype), offsets)
    centers = (unit_centers * magnitude).astype(dtype)
    expected = vlad.encode(
        vlad.DescriptorSets(big.descriptors.astype(np.float64) / magnitude, offsets),
        centers.astype(np.float64) / magnitude,
        power=0.5,
        aggregator="loop",
    )
    vectors = vlad.encode(big, centers, power=0.5, aggregator=aggregator)
    assert vectors.dtype == dtype and np.isfinite(vectors).all()
    np.testing.assert_allclose(vectors, expected, atol=1e-5)
    record("handled")


def test_unnormalised_sums_that_overflow_are_an_error_not_inf():
    huge = np.full((10, 4), np.finfo(np.float32).max / 2, np.float32)
    with pytest.raises(ValueError, match="overflow float32"):
        vlad.encode([huge], np.zeros((1, 4), np.float32), intra=False, l2=False)
    with pytest.raises(ValueError, match="overflow float32"):
        vlad.aggregate(huge, np.zeros(10, int), [0, 10], np.zeros((1, 4), np.float32))
    scale = SAFE_MAGNITUDE[np.dtype(np.float32)] * 4
    fitting = np.full((10, 4), scale, np.float32)
    vectors = vlad.encode(
        [fitting], np.zeros((1, 4), np.float32), intra=False, l2=False
    )
    np.testing.assert_array_equal(vectors, np.full((1, 4), 10 * scale, np.float32))
    record("clear error")
    record("handled")


def test_sift_extractor_skips_what_is_not_an_image_when_asked(caplog):
    images = [str(DATA / "chelsea.jpg"), "missing.jpg", None, np.zeros((3, 3, 2))]
    extractor = vlad.SIFTExtractor(max_keypoints=10, on_error="skip", n_jobs=1)
    with caplog.at_level(logging.WARNING, logger="vlad"):
        sets = extractor.fit_transform(images)
    assert sets.lengths.tolist() == [10, 0, 0, 0]
    assert sets.names == [images[0], "missing.jpg", "2", "3"]
    for name in sets.names[1:]:
        assert f"skipped {name}: " in caplog.text
    record("skipped and reported", 3)
