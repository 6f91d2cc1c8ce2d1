"""JaxEncoder: the jitted end-to-end path equals the NumPy pipeline."""

from __future__ import annotations

import itertools
import sys

import numpy as np
import pytest
from conftest import DTYPES

import vlad
from vlad.backends import jax_encoder as jax_encoding

jax = pytest.importorskip("jax")


@pytest.fixture(scope="module")
def problem():
    sets = vlad.datasets.make_descriptor_sets(30, 60, 16, ragged=True, seed=4)
    return sets, vlad.fit_codebook(sets, 6, seed=0)


@pytest.mark.parametrize(
    ("power", "intra", "l2", "mass"),
    list(itertools.product([1.0, 0.5], [False, True], [False, True], [False, True])),
)
def test_equals_encode(problem, power, intra, l2, mass):
    sets, codebook = problem
    options = {"power": power, "intra": intra, "l2": l2, "mass": mass}
    expected = vlad.encode(sets, codebook, **options)
    result = vlad.JaxEncoder(codebook, **options)(sets)
    assert result.dtype == np.float32 and result.shape == expected.shape
    atol = 1e-5 * np.abs(expected).max()
    np.testing.assert_allclose(result, expected, rtol=1e-4, atol=atol)
    assert np.all(result[sets.lengths == 0] == 0)


@pytest.mark.parametrize("dtype", DTYPES)
def test_dtype_follows_the_descriptors(problem, dtype):
    sets, codebook = problem
    sets = vlad.DescriptorSets(sets.descriptors.astype(dtype), sets.offsets)
    result = vlad.JaxEncoder(codebook)(sets)
    assert result.dtype == dtype
    expected = vlad.encode(sets, codebook)
    tolerance = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(result, expected, rtol=tolerance, atol=tolerance)


def test_float32_accuracy_when_one_image_is_huge():
    rng = np.random.default_rng(1)
    descriptors = rng.gamma(0.5, 40.0, size=(300_000, 8)).astype(np.float32)
    centers = descriptors[::100_000][:3].copy()
    options = {"power": 1.0, "intra": False, "l2": False}
    result = vlad.JaxEncoder(centers, **options)([descriptors])
    expected = vlad.encode([descriptors.astype(np.float64)], centers, **options)
    error = np.linalg.norm(result - expected) / np.linalg.norm(expected)
    assert error <= 1e-6


def test_float32_descriptors_with_a_float64_codebook(problem):
    sets, codebook = problem
    result = vlad.JaxEncoder(codebook.centers.astype(np.float64))(sets)
    assert result.dtype == np.float32


def test_compiles_once_per_bucket(problem):
    sets, codebook = problem
    encoder = vlad.JaxEncoder(codebook)
    kernel = jax_encoding._encode_padded()
    encoder(vlad.DescriptorSets(sets.descriptors[:100], [0, 50, 100]))
    compiled = kernel._cache_size()
    for n_rows, n_images in [(200, 2), (1000, 2), (30, 2)]:  # one bucket
        offsets = np.linspace(0, n_rows, n_images + 1).astype(np.int64)
        encoder(vlad.DescriptorSets(sets.descriptors[:n_rows], offsets))
    assert kernel._cache_size() == compiled


@pytest.mark.parametrize(
    ("sets", "message"),
    [
        ([np.ones((3, 5), np.float32)], "descriptors have 5 features but"),
        ([np.full((2, 16), np.nan, np.float32)], "NaN or infinite"),
    ],
)
def test_bad_input_gets_a_clear_error(problem, sets, message):
    _, codebook = problem
    with pytest.raises(ValueError, match=message):
        vlad.JaxEncoder(codebook)(sets)


def test_missing_jax_gives_install_hint(problem, monkeypatch):
    monkeypatch.setitem(sys.modules, "jax", None)
    with pytest.raises(ImportError, match=r"pip install 'vlad\[jax\]'"):
        vlad.JaxEncoder(problem[1])
