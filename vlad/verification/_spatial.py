"""Spatial verification: re-rank candidates by geometrically consistent matches.

A query's descriptors are matched to a candidate's (mutual nearest neighbours
from one matrix product, or Lowe's ratio test: :mod:`vlad.verification._matching`), a
geometric model is fitted to the matched keypoint positions by RANSAC (a
fundamental matrix for 3-D scenes seen from elsewhere, a homography for
planes, an affine transform or a similarity for copies:
:mod:`vlad.verification._geometry`), and the candidate scores the number of matches
the model explains (its inliers). Candidates with at least ``min_inliers`` move to
the front, most inliers first (Philbin et al. 2007).

OpenCV's RANSAC and MAGSAC draw their samples from a generator seeded afresh
on every call, so a count depends only on its inputs: not on earlier calls, on
``cv2.setRNGSeed``, on the thread it runs on or on ``n_jobs``.

References
----------
.. [1] D. G. Lowe. "Distinctive image features from scale-invariant
   keypoints". IJCV 2004.
.. [2] J. Philbin, O. Chum, M. Isard, J. Sivic, A. Zisserman. "Object
   retrieval with large vocabularies and fast spatial matching". CVPR 2007.
.. [3] D. Barath, J. Noskova, M. Ivashechkin, J. Matas. "MAGSAC++, a fast,
   reliable and accurate robust estimator". CVPR 2020.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike
from threadpoolctl import threadpool_limits

from vlad.core import _parameters as spec
from vlad.core._deprecation import renamed_keyword
from vlad.core._descriptors import DescriptorSets
from vlad.core._parameters import (
    DEPTH,
    GEOMETRY,
    INLIER_THRESHOLD,
    MATCHING,
    N_JOBS,
    RATIO,
    VERIFY_KEYPOINTS,
)
from vlad.core._pool import map_in_order
from vlad.core._validation import as_float_matrix, check_finite, check_positive_int
from vlad.errors import VladError, VladTypeError
from vlad.verification._geometry import (
    DEFAULT_THRESHOLDS,
    EPIPOLAR_THRESHOLD,
    GEOMETRIC_MODELS,
    MINIMAL_MATCHES,
    POSITION_SIDE,
    REPROJECTION_THRESHOLD,
    fitter,
)
from vlad.verification._matching import (
    LOWE_RATIO,
    MATCHINGS,
    match_descriptors,
    matcher,
)

__all__ = [
    "DEFAULT_THRESHOLDS",
    "EPIPOLAR_THRESHOLD",
    "GEOMETRIC_MODELS",
    "LOWE_RATIO",
    "MATCHINGS",
    "MAX_KEYPOINTS",
    "MIN_INLIERS",
    "POSITION_SIDE",
    "SMALLEST_MAX_KEYPOINTS",
    "REPROJECTION_THRESHOLD",
    "count_inliers",
    "inlier_matches",
    "match_descriptors",
    "spatial_rerank",
]

#: Inliers a candidate needs to count as verified. Chosen on both retrieval
#: benchmarks (depth 20, the default matching, model and keypoints), as the
#: smallest count that ranks no family of either below its VLAD vectors
#: alone: at 10, unrelated photos verified against text-overlaid and occluded
#: copies (the copies' text family fell from 97.72 to 95.88 mAP); at 12 every
#: family of both is at least VLAD's (copies 98.83 mAP against 98.59, real
#: views 55.92 against 52.18); 15 verified fewer real-view pairs (54.62).
MIN_INLIERS = spec.MIN_INLIERS.default
#: Keypoints of each image that verification matches at most: the largest.
#: Matching costs the product of both images' counts. On real photos of 3-D
#: scenes (198 queries, SIFT's 2,000 keypoints at ``max_side`` 1024, top 20)
#: the 1,024 largest ranked better than all of them (mAP 0.595 against 0.579:
#: large keypoints are the ones that survive a change of viewpoint or light,
#: and fewer small ones leave fewer chance inliers), and the 512 largest
#: worse (0.569).
MAX_KEYPOINTS = VERIFY_KEYPOINTS.default
#: The smallest ``verify_keypoints``: the matches of fewer keypoints could not
#: determine every model (a fundamental matrix needs 8).
SMALLEST_MAX_KEYPOINTS = max(MINIMAL_MATCHES.values())


@renamed_keyword("max_keypoints", "verify_keypoints", since="0.5")
def count_inliers(
    query_keypoints: ArrayLike,
    query_descriptors: ArrayLike,
    keypoints: ArrayLike,
    descriptors: ArrayLike,
    *,
    matching: str = MATCHING.default,
    ratio: float = RATIO.default,
    model: str = GEOMETRY.default,
    reprojection_threshold: float | None = INLIER_THRESHOLD.default,
    min_matches: int | None = None,
    verify_keypoints: int | None = VERIFY_KEYPOINTS.default,
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
    matching : {"mutual+ratio", "mutual", "ratio"}, default="mutual+ratio"
        How descriptors are paired, see :func:`match_descriptors`.
    ratio : float, default=LOWE_RATIO
        Lowe's ratio, see :func:`match_descriptors`.
    model : {"fundamental", "homography", "affine", "similarity"}, \
default="fundamental"
        What relates query and candidate positions, fitted by OpenCV:

        - ``"fundamental"``: the epipolar geometry of a rigid 3-D scene seen
          from two places, by MAGSAC++ (``cv2.findFundamentalMat`` with
          ``cv2.USAC_MAGSAC``); the model for photos of buildings, objects
          and rooms from other viewpoints.
        - ``"homography"``: a plane seen in perspective, by RANSAC
          (``cv2.findHomography``).
        - ``"affine"`` and ``"similarity"`` (rotation, uniform scale and
          translation): edited copies, by RANSAC (``cv2.estimateAffine2D``,
          ``cv2.estimateAffinePartial2D``).
    reprojection_threshold : float, optional
        Largest distance, in pixels, between a matched keypoint and where the
        model puts it (a point, or for ``"fundamental"`` a line), for an
        inlier. Positions are scaled down to images whose keypoints span
        :data:`POSITION_SIDE` pixels first. By default
        :data:`EPIPOLAR_THRESHOLD` for ``"fundamental"``, otherwise
        :data:`REPROJECTION_THRESHOLD`.
    min_matches : int, optional
        Fewer matches than this give 0 without fitting; never fewer than the
        model's minimal sample (2 similarity, 3 affine, 4 homography, 8
        fundamental), the default.
    verify_keypoints : int or None, default=MAX_KEYPOINTS
        Match only each image's this many largest keypoints (by size, the
        third column; keypoints without one are all kept), at least
        :data:`SMALLEST_MAX_KEYPOINTS` (8); None or 0 for all. Formerly
        ``max_keypoints``, a name that still works, with a
        ``DeprecationWarning``, until the next release.

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
    >>> import vlad.images._files, vlad.images._sift
    >>> from vlad.verification._spatial import count_inliers
    >>> image = vlad.images.read_image("data/chelsea.jpg")
    >>> rotated = cv2.rotate(image, cv2.ROTATE_90_CLOCKWISE)
    >>> options = vlad.images.SiftOptions(max_keypoints=300)
    >>> extract = vlad.images._sift.extract_keypoints_with_options
    >>> count_inliers(*extract(image, options), *extract(rotated, options)) > 100
    True
    """
    return len(
        inlier_matches(
            query_keypoints,
            query_descriptors,
            keypoints,
            descriptors,
            matching=matching,
            ratio=ratio,
            model=model,
            reprojection_threshold=reprojection_threshold,
            min_matches=min_matches,
            verify_keypoints=verify_keypoints,
        )
    )


