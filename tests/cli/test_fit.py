"""``vlad fit``."""

from __future__ import annotations

import numpy as np

import vlad

from .conftest import run


def test_fit_on_descriptor_files_gives_the_codebook_of_the_images(
    tmp_path, codebook_path, photo_sets
):
    photo_sets.save(tmp_path / "d.npz")
    np.save(tmp_path / "d.npy", photo_sets.descriptors)
    run("fit", tmp_path / "d.npz", "-k", 16, "-o", tmp_path / "from-npz.npz")
    run("fit", tmp_path / "d.npy", "-k", 16, "-o", tmp_path / "from-npy.npz")
    expected = vlad.Codebook.load(codebook_path)
    from_npz = vlad.Codebook.load(tmp_path / "from-npz.npz")
    from_npy = vlad.Codebook.load(tmp_path / "from-npy.npz")
    assert from_npz.fingerprint == from_npy.fingerprint == expected.fingerprint
    assert from_npz.metadata["descriptor"] == expected.metadata["descriptor"]
