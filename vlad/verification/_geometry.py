"""Geometric models fitted to matched keypoint positions by RANSAC.

A fundamental matrix (a rigid 3-D scene seen from two places, by MAGSAC++), a
homography (a plane seen in perspective), an affine transform or a similarity
(edited copies), each fitted by OpenCV to the positions of tentative matches
(:mod:`vlad.verification._matching`); the matches a model explains are its inliers.

OpenCV's RANSAC and MAGSAC draw their samples from a generator seeded afresh
on every call, so an inlier mask depends only on its inputs: not on earlier
calls, on ``cv2.setRNGSeed`` or on the thread it runs on.

References
----------
.. [1] D. Barath, J. Noskova, M. Ivashechkin, J. Matas. "MAGSAC++, a fast,
   reliable and accurate robust estimator". CVPR 2020.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

from vlad.core._parameters import GEOMETRY, INLIER_THRESHOLD

__all__ = [
    "DEFAULT_THRESHOLDS",
    "EPIPOLAR_THRESHOLD",
    "GEOMETRIC_MODELS",
    "MINIMAL_MATCHES",
    "POSITION_SIDE",
    "REPROJECTION_THRESHOLD",
    "fitter",
]

#: Largest reprojection error, in pixels (see :data:`POSITION_SIDE`), of a
#: match that a similarity, an affine transform or a homography explains.
REPROJECTION_THRESHOLD = 8.0
#: Largest distance, in pixels (see :data:`POSITION_SIDE`), of a match from
#: the epipolar line a fundamental matrix puts it on, for an inlier. MAGSAC++
#: weighs matches by their residuals up to it, so it matters little: 1, 2 and
#: 4 pixels ranked 40 of the real photos' queries alike; 2 leaves a margin for
#: keypoints found at coarse scales.
EPIPOLAR_THRESHOLD = 2.0
#: Keypoint positions are measured in pixels of the image scaled down so that
#: its keypoints span at most this many pixels across (images extracted at
#: ``max_side`` 1024, the default, keep their own pixels), so one threshold
#: holds for photos of any size.
POSITION_SIDE = 1024.0
#: MAGSAC++ samples at most for a fundamental matrix. An unrelated pair draws
#: them all, so its time grows in proportion; true pairs' ratio-tested mutual
#: matches are mostly inliers, found in far fewer (on the real photos 2,000
#: ranked as 1,000 did, in twice the time).
FUNDAMENTAL_MAX_ITERATIONS = 1_000
#: RANSAC samples at most; it stops earlier once confident. For 99.9%
#: confidence, 3-match samples need about 6,900 draws at 10% inliers and 860
#: at 20% (OpenCV's default of 2,000 gives up near 15%).
RANSAC_MAX_ITERATIONS = 10_000
#: Probability RANSAC aims for of having drawn one all-inlier sample.
RANSAC_CONFIDENCE = 0.999


def _fit_similarity(sources: np.ndarray, targets: np.ndarray, threshold: float):
    """Inlier mask of a RANSAC rotation, uniform scale and translation."""
    import cv2

    return cv2.estimateAffinePartial2D(
        sources,
        targets,
        method=cv2.RANSAC,
        ransacReprojThreshold=threshold,
        maxIters=RANSAC_MAX_ITERATIONS,
        confidence=RANSAC_CONFIDENCE,
    )[1]


def _fit_affine(sources: np.ndarray, targets: np.ndarray, threshold: float):
    """Inlier mask of a RANSAC affine transform (6 degrees of freedom)."""
    import cv2

    return cv2.estimateAffine2D(
        sources,
        targets,
        method=cv2.RANSAC,
        ransacReprojThreshold=threshold,
        maxIters=RANSAC_MAX_ITERATIONS,
        confidence=RANSAC_CONFIDENCE,
    )[1]


def _fit_homography(sources: np.ndarray, targets: np.ndarray, threshold: float):
    """Inlier mask of a RANSAC homography (a plane seen in perspective)."""
    import cv2

    return cv2.findHomography(
        sources,
        targets,
        cv2.RANSAC,
        threshold,
        maxIters=RANSAC_MAX_ITERATIONS,
        confidence=RANSAC_CONFIDENCE,
    )[1]


def _fit_fundamental(sources: np.ndarray, targets: np.ndarray, threshold: float):
    """Inlier mask of a MAGSAC++ fundamental matrix (a rigid 3-D scene seen
    from two places)."""
    import cv2

    try:
        return cv2.findFundamentalMat(
            sources,
            targets,
            cv2.USAC_MAGSAC,
            threshold,
            RANSAC_CONFIDENCE,
            FUNDAMENTAL_MAX_ITERATIONS,
        )[1]
    except cv2.error:
        # OpenCV 4.x and 5.0 fail an assertion ("!model.empty()") on some
        # degenerate sets of matches where no sample gives a model, instead
        # of returning none.
        return None


#: Geometric models by name: each fits query positions to candidate positions
#: and returns the inlier mask (None when no model fits).
GEOMETRIC_MODELS = {
    "fundamental": _fit_fundamental,
    "homography": _fit_homography,
    "affine": _fit_affine,
    "similarity": _fit_similarity,
}
#: Matches each model needs at the least (its minimal sample; OpenCV's
#: fundamental matrix from 7 matches may be any of three).
MINIMAL_MATCHES = {"similarity": 2, "affine": 3, "homography": 4, "fundamental": 8}
#: Each model's threshold, in pixels, when none is given.
DEFAULT_THRESHOLDS = {
    "similarity": REPROJECTION_THRESHOLD,
    "affine": REPROJECTION_THRESHOLD,
    "homography": REPROJECTION_THRESHOLD,
    "fundamental": EPIPOLAR_THRESHOLD,
}


def fitter(
    model: str = GEOMETRY.default,
    reprojection_threshold: float | None = INLIER_THRESHOLD.default,
) -> Callable[[np.ndarray, np.ndarray], np.ndarray | None]:
    """One of :data:`GEOMETRIC_MODELS` with its threshold, checked once, for
    many pairs of images.

    Parameters
    ----------
    model : {"fundamental", "homography", "affine", "similarity"}, \
default="fundamental"
        What relates query and candidate positions, see
        :func:`vlad.verification._spatial.count_inliers`.
    reprojection_threshold : float, optional
        Largest distance, in pixels, of an inlier from where the model puts
        it; the model's :data:`DEFAULT_THRESHOLDS` entry by default.

    Returns
    -------
    callable
        ``fit(sources, targets)`` of float32 ``(n, 2)`` positions, ``n`` at
        least the model's :data:`MINIMAL_MATCHES`; it returns the inlier mask,
        or None when no model fits.
    """
    fit = _resolve_model(model)
    threshold = _check_threshold(reprojection_threshold, model)
    return functools.partial(fit, threshold=threshold)


def _resolve_model(model: str):
    """The fitting function of a model name."""
    return GEOMETRIC_MODELS[GEOMETRY.check(model)]


def _check_threshold(threshold: float | None, model: str) -> float:
    """``reprojection_threshold`` as a positive finite float; None is the
    model's default."""
    threshold = INLIER_THRESHOLD.check(threshold)
    return DEFAULT_THRESHOLDS[model] if threshold is None else threshold
