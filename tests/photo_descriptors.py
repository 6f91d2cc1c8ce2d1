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


def assert_same_nearest(labels, expected, descriptors, centers) -> None:
    """``labels`` (an accelerator's) are the nearest centres of ``descriptors``
    as ``expected`` (:func:`vlad.assign`'s) are: the same wherever the nearest
    centre is ahead of the next by more than float32's rounding of the matrix
    product (a bound no CPU's or library's order of operations can cross);
    where two centres are closer than that, either is nearest.
    """
    x = np.asarray(descriptors, np.float64)
    c = np.asarray(centers, np.float64)
    distances = (x**2).sum(1)[:, None] - 2 * x @ c.T + (c**2).sum(1)
    rounding = (
        x.shape[1] * np.finfo(np.float32).eps * ((x**2).sum(1) + (c**2).sum(1).max())
    )
    nearest = distances.min(axis=1)
    rows = np.arange(len(x))
    for found in (np.asarray(labels), np.asarray(expected)):
        assert (distances[rows, found] - nearest <= rounding).all()
    second = np.partition(distances, 1, axis=1)[:, 1] if c.shape[0] > 1 else np.inf
    clear = second - nearest > 2 * rounding
    np.testing.assert_array_equal(
        np.asarray(labels)[clear], np.asarray(expected)[clear]
    )
