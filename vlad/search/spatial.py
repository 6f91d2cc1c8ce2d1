"""Spatial verification: re-rank candidates by geometrically consistent matches.

A query's descriptors are matched to a candidate's with Lowe's ratio test, a
geometric model (similarity, affine or homography) is fitted to the matched
keypoint positions with OpenCV's RANSAC, and the candidate scores the number
of matches the model explains (its inliers). Candidates with at least
``min_inliers`` move to the front, most inliers first (Philbin et al. 2007).

OpenCV's RANSAC draws its samples from a generator seeded afresh on every
call, so a count depends only on its inputs: not on earlier calls, on
``cv2.setRNGSeed``, on the thread it runs on or on ``n_jobs``.

References
----------
.. [1] D. G. Lowe. "Distinctive image features from scale-invariant
   keypoints". IJCV 2004.
.. [2] J. Philbin, O. Chum, M. Isard, J. Sivic, A. Zisserman. "Object
   retrieval with large vocabularies and fast spatial matching". CVPR 2007.
"""

from __future__ import annotations

import functools
import math
import numbers

import numpy as np
from numpy.typing import ArrayLike

from vlad.core.descriptors import DescriptorSets
from vlad.core.validation import as_float_matrix, check_finite, check_positive_int
from vlad.images.pool import map_in_order

__all__ = [
    "GEOMETRIC_MODELS",
    "LOWE_RATIO",
    "MIN_INLIERS",
    "REPROJECTION_THRESHOLD",
    "count_inliers",
    "inlier_matches",
    "match_descriptors",
    "spatial_rerank",
]

#: Lowe's ratio: a match is kept when its distance is below this fraction of
#: the second-nearest neighbour's.
LOWE_RATIO = 0.8
#: Inliers a candidate needs to count as verified. Measured on the bundled
#: photos (descriptors at ``max_side`` 256 and 1024, affine model, 8 px):
#: unrelated photos got at most 5, rotated, scaled, cropped and
#: perspective-warped copies at least 9.
MIN_INLIERS = 8
#: Largest reprojection error, in pixels of the candidate image's original
#: coordinates, of a match that a model explains.
REPROJECTION_THRESHOLD = 8.0
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


#: Geometric models by name: each fits query positions to candidate positions
#: and returns the inlier mask (None when no model fits).
GEOMETRIC_MODELS = {
    "similarity": _fit_similarity,
    "affine": _fit_affine,
    "homography": _fit_homography,
}
#: Matches each model needs at the least (its minimal sample).
_MINIMAL_MATCHES = {"similarity": 2, "affine": 3, "homography": 4}


def match_descriptors(
    query_descriptors: ArrayLike, descriptors: ArrayLike, *, ratio: float = LOWE_RATIO
) -> np.ndarray:
    """Pairs of matching descriptors by Lowe's ratio test, one per candidate
    descriptor.

    Each query descriptor's two nearest candidate descriptors (Euclidean,
    ``cv2.BFMatcher``) are found; it matches the nearest when that is closer
    than ``ratio`` times the second. A candidate descriptor matched by several
    query descriptors keeps only the closest (ties: the lowest query index), so
    a repeated texture cannot pile matches onto one point, which a degenerate
    model would explain. A candidate with fewer than 2 descriptors has no
    second neighbour for the test, and no matches.

    Parameters
    ----------
    query_descriptors : array-like of shape (n_query, n_features)
    descriptors : array-like of shape (n_candidate, n_features)
    ratio : float, default=LOWE_RATIO
        In (0, 1]; lower keeps fewer, more distinctive matches.

    Returns
    -------
    ndarray of int64 of shape (n_matches, 2)
        ``[query_index, candidate_index]`` rows, by query index.

    Examples
    --------
    >>> import numpy as np
    >>> from vlad.search.spatial import match_descriptors
    >>> candidate = np.array([[0.0, 0.0], [10.0, 0.0], [0.0, 10.0]])
    >>> query = np.array([[9.0, 0.0], [5.0, 5.0], [0.0, 9.5], [0.5, 9.0]])
    >>> match_descriptors(query, candidate).tolist()
    [[0, 1], [2, 2]]
    """
    query_descriptors = as_float_matrix(
        query_descriptors, "query_descriptors", dtype=np.float32
    )
    descriptors = as_float_matrix(descriptors, "descriptors", dtype=np.float32)
    if query_descriptors.shape[1] != descriptors.shape[1]:
        raise ValueError(
            f"query_descriptors have {query_descriptors.shape[1]} features but "
            f"descriptors have {descriptors.shape[1]}; they must match"
        )
    check_finite(query_descriptors, "query_descriptors")
    check_finite(descriptors, "descriptors")
    return _match(query_descriptors, descriptors, _check_ratio(ratio))


