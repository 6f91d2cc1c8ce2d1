"""Residual normalisation with PyTorch: the ``torch`` aggregator and
TorchEncoder against the loop oracle; multiple and soft assignment refused."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import ragged_problems
from hypothesis import given, settings

import vlad

pytest.importorskip("torch")


def unit_residual_sums(descriptors, labels, offsets, centers):
    """Sums of unit residuals, one descriptor at a time, in float64."""
    sums = np.zeros((len(offsets) - 1, *centers.shape))
    for t, (a, b) in enumerate(zip(offsets[:-1], offsets[1:], strict=True)):
        for row in range(a, b):
            residual = descriptors[row].astype(np.float64) - centers[labels[row]]
            norm = np.sqrt(np.sum(residual**2))
            sums[t, labels[row]] += residual / norm if norm > 0 else residual
    return sums


@settings(max_examples=20)
@given(problem=ragged_problems())
def test_aggregator_matches_the_reference(problem):
    descriptors, labels, offsets, centers = problem
    result = vlad.aggregate(
        descriptors, labels, offsets, centers, "torch", residual_norm=True
    )
    expected = unit_residual_sums(descriptors, labels, offsets, centers)
    tolerance = 1e-5 if descriptors.dtype == np.float32 else 1e-12
    np.testing.assert_allclose(result, expected, rtol=tolerance, atol=tolerance * 20)


@pytest.mark.parametrize("power", [1.0, 0.2])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_encoder_equals_encode(power, dtype):
    sets = vlad.datasets.make_descriptor_sets(12, 50, 16, ragged=True, seed=4)
    sets = vlad.DescriptorSets.from_list(
        [rows.astype(dtype) for rows in sets], n_features=16
    )
    codebook = vlad.fit_codebook(sets, 6, seed=0)
    options = {"residual_norm": True, "power": power, "intra": False, "l2": False}
    expected = vlad.encode(sets, codebook, aggregator="loop", **options)
    result = vlad.TorchEncoder(codebook, device="cpu", **options)(sets)
    assert result.dtype == expected.dtype
    np.testing.assert_allclose(result, expected, rtol=1e-5, atol=1e-4)


def test_encoder_refuses_multiple_assignment():
    with pytest.raises(ValueError, match="TorchEncoder supports assignment='hard'"):
        vlad.TorchEncoder(np.eye(3), device="cpu", assignment="multiple")
