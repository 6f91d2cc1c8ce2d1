"""``vlad extract``."""

from __future__ import annotations

import numpy as np
from photos import DATA, PHOTOS

import vlad

from .conftest import FAST, run


def test_extract_writes_what_the_library_extracts(tmp_path, photo_sets):
    result = run("extract", DATA, *FAST, "-j", 2, "-o", tmp_path / "d.npz")
    sets = vlad.DescriptorSets.load(tmp_path / "d.npz")
    np.testing.assert_array_equal(sets.descriptors, photo_sets.descriptors)
    np.testing.assert_array_equal(sets.offsets, photo_sets.offsets)
    np.testing.assert_array_equal(sets.keypoints, photo_sets.keypoints)
    assert sets.names == PHOTOS
    assert sets.metadata == photo_sets.metadata
    assert "(RootSIFT at detected keypoints)" in result.stderr