def count_inliers(
    query_keypoints: ArrayLike,
    query_descriptors: ArrayLike,
    keypoints: ArrayLike,
    descriptors: ArrayLike,
    *,
    ratio: float = LOWE_RATIO,
    model: str = "affine",
    reprojection_threshold: float = REPROJECTION_THRESHOLD,
    min_matches: int | None = None,
) -> int:
    """Matches between a query and a candidate image that one geometric model
    explains.

    Parameters
    ----------
    query_keypoints : array-like of shape (n_query, 4)
        Query keypoint positions (x, y, size, angle, as
        :attr:`vlad.DescriptorSets.keypoints`; only x and y are used, so 2
        columns suffice).
    query_descriptors : array-like of shape (n_query, n_features)
    keypoints : array-like of shape (n_candidate, 4)
        The candidate's keypoint positions.
    descriptors : array-like of shape (n_candidate, n_features)
    ratio : float, default=LOWE_RATIO
        Lowe's ratio, see :func:`match_descriptors`.
    model : {"affine", "similarity", "homography"}, default="affine"
        The transform from query to candidate positions, fitted by OpenCV's
        RANSAC: ``cv2.estimateAffine2D``, ``cv2.estimateAffinePartial2D``
        (rotation, uniform scale, translation) or ``cv2.findHomography``.
    reprojection_threshold : float, default=REPROJECTION_THRESHOLD
        Largest distance, in the candidate's pixels, between a matched
        keypoint and where the model maps its query keypoint, for an inlier.
        Keypoints are in original image coordinates: for images much larger
        than the extraction's ``max_side``, raise it in proportion.
    min_matches : int, optional
        Fewer matches than this give 0 without fitting; never fewer than the
        model's minimal sample (2 similarity, 3 affine, 4 homography), the
        default.

    Returns
    -------
    int
        The number of inlier matches; 0 when too few matches or no model fits.

    See Also
    --------
    inlier_matches : The inlier matches themselves.

    Examples
    --------
    >>> import cv2
    >>> import vlad.images.files, vlad.images.sift
    >>> from vlad.search.spatial import count_inliers
    >>> image = vlad.images.files.read_image("data/chelsea.jpg")
    >>> rotated = cv2.rotate(image, cv2.ROTATE_90_CLOCKWISE)
    >>> options = vlad.images.sift.SiftOptions(max_keypoints=300)
    >>> extract = vlad.images.sift.extract_keypoints_with_options
    >>> count_inliers(*extract(image, options), *extract(rotated, options)) > 100
    True
    """
    return len(
        inlier_matches(
            query_keypoints,
            query_descriptors,
            keypoints,
            descriptors,
            ratio=ratio,
            model=model,
            reprojection_threshold=reprojection_threshold,
            min_matches=min_matches,
        )
    )


