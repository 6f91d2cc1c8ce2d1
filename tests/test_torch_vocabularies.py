"""TorchEncoder and NetVLAD take one vocabulary and refuse a codebook of several."""

from __future__ import annotations

import numpy as np
import pytest

import vlad

torch = pytest.importorskip("torch")
from vlad.backends.torch._layer import NetVLAD  # noqa: E402


@pytest.fixture(scope="module")
def stacked():
    sets = vlad.datasets.make_descriptor_sets(4, 30, 6, seed=0)
    return vlad.fit_vocabularies(sets, 3, 2, seed=0), sets.descriptors


def test_torch_encoder_refuses_several_vocabularies(stacked):
    codebook, _ = stacked
    with pytest.raises(ValueError, match=r"holds 2 vocabularies \(sizes \[3, 3\]\)"):
        vlad.TorchEncoder(codebook, device="cpu")


def test_netvlad_refuses_several_vocabularies(stacked):
    codebook, sample = stacked
    with pytest.raises(ValueError, match="holds 2 vocabularies"):
        NetVLAD.from_codebook(codebook, sample)


def test_each_vocabulary_alone_is_accepted(stacked):
    codebook, sample = stacked
    for part in vlad.split_vocabularies(codebook):
        layer = NetVLAD.from_codebook(part, sample)
        np.testing.assert_allclose(
            layer.centers.detach().numpy(), part.centers, rtol=1e-6
        )