@renamed_keyword("max_keypoints", "verify_keypoints", since="0.5")
def inlier_matches(
    query_keypoints: ArrayLike,
    query_descriptors: ArrayLike,
    keypoints: ArrayLike,
    descriptors: ArrayLike,
    *,
    matching: str = MATCHING.default,
    ratio: float = RATIO.default,
    model: str = GEOMETRY.default,
    reprojection_threshold: float | None = INLIER_THRESHOLD.default,
    min_matches: int | None = None,
    verify_keypoints: int | None = VERIFY_KEYPOINTS.default,
) -> np.ndarray:
    """The matches between a query and a candidate image that one geometric
    model explains: what :func:`count_inliers` counts.

    Parameters
    ----------
    query_keypoints : array-like of shape (n_query, 4)
        Query keypoint positions (x, y, size, angle, as
        :attr:`vlad.DescriptorSets.keypoints`; only x and y are used, so 2
        columns suffice).
    query_descriptors : array-like of shape (n_query, n_features)
        The query's descriptors, one per keypoint.
    keypoints : array-like of shape (n_candidate, 4)
        The candidate's keypoint positions.
    descriptors : array-like of shape (n_candidate, n_features)
        The candidate's descriptors, one per keypoint.
    matching : {"mutual+ratio", "mutual", "ratio"}, default="mutual+ratio"
        How descriptors are paired, see :func:`match_descriptors`.
    ratio : float, default=LOWE_RATIO
        Lowe's ratio, see :func:`match_descriptors`.
    model : {"fundamental", "homography", "affine", "similarity"}, \
default="fundamental"
        What relates query and candidate positions, as in
        :func:`count_inliers`.
    reprojection_threshold : float, optional
        Largest distance, in pixels, between a matched keypoint and where the
        model puts it, for an inlier, as in :func:`count_inliers`. By default
        :data:`EPIPOLAR_THRESHOLD` for ``"fundamental"``, otherwise
        :data:`REPROJECTION_THRESHOLD`.
    min_matches : int, optional
        Fewer matches than this give no inliers without fitting; never fewer
        than the model's minimal sample (2 similarity, 3 affine, 4
        homography, 8 fundamental), the default.
    verify_keypoints : int or None, default=MAX_KEYPOINTS
        As in :func:`count_inliers` (formerly ``max_keypoints``). The rows
        returned are still rows of the keypoints given.

    Returns
    -------
    ndarray of int64 of shape (n_inliers, 2)
        ``[query_index, candidate_index]`` rows (of the keypoints given), by
        query index; none when too few matches or no model fits.

    Examples
    --------
    >>> import cv2
    >>> import vlad.images._files, vlad.images._sift
    >>> from vlad.verification._spatial import count_inliers, inlier_matches
    >>> image = vlad.images.read_image("data/chelsea.jpg")
    >>> rotated = cv2.rotate(image, cv2.ROTATE_90_CLOCKWISE)
    >>> options = vlad.images.SiftOptions(max_keypoints=300)
    >>> extract = vlad.images._sift.extract_keypoints_with_options
    >>> query, candidate = extract(image, options), extract(rotated, options)
    >>> pairs = inlier_matches(*query, *candidate)
    >>> len(pairs) == count_inliers(*query, *candidate), len(pairs) > 200
    (True, True)

    Turned a quarter clockwise, (x, y) lands on (height - 1 - y, x). Nearly
    all of the default fundamental matrix's inliers land there; it puts each
    match only on a line, though, so a wrong match lying near its line counts
    too. An affine transform puts each match at a point, and its inliers all
    follow the rotation:

    >>> import numpy as np
    >>> def error(pairs):  # pixels from where the rotation puts each match
    ...     x, y = query[0][pairs[:, 0], 0], query[0][pairs[:, 0], 1]
    ...     moved = candidate[0][pairs[:, 1], :2]
    ...     return np.hypot(moved[:, 0] - (image.shape[0] - 1 - y), moved[:, 1] - x)
    >>> bool(np.mean(error(pairs) < 8) > 0.95)
    True
    >>> affine = inlier_matches(*query, *candidate, model="affine")
    >>> bool(error(affine).max() < 8)
    True
    """
    fit = fitter(model, reprojection_threshold)
    match = matcher(matching, ratio)
    if min_matches is None:
        min_matches = MINIMAL_MATCHES[model]
    else:
        min_matches = max(
            check_positive_int(min_matches, "min_matches"), MINIMAL_MATCHES[model]
        )
    query_keypoints, query_descriptors = _check_image(
        query_keypoints, query_descriptors, "query_"
    )
    keypoints, descriptors = _check_image(keypoints, descriptors, "")
    if query_descriptors.shape[1] != descriptors.shape[1]:
        raise VladError(
            f"query_descriptors have {query_descriptors.shape[1]} features but "
            f"descriptors have {descriptors.shape[1]}; they must match"
        )
    verify_keypoints = _check_max_keypoints(verify_keypoints)
    return _inlier_matches(
        _prepared(query_keypoints, query_descriptors, verify_keypoints),
        _prepared(keypoints, descriptors, verify_keypoints),
        match=match,
        fit=fit,
        min_matches=min_matches,
    )