def inlier_matches(
    query_keypoints: ArrayLike,
    query_descriptors: ArrayLike,
    keypoints: ArrayLike,
    descriptors: ArrayLike,
    *,
    ratio: float = LOWE_RATIO,
    model: str = "affine",
    reprojection_threshold: float = REPROJECTION_THRESHOLD,
    min_matches: int | None = None,
) -> np.ndarray:
    """The matches between a query and a candidate image that one geometric
    model explains: what :func:`count_inliers` counts.

    Parameters are those of :func:`count_inliers`.

    Returns
    -------
    ndarray of int64 of shape (n_inliers, 2)
        ``[query_index, candidate_index]`` rows (of the keypoints given), by
        query index; none when too few matches or no model fits.

    Examples
    --------
    >>> import cv2
    >>> import vlad.images.files, vlad.images.sift
    >>> from vlad.search.spatial import count_inliers, inlier_matches
    >>> image = vlad.images.files.read_image("data/chelsea.jpg")
    >>> rotated = cv2.rotate(image, cv2.ROTATE_90_CLOCKWISE)
    >>> options = vlad.images.sift.SiftOptions(max_keypoints=300)
    >>> extract = vlad.images.sift.extract_keypoints_with_options
    >>> query, candidate = extract(image, options), extract(rotated, options)
    >>> pairs = inlier_matches(*query, *candidate)
    >>> len(pairs) == count_inliers(*query, *candidate)
    True
    >>> # turned a quarter clockwise, (x, y) lands on (height - 1 - y, x)
    >>> x, y = query[0][pairs[:, 0], 0], query[0][pairs[:, 0], 1]
    >>> moved = candidate[0][pairs[:, 1], :2]
    >>> bool(abs(moved[:, 0] - (image.shape[0] - 1 - y)).max() < 8)
    True
    """
    fit = _resolve_model(model)
    ratio = _check_ratio(ratio)
    threshold = _check_threshold(reprojection_threshold)
    if min_matches is None:
        min_matches = _MINIMAL_MATCHES[model]
    else:
        min_matches = max(
            check_positive_int(min_matches, "min_matches"), _MINIMAL_MATCHES[model]
        )
    query_keypoints, query_descriptors = _check_image(
        query_keypoints, query_descriptors, "query_"
    )
    keypoints, descriptors = _check_image(keypoints, descriptors, "")
    if query_descriptors.shape[1] != descriptors.shape[1]:
        raise ValueError(
            f"query_descriptors have {query_descriptors.shape[1]} features but "
            f"descriptors have {descriptors.shape[1]}; they must match"
        )
    return _inlier_matches(
        query_keypoints,
        query_descriptors,
        keypoints,
        descriptors,
        ratio=ratio,
        fit=fit,
        threshold=threshold,
        min_matches=min_matches,
    )


