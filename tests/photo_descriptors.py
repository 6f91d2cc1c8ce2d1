"""One bundled photo's SIFT descriptors and a codebook fitted on the others,
for comparing the accelerator encoders with :func:`vlad.encode` on real data.

A codebook fitted on the photo itself would make its residual sums nearly
zero (k-means centres are their members' means), so the vectors would be
rounding noise; the other photos give ordinary residuals.
"""

from __future__ import annotations

import functools

import numpy as np
from photos import DATA, PHOTOS

import vlad

#: The photo that is encoded; the codebook is fitted on the others.
PHOTO = "coffee.jpg"


@functools.cache
def photo_problem() -> tuple[np.ndarray, vlad.Codebook]:
    """``(descriptors (L, 128) float32, codebook of 16 centres)``."""
    descriptors = {
        name: vlad.extract_sift(vlad.read_image(DATA / name), max_side=256)
        for name in PHOTOS
    }
    others = [block for name, block in descriptors.items() if name != PHOTO]
    codebook = vlad.fit_codebook(others, 16, seed=0)
    return descriptors[PHOTO], codebook
