"""Precision-recall curves: the interpolated precision of a ranking at fixed
recall levels, and its mean over queries (the "11-point" curve of TREC and
PASCAL VOC).

At recall level ``r``, the interpolated precision is the best precision the
ranking reaches at a recall of ``r`` or more, and 0 when it never reaches
``r``. Places are those of :func:`vlad.evaluation.relevant_ranks`: from 0,
junk images and repeats removed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from vlad.errors import VladError, VladTypeError
from vlad.evaluation._scoring import QueryEvaluation

__all__ = ["RECALL_LEVELS", "interpolated_precision", "mean_interpolated_precision"]

#: Recall levels of the curve: 0, 0.1, ..., 1.
RECALL_LEVELS = tuple(level / 10 for level in range(11))
#: Recalls within this of a level count as reaching it (floating-point slack).
_TOLERANCE = 1e-9


def interpolated_precision(
    ranks: Sequence[int],
    n_relevant: int,
    recall_levels: Sequence[float] = RECALL_LEVELS,
) -> np.ndarray:
    """Interpolated precision of one ranking at each recall level.

    Parameters
    ----------
    ranks : sequence of int
        Places (from 0, increasing) of the relevant images the ranking holds.
    n_relevant : int
        The query's relevant images (at least ``len(ranks)``, at least 1).
    recall_levels : sequence of float, default=RECALL_LEVELS
        In [0, 1].

    Returns
    -------
    ndarray of float64 of shape (len(recall_levels),)

    Raises
    ------
    ValueError
        ``n_relevant`` below 1 or below ``len(ranks)``, or ranks that do not
        increase from 0 or more.

    Examples
    --------
    >>> from vlad.evaluation._curves import interpolated_precision
    >>> interpolated_precision([0, 2], 4, [0.0, 0.25, 0.5, 0.75]).tolist()
    [1.0, 1.0, 0.6666666666666666, 0.0]
    """
    ranks = np.asarray(ranks, dtype=np.int64).reshape(-1)
    if isinstance(n_relevant, bool) or not isinstance(n_relevant, (int, np.integer)):
        raise VladTypeError(f"n_relevant must be an int; got {n_relevant!r}")
    if n_relevant < max(1, len(ranks)):
        raise VladError(
            f"n_relevant must be at least 1 and at least the {len(ranks)} ranks "
            f"given; got {n_relevant}"
        )
    if len(ranks) and (ranks[0] < 0 or np.any(np.diff(ranks) <= 0)):
        raise VladError(
            f"ranks must be increasing places from 0; got {ranks.tolist()!r}"
        )
    levels = np.asarray(recall_levels, dtype=np.float64)
    found = np.arange(1, len(ranks) + 1)
    precision = found / (ranks + 1)
    recall = found / n_relevant
    # Best precision from each place on: interpolation looks rightwards.
    best_from = np.maximum.accumulate(precision[::-1])[::-1]
    first = np.searchsorted(recall, levels - _TOLERANCE, side="left")
    curve = np.zeros(len(levels))
    reached = first < len(ranks)
    curve[reached] = best_from[first[reached]]
    return curve


def mean_interpolated_precision(
    queries: Iterable[QueryEvaluation],
    recall_levels: Sequence[float] = RECALL_LEVELS,
) -> np.ndarray:
    """:func:`interpolated_precision` averaged over the queries with relevant
    images (those in the means of an :class:`~vlad.evaluation.Evaluation`).

    Parameters
    ----------
    queries : iterable of QueryEvaluation
        The queries scored, such as :attr:`vlad.evaluation.Evaluation.queries`;
        those with no relevant image (``n_relevant`` 0) are left out.
    recall_levels : sequence of float, default=RECALL_LEVELS
        Recall levels of the curve, in [0, 1]; by default 0, 0.1, ..., 1.

    Returns
    -------
    ndarray of float64 of shape (len(recall_levels),)
        NaN everywhere when no query has relevant images.
    """
    curves = [
        interpolated_precision(query.ranks, query.n_relevant, recall_levels)
        for query in queries
        if query.counted
    ]
    if not curves:
        return np.full(len(recall_levels), np.nan)
    return np.mean(curves, axis=0)