def spatial_rerank(
    query_keypoints: ArrayLike,
    query_descriptors: ArrayLike,
    candidates: ArrayLike,
    database: DescriptorSets,
    *,
    depth: int | None = None,
    ratio: float = LOWE_RATIO,
    model: str = "affine",
    reprojection_threshold: float = REPROJECTION_THRESHOLD,
    min_inliers: int = MIN_INLIERS,
    n_jobs: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Re-rank a query's candidates by their inliers (:func:`count_inliers`).

    The first ``depth`` candidates are verified. Those with at least
    ``min_inliers`` inliers come first, most inliers first (ties keep their
    order); all others follow in their original order.

    Parameters
    ----------
    query_keypoints : array-like of shape (n_query, 4)
        Where the query's descriptors were taken (only x and y are used).
    query_descriptors : array-like of shape (n_query, n_features)
    candidates : array-like of int of shape (n_candidates,)
        Rows of ``database``, best first (a search's ranking).
    database : DescriptorSets
        The database images' descriptors, with keypoints (as
        :func:`vlad.extract_images` and ``vlad extract`` keep them).
    depth : int, optional
        Verify only the first ``depth`` candidates; all by default.
    ratio, model, reprojection_threshold
        As in :func:`count_inliers`.
    min_inliers : int, default=MIN_INLIERS
        Inliers that make a candidate verified.
    n_jobs : int or None, default=None
        Candidates verified at once on threads; None or -1 for every core.
        The result does not depend on it.

    Returns
    -------
    ranking : ndarray of int64 of shape (n_candidates,)
        ``candidates`` re-ranked.
    inliers : ndarray of int64 of shape (n_candidates,)
        Inliers of each candidate of ``ranking``; -1 for those beyond
        ``depth``, which were not verified.

    Raises
    ------
    ValueError
        The database or the query holds no keypoint positions, a candidate is
        not a row of the database, or a bad parameter.

    Examples
    --------
    >>> import vlad
    >>> from vlad.search.spatial import spatial_rerank
    >>> options = {"max_side": 256, "max_keypoints": 300}
    >>> database, _ = vlad.extract_images("data", options, n_jobs=1)
    >>> database.names[3]
    'chelsea.jpg'
    >>> query = 3
    >>> ranking, inliers = spatial_rerank(
    ...     database.keypoints_of(query), database[query], [0, 1, 2, 3], database
    ... )
    >>> ranking.tolist(), bool(inliers[0] > 100), bool(inliers[1:].max() < 8)
    ([3, 0, 1, 2], True, True)
    """
    fit = _resolve_model(model)
    ratio = _check_ratio(ratio)
    threshold = _check_threshold(reprojection_threshold)
    min_inliers = check_positive_int(min_inliers, "min_inliers")
    if not isinstance(database, DescriptorSets):
        raise TypeError(
            f"database must be a DescriptorSets; got {type(database).__name__}"
        )
    if database.keypoints is None:
        raise ValueError(
            "database holds no keypoint positions; extract descriptors with "
            "vlad extract (0.3 or later) or vlad.extract_images to keep them"
        )
    if query_keypoints is None:
        raise ValueError(
            "query_keypoints is None: the query holds no keypoint positions; "
            "extract descriptors with vlad extract (0.3 or later) or "
            "vlad.extract_images to keep them"
        )
    query_keypoints, query_descriptors = _check_image(
        query_keypoints, query_descriptors, "query_"
    )
    if query_descriptors.shape[1] != database.n_features:
        raise ValueError(
            f"query_descriptors have {query_descriptors.shape[1]} features but "
            f"the database's have {database.n_features}; they must match"
        )
    candidates = _check_candidates(candidates, len(database))
    if depth is None:
        depth = len(candidates)
    elif isinstance(depth, bool) or not isinstance(depth, numbers.Integral):
        raise TypeError(f"depth must be None or an integer >= 0; got {depth!r}")
    elif depth < 0:
        raise ValueError(f"depth must be None or an integer >= 0; got {depth!r}")
    verify = functools.partial(
        _verify_candidate,
        query_keypoints=query_keypoints,
        query_descriptors=query_descriptors.astype(np.float32, copy=False),
        database=database,
        ratio=ratio,
        fit=fit,
        threshold=threshold,
        min_matches=_MINIMAL_MATCHES[model],
    )
    inliers = np.full(len(candidates), -1, dtype=np.int64)
    verified = candidates[: int(depth)].tolist()
    inliers[: len(verified)] = list(map_in_order(verify, verified, n_jobs))
    strong = np.flatnonzero(inliers >= min_inliers)
    strong = strong[np.argsort(-inliers[strong], kind="stable")]
    positions = np.concatenate([strong, np.flatnonzero(inliers < min_inliers)])
    return candidates[positions], inliers[positions]


def _verify_candidate(row: int, *, database: DescriptorSets, **settings) -> int:
    """Inliers of the query against database image ``row``."""
    matches = _inlier_matches(
        keypoints=database.keypoints_of(row),
        descriptors=database[row].astype(np.float32, copy=False),
        **settings,
    )
    return len(matches)


def _inlier_matches(
    query_keypoints: np.ndarray,
    query_descriptors: np.ndarray,
    keypoints: np.ndarray,
    descriptors: np.ndarray,
    *,
    ratio: float,
    fit,
    threshold: float,
    min_matches: int,
) -> np.ndarray:
    """:func:`inlier_matches` on checked float32 input (``min_matches`` at
    least the model's minimal sample)."""
    matches = _match(query_descriptors, descriptors, ratio)
    if len(matches) < min_matches:
        return np.zeros((0, 2), dtype=np.int64)
    sources = np.ascontiguousarray(query_keypoints[matches[:, 0], :2])
    targets = np.ascontiguousarray(keypoints[matches[:, 1], :2])
    mask = fit(sources, targets, threshold)
    if mask is None:
        return np.zeros((0, 2), dtype=np.int64)
    return matches[mask.ravel().astype(bool)]


def _match(
    query_descriptors: np.ndarray, descriptors: np.ndarray, ratio: float
) -> np.ndarray:
    """:func:`match_descriptors` on checked float32 input."""
    import cv2

    if len(query_descriptors) == 0 or len(descriptors) < 2:
        return np.zeros((0, 2), dtype=np.int64)
    pairs = cv2.BFMatcher(cv2.NORM_L2).knnMatch(query_descriptors, descriptors, k=2)
    kept = [
        (nearest.distance, nearest.queryIdx, nearest.trainIdx)
        for nearest, second in pairs
        if nearest.distance < ratio * second.distance
    ]
    if not kept:
        return np.zeros((0, 2), dtype=np.int64)
    distances, query_rows, rows = (
        np.array(column) for column in zip(*kept, strict=True)
    )
    closest_first = np.lexsort((query_rows, distances))
    _, first = np.unique(rows[closest_first], return_index=True)
    keep = np.sort(closest_first[first])
    return np.stack([query_rows[keep], rows[keep]], axis=1).astype(np.int64)


def _resolve_model(model: str):
    """The fitting function of a model name."""
    try:
        return GEOMETRIC_MODELS[model]
    except (KeyError, TypeError):
        raise ValueError(
            f"Unknown model {model!r}; expected one of {sorted(GEOMETRIC_MODELS)}"
        ) from None


def _check_ratio(ratio: float) -> float:
    """``ratio`` as a float in (0, 1]."""
    if isinstance(ratio, bool) or not isinstance(ratio, numbers.Real):
        raise TypeError(f"ratio must be a number in (0, 1]; got {ratio!r}")
    if not 0.0 < ratio <= 1.0:
        raise ValueError(f"ratio must be a number in (0, 1]; got {ratio!r}")
    return float(ratio)


def _check_threshold(threshold: float) -> float:
    """``reprojection_threshold`` as a positive finite float."""
    if isinstance(threshold, bool) or not isinstance(threshold, numbers.Real):
        raise TypeError(
            f"reprojection_threshold must be a positive number of pixels; "
            f"got {threshold!r}"
        )
    if not (threshold > 0.0 and math.isfinite(threshold)):
        raise ValueError(
            f"reprojection_threshold must be a positive number of pixels; "
            f"got {threshold!r}"
        )
    return float(threshold)


def _check_image(
    keypoints: ArrayLike, descriptors: ArrayLike, prefix: str
) -> tuple[np.ndarray, np.ndarray]:
    """Keypoints ``(n, >= 2)`` and descriptors ``(n, F)`` of one image, both
    float32 and finite; ``prefix`` names them in errors (``"query_"``)."""
    descriptors = as_float_matrix(descriptors, f"{prefix}descriptors", dtype=np.float32)
    keypoints = as_float_matrix(keypoints, f"{prefix}keypoints", dtype=np.float32)
    if keypoints.shape[0] != descriptors.shape[0] or keypoints.shape[1] < 2:
        raise ValueError(
            f"{prefix}keypoints must have shape ({descriptors.shape[0]}, 4), one "
            f"row of x, y, size, angle per descriptor; got shape {keypoints.shape}"
        )
    check_finite(keypoints, f"{prefix}keypoints")
    check_finite(descriptors, f"{prefix}descriptors")
    return keypoints, descriptors


def _check_candidates(candidates: ArrayLike, n_images: int) -> np.ndarray:
    """``candidates`` as a 1-D int64 array of rows of a database of
    ``n_images``."""
    array = np.asarray(candidates)
    if array.ndim != 1:
        raise ValueError(
            f"candidates must be a 1-D array of database rows; got shape {array.shape}"
        )
    if array.size == 0:
        return np.zeros(0, dtype=np.int64)
    if array.dtype.kind not in "iu":
        raise TypeError(
            f"candidates must hold integer database rows; got dtype {array.dtype}"
        )
    low, high = int(array.min()), int(array.max())
    if low < 0 or high >= n_images:
        raise ValueError(
            f"candidates must be rows of the database, in [0, {n_images}); "
            f"got values from {low} to {high}"
        )
    return array.astype(np.int64)
