"""Tentative matches between two images' descriptors, before any geometry.

Each of a query's descriptors is paired with at most one of a candidate's:
mutual nearest neighbours from one matrix product (optionally with Lowe's
ratio test on top), or Lowe's ratio test alone by OpenCV's brute-force
matcher, as vlad 0.4 did. :mod:`vlad.verification._spatial` fits a geometric model to
these matches.

References
----------
.. [1] D. G. Lowe. "Distinctive image features from scale-invariant
   keypoints". IJCV 2004.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike

from vlad.core._parameters import MATCHING, RATIO
from vlad.core._validation import as_float_matrix, check_finite
from vlad.errors import VladError

__all__ = ["LOWE_RATIO", "MATCHINGS", "match_descriptors", "matcher"]

#: Lowe's ratio: a match is kept when its distance is below this fraction of
#: the second-nearest neighbour's.
LOWE_RATIO = RATIO.default
#: Entries of the largest block of descriptor products held at once (64 MiB of
#: float32): a query's descriptors meet a candidate's a block of rows at a time.
_PRODUCT_BLOCK = 1 << 24


def match_descriptors(
    query_descriptors: ArrayLike,
    descriptors: ArrayLike,
    *,
    matching: str = MATCHING.default,
    ratio: float = RATIO.default,
) -> np.ndarray:
    """Pairs of matching descriptors of two images, at most one per descriptor
    of either.

    Parameters
    ----------
    query_descriptors : array-like of shape (n_query, n_features)
    descriptors : array-like of shape (n_candidate, n_features)
    matching : {"mutual+ratio", "mutual", "ratio"}, default="mutual+ratio"
        How descriptors are paired (Euclidean distances; ties go to the lowest
        index):

        - ``"mutual"``: each query descriptor and its nearest candidate
          descriptor, where the query descriptor is also the nearest of it.
          Distances come from one matrix product, in float32.
        - ``"mutual+ratio"``: those mutual pairs that also pass Lowe's ratio
          test.
        - ``"ratio"``: vlad 0.4's matching. Each query descriptor's two
          nearest candidate descriptors are found (``cv2.BFMatcher``); it
          matches the nearest when that is closer than ``ratio`` times the
          second. A candidate descriptor matched by several query descriptors
          keeps only the closest (ties: the lowest query index).

        Both ratio tests need a second neighbour: a candidate with fewer than
        2 descriptors has no matches.
    ratio : float, default=LOWE_RATIO
        In (0, 1]; lower keeps fewer, more distinctive matches. Unused by
        ``"mutual"``.

    Returns
    -------
    ndarray of int64 of shape (n_matches, 2)
        ``[query_index, candidate_index]`` rows, by query index.

    Examples
    --------
    >>> import numpy as np
    >>> from vlad.verification._matching import match_descriptors
    >>> candidate = np.array([[0.0, 0.0], [10.0, 0.0], [0.0, 10.0]])
    >>> query = np.array([[9.0, 0.0], [5.0, 5.0], [0.0, 9.5], [0.5, 9.0]])
    >>> match_descriptors(query, candidate).tolist()
    [[0, 1], [2, 2]]

    Query descriptor 3 is nearest to candidate 2, but candidate 2 is nearer
    to query 2: not mutual. Query 1 lies as far from every candidate
    descriptor; it is the nearest of candidate 0, so the two are mutual, but
    they fail the ratio test:

    >>> match_descriptors(query, candidate, matching="mutual").tolist()
    [[0, 1], [1, 0], [2, 2]]

    The ratio test alone matches query 3 to candidate 2 too, which keeps only
    its closest, query 2:

    >>> match_descriptors(query, candidate, matching="ratio").tolist()
    [[0, 1], [2, 2]]
    """
    match = _resolve_matching(matching)
    ratio = _check_ratio(ratio)
    query_descriptors = as_float_matrix(
        query_descriptors, "query_descriptors", dtype=np.float32
    )
    descriptors = as_float_matrix(descriptors, "descriptors", dtype=np.float32)
    if query_descriptors.shape[1] != descriptors.shape[1]:
        raise VladError(
            f"query_descriptors have {query_descriptors.shape[1]} features but "
            f"descriptors have {descriptors.shape[1]}; they must match"
        )
    check_finite(query_descriptors, "query_descriptors")
    check_finite(descriptors, "descriptors")
    return match(query_descriptors, descriptors, ratio)


def matcher(
    matching: str = MATCHING.default, ratio: float = RATIO.default
) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """The matching of :func:`match_descriptors`, checked once, for many pairs
    of images.

    Parameters
    ----------
    matching : {"mutual+ratio", "mutual", "ratio"}, default="mutual+ratio"
    ratio : float, default=LOWE_RATIO
        As in :func:`match_descriptors`.

    Returns
    -------
    callable
        ``match(query_descriptors, descriptors)`` of float32, C-contiguous,
        finite matrices with as many columns, unchecked; it returns
        :func:`match_descriptors`'s ``[query_index, candidate_index]`` rows.
    """
    match = _resolve_matching(matching)
    return functools.partial(match, ratio=_check_ratio(ratio))


def _match_ratio(
    query_descriptors: np.ndarray, descriptors: np.ndarray, ratio: float
) -> np.ndarray:
    """Lowe's ratio test by ``cv2.BFMatcher``, one match per candidate
    descriptor (vlad 0.4's matching)."""
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


def _match_mutual(
    query_descriptors: np.ndarray, descriptors: np.ndarray, ratio: float
) -> np.ndarray:
    """Mutual nearest neighbours (``ratio`` unused)."""
    return _mutual_nearest(query_descriptors, descriptors, None)


def _match_mutual_ratio(
    query_descriptors: np.ndarray, descriptors: np.ndarray, ratio: float
) -> np.ndarray:
    """Mutual nearest neighbours that pass Lowe's ratio test."""
    return _mutual_nearest(query_descriptors, descriptors, ratio)


#: Descriptor matchings by name: each pairs checked float32 query and candidate
#: descriptors given Lowe's ratio, as :func:`match_descriptors`.
MATCHINGS = {
    "mutual": _match_mutual,
    "mutual+ratio": _match_mutual_ratio,
    "ratio": _match_ratio,
}


def _mutual_nearest(
    query_descriptors: np.ndarray, descriptors: np.ndarray, ratio: float | None
) -> np.ndarray:
    """``[i, j]`` where candidate row ``j`` is the nearest to query row ``i``
    and ``i`` the nearest to ``j``; with ``ratio``, only where ``j`` is also
    closer to ``i`` than ``ratio`` times the second-nearest candidate row.

    Squared distances come from dot products, ``|q|^2 + |d|^2 - 2 q.d``,
    a block of query rows at a time; where every row of a side has the same
    norm (RootSIFT, unit SIFT) that side's norm drops out of the argmax. A
    column's best score comes from a maximum down the block, which NumPy
    takes a row at a time (an argmax down a column is many times slower);
    the row holding it is looked for only where that row could be mutual.
    """
    n_query, n_candidate = len(query_descriptors), len(descriptors)
    if n_query == 0 or n_candidate < (1 if ratio is None else 2):
        return np.zeros((0, 2), dtype=np.int64)
    query_norms = np.einsum("ij,ij->i", query_descriptors, query_descriptors)
    norms = np.einsum("ij,ij->i", descriptors, descriptors)
    # Half norms that change an argmax: None where all are equal.
    half_norms = None if _same_norms(norms) else norms / 2
    half_query_norms = None if _same_norms(query_norms) else query_norms / 2
    nearest = np.empty(n_query, dtype=np.int64)
    distances = np.empty((n_query, 2), dtype=np.float64)
    column_best = np.full(n_candidate, -np.inf, dtype=np.float32)
    # Each candidate's nearest query row; -1 where no row can be mutual.
    column_nearest = np.full(n_candidate, -1, dtype=np.int64)
    rows = max(1, _PRODUCT_BLOCK // n_candidate)
    transposed = descriptors.T
    for start in range(0, n_query, rows):
        stop = min(start + rows, n_query)
        products = query_descriptors[start:stop] @ transposed
        # Column scores: the largest q.d - |q|^2 / 2 is each candidate's nearest.
        if half_query_norms is not None:
            scores = products - half_query_norms[start:stop, None]
        elif half_norms is not None:
            scores = products.copy()
        else:
            scores = products
        best = scores.max(axis=0)
        # Each query row's nearest: the largest q.d - |d|^2 / 2.
        if half_norms is not None:
            products -= half_norms
        block = np.arange(stop - start)
        block_nearest = products.argmax(axis=1)
        nearest[start:stop] = block_nearest
        distances[start:stop, 0] = products[block, block_nearest]
        # Rows whose nearest candidate they are nearest to in this block, and
        # the first row of the block that holds each such candidate's best.
        rows_found = np.flatnonzero(scores[block, block_nearest] == best[block_nearest])
        columns, first = np.unique(block_nearest[rows_found], return_index=True)
        holders = rows_found[first]
        # Another row ties with a found one where the column's best remains
        # once the found rows' scores are gone; the first row holding it wins.
        scores[rows_found, block_nearest[rows_found]] = -np.inf
        remaining = scores.max(axis=0)[columns]
        for position in np.flatnonzero(remaining == best[columns]):
            column = columns[position]
            tied = int(np.argmax(scores[:, column] == best[column]))
            holders[position] = min(holders[position], tied)
        # Earlier blocks win ties.
        better = best > column_best
        column_best[better] = best[better]
        column_nearest[better] = -1
        kept = better[columns]
        column_nearest[columns[kept]] = holders[kept] + start
        if ratio is not None:
            # The second nearest: the largest once the nearest is set aside.
            products[block, block_nearest] = -np.inf
            distances[start:stop, 1] = products.max(axis=1)
    query_rows = np.flatnonzero(column_nearest[nearest] == np.arange(n_query))
    if ratio is not None:
        # Back from scores to squared distances: |q|^2 (+ |d|^2) - 2 score.
        offset = query_norms[query_rows, None] + (
            0.0 if half_norms is not None else norms[0]
        )
        squared = np.maximum(offset - 2.0 * distances[query_rows], 0.0)
        first, second = np.sqrt(squared).T
        query_rows = query_rows[first < ratio * second]
    return np.stack([query_rows, nearest[query_rows]], axis=1)


def _same_norms(norms: np.ndarray) -> bool:
    """Whether squared norms are all equal to float32 precision."""
    return bool(np.ptp(norms) <= 1e-6 * max(float(norms.max()), 1e-30))


def _resolve_matching(matching: str):
    """The matching function of a matching name."""
    return MATCHINGS[MATCHING.check(matching)]


def _check_ratio(ratio: float) -> float:
    """``ratio`` as a float in (0, 1] (:data:`vlad.core._parameters.RATIO`)."""
    return RATIO.check(ratio)
