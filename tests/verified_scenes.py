"""Made-up images with keypoints for the tests of verified searches."""

from __future__ import annotations

import numpy as np

import vlad

#: Images made by :func:`scenes`.
N_IMAGES = 12


def scenes() -> vlad.DescriptorSets:
    """Twelve made-up images: 0, 1 and 2 are one scene (moved, scaled and
    noisy copies), so each verifies the others; 5 and 6 another; the rest
    are unrelated."""
    rng = np.random.default_rng(1)
    names = [f"{n:02d}.jpg" for n in range(N_IMAGES)]
    arrays = [rng.random((60, 8), dtype=np.float32) for _ in names]
    keypoints = [rng.random((60, 4), dtype=np.float32) * 500 for _ in names]
    for first, copy in ((0, 1), (0, 2), (5, 6)):
        arrays[copy] = arrays[first] + 0.01 * rng.random((60, 8), dtype=np.float32)
        keypoints[copy] = keypoints[first] * (1 + 0.1 * copy) + 3
    return vlad.DescriptorSets.from_list(arrays, names, keypoints=keypoints)