@renamed_keyword("max_keypoints", "verify_keypoints", since="0.5")
def spatial_rerank(
    query_keypoints: ArrayLike,
    query_descriptors: ArrayLike,
    candidates: ArrayLike,
    database: DescriptorSets,
    *,
    depth: int | None = DEPTH.default,
    matching: str = MATCHING.default,
    ratio: float = RATIO.default,
    model: str = GEOMETRY.default,
    reprojection_threshold: float | None = INLIER_THRESHOLD.default,
    min_inliers: int = spec.MIN_INLIERS.default,
    verify_keypoints: int | None = VERIFY_KEYPOINTS.default,
    n_jobs: int | None = N_JOBS.default,
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
    matching, ratio, model, reprojection_threshold
        As in :func:`count_inliers`.
    min_inliers : int, default=MIN_INLIERS
        Inliers that make a candidate verified.
    verify_keypoints : int or None, default=MAX_KEYPOINTS
        As in :func:`count_inliers` (formerly ``max_keypoints``).
    n_jobs : int or None, default=None
        Candidates verified at once on threads (each runs its matrix products
        on one core); None or -1 for every core. The result does not depend
        on it.

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
    >>> from vlad.verification import spatial_rerank
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
    fit = fitter(model, reprojection_threshold)
    match = matcher(matching, ratio)
    min_inliers = spec.MIN_INLIERS.check(min_inliers)
    verify_keypoints = _check_max_keypoints(verify_keypoints)
    depth = DEPTH.check(depth)
    if not isinstance(database, DescriptorSets):
        raise VladTypeError(
            f"database must be a DescriptorSets; got {type(database).__name__}"
        )
    if database.keypoints is None:
        raise VladError(
            "database holds no keypoint positions; extract descriptors with "
            "vlad extract (0.3 or later) or vlad.extract_images to keep them"
        )
    if query_keypoints is None:
        raise VladError(
            "query_keypoints is None: the query holds no keypoint positions; "
            "extract descriptors with vlad extract (0.3 or later) or "
            "vlad.extract_images to keep them"
        )
    query_keypoints, query_descriptors = _check_image(
        query_keypoints, query_descriptors, "query_"
    )
    if query_descriptors.shape[1] != database.n_features:
        raise VladError(
            f"query_descriptors have {query_descriptors.shape[1]} features but "
            f"the database's have {database.n_features}; they must match"
        )
    candidates = _check_candidates(candidates, len(database))
    if depth is None:
        depth = len(candidates)
    verify = functools.partial(
        _verify_candidate,
        query=_prepared(query_keypoints, query_descriptors, verify_keypoints),
        database=database,
        max_keypoints=verify_keypoints,
        match=match,
        fit=fit,
        min_matches=MINIMAL_MATCHES[model],
    )
    inliers = np.full(len(candidates), -1, dtype=np.int64)
    verified = candidates[: int(depth)].tolist()
    # Threads share out the candidates; BLAS on more threads would fight them.
    with threadpool_limits(limits=1, user_api="blas"):
        inliers[: len(verified)] = list(map_in_order(verify, verified, n_jobs))
    strong = np.flatnonzero(inliers >= min_inliers)
    strong = strong[np.argsort(-inliers[strong], kind="stable")]
    positions = np.concatenate([strong, np.flatnonzero(inliers < min_inliers)])
    return candidates[positions], inliers[positions]


def _verify_candidate(
    row: int, *, database: DescriptorSets, max_keypoints: int | None, **settings
) -> int:
    """Inliers of the query against database image ``row``."""
    candidate = _prepared(
        database.keypoints_of(row),
        database[row].astype(np.float32, copy=False),
        max_keypoints,
    )
    return len(_inlier_matches(candidate=candidate, **settings))


def _prepared(
    keypoints: np.ndarray, descriptors: np.ndarray, max_keypoints: int | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """An image's scaled positions (:func:`_positions`) and float32
    descriptors of its ``max_keypoints`` largest keypoints, and their rows
    (None when all are kept)."""
    positions = _positions(keypoints)
    if (
        max_keypoints is None
        or len(keypoints) <= max_keypoints
        or keypoints.shape[1] < 3
    ):
        return positions, descriptors, None
    # The largest first; equal sizes in keypoint order.
    rows = np.sort(np.argsort(-keypoints[:, 2], kind="stable")[:max_keypoints])
    return positions[rows], np.ascontiguousarray(descriptors[rows]), rows


def _inlier_matches(
    query: tuple[np.ndarray, np.ndarray, np.ndarray | None],
    candidate: tuple[np.ndarray, np.ndarray, np.ndarray | None],
    *,
    match: Callable[[np.ndarray, np.ndarray], np.ndarray],
    fit: Callable[[np.ndarray, np.ndarray], np.ndarray | None],
    min_matches: int,
) -> np.ndarray:
    """:func:`inlier_matches` of two images made by :func:`_prepared` from
    checked float32 input (``min_matches`` at least the model's minimal
    sample)."""
    (query_positions, query_descriptors, query_rows) = query
    (positions, descriptors, rows) = candidate
    matches = match(query_descriptors, descriptors)
    if len(matches) < min_matches:
        return np.zeros((0, 2), dtype=np.int64)
    mask = fit(query_positions[matches[:, 0]], positions[matches[:, 1]])
    if mask is None:
        return np.zeros((0, 2), dtype=np.int64)
    inliers = matches[mask.ravel().astype(bool)]
    # Back to rows of the keypoints given.
    for side, kept in enumerate((query_rows, rows)):
        if kept is not None:
            inliers[:, side] = kept[inliers[:, side]]
    return inliers


def _positions(keypoints: np.ndarray) -> np.ndarray:
    """Keypoint x and y, float32, scaled down so that they span at most
    :data:`POSITION_SIDE` pixels."""
    positions = np.array(keypoints[:, :2], dtype=np.float32)
    span = float(positions.max()) if len(positions) else 0.0
    if span > POSITION_SIDE:
        positions *= np.float32(POSITION_SIDE / span)
    return positions


def _check_max_keypoints(verify_keypoints: int | None) -> int | None:
    """``verify_keypoints`` (:data:`vlad.core._parameters.VERIFY_KEYPOINTS`)
    as None (every keypoint, also given as 0) or an int >= 8."""
    return VERIFY_KEYPOINTS.check(verify_keypoints) or None


def _check_image(
    keypoints: ArrayLike, descriptors: ArrayLike, prefix: str
) -> tuple[np.ndarray, np.ndarray]:
    """Keypoints ``(n, >= 2)`` and descriptors ``(n, F)`` of one image, both
    float32 and finite; ``prefix`` names them in errors (``"query_"``)."""
    descriptors = as_float_matrix(descriptors, f"{prefix}descriptors", dtype=np.float32)
    keypoints = as_float_matrix(keypoints, f"{prefix}keypoints", dtype=np.float32)
    if keypoints.shape[0] != descriptors.shape[0] or keypoints.shape[1] < 2:
        raise VladError(
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
        raise VladError(
            f"candidates must be a 1-D array of database rows; got shape {array.shape}"
        )
    if array.size == 0:
        return np.zeros(0, dtype=np.int64)
    if array.dtype.kind not in "iu":
        raise VladTypeError(
            f"candidates must hold integer database rows; got dtype {array.dtype}"
        )
    low, high = int(array.min()), int(array.max())
    if low < 0 or high >= n_images:
        raise VladError(
            f"candidates must be rows of the database, in [0, {n_images}); "
            f"got values from {low} to {high}"
        )
    return array.astype(np.int64)
