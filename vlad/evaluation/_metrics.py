"""Retrieval metrics of one query's ranking: average precision, recall@k,
precision@k and reciprocal rank.

Every metric reads the same thing: the places, counted from 0, of the
relevant images in the ranking once junk images and repeated names are taken
out of it (:func:`relevant_ranks`). Removing junk means an image that is
neither right nor wrong (the query itself, a view too ambiguous to label)
neither helps nor costs: the images after it move up one place. A name that
appears again further down counts at its first place only; its later places
are removed as junk places are. A relevant image absent from the ranking (a
ranking truncated to its best ``k``, say) counts as never retrieved. Ties are
the ranking's order: the metrics see names, not scores.

Average precision is revisitop's ``compute_ap`` (Radenović et al., CVPR 2018;
the same as the Oxford Buildings ``compute_ap.cpp`` and the INRIA Holidays
``holidays_map.py``): the area under the precision-recall curve by the
trapezoid rule. Relevant image ``j`` (from 0) found at place ``r`` adds
``(p0 + p1) / 2 / n_relevant`` with ``p0 = j / r`` (1 when ``r`` is 0) and
``p1 = (j + 1) / (r + 1)``.

References
----------
Radenović, Iscen, Tolias, Avrithis, Chum. Revisiting Oxford and Paris:
Large-Scale Image Retrieval Benchmarking. CVPR 2018.
Philbin, Chum, Isard, Sivic, Zisserman. Object retrieval with large
vocabularies and fast spatial matching. CVPR 2007.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable, Sequence

from vlad.core._parameters import K
from vlad.errors import VladError, VladTypeError

__all__ = [
    "average_precision",
    "average_precision_of_ranks",
    "precision_at_k",
    "recall_at_k",
    "reciprocal_rank",
    "relevant_ranks",
    "score_ranks",
    "step_average_precision_of_ranks",
]


def relevant_ranks(
    ranking: Sequence[str], relevant: Iterable[str], junk: Iterable[str] = ()
) -> list[int]:
    """Places of the relevant images in ``ranking``, counted from 0 once junk
    images and repeated names are removed.

    Parameters
    ----------
    ranking : sequence of str
        Database image names, best first.
    relevant : iterable of str
        The query's relevant images.
    junk : iterable of str, default=()
        Images that neither count nor cost: removed from the ranking.

    Returns
    -------
    list of int
        Ascending places, one per relevant image found (at most
        ``len(set(relevant))``).

    Raises
    ------
    TypeError
        ``ranking``, ``relevant`` or ``junk`` is a string, or holds a name
        that is not one.
    ValueError
        An image is both relevant and junk.

    Examples
    --------
    >>> relevant_ranks(["a", "x", "b", "a", "c"], relevant={"b", "c"}, junk={"x"})
    [1, 2]
    """
    relevant_set = _name_set(relevant, "relevant")
    junk_set = _name_set(junk, "junk")
    _check_ranking(ranking)
    _check_disjoint(relevant_set, junk_set)
    # First places of distinct names (dict.fromkeys keeps the first of each),
    # then each relevant place moves up by the junk places before it: whole
    # rankings of a large database stay in C loops.
    distinct = dict.fromkeys(ranking)
    places = dict(zip(distinct, range(len(distinct)), strict=True))
    junk_places = sorted(places[name] for name in junk_set if name in places)
    relevant_places = sorted(places[name] for name in relevant_set if name in places)
    return [place - bisect.bisect_left(junk_places, place) for place in relevant_places]


def average_precision_of_ranks(ranks: Sequence[int], n_relevant: int) -> float:
    """Average precision from the places of the relevant images found
    (revisitop's ``compute_ap``).

    Parameters
    ----------
    ranks : sequence of int
        Ascending places counted from 0, junk removed, as
        :func:`relevant_ranks` gives them.
    n_relevant : int
        Relevant images of the query, found or not.

    Returns
    -------
    float
        In [0, 1]; NaN when ``n_relevant`` is 0 (nothing to find).

    Raises
    ------
    ValueError
        ``n_relevant`` is negative or smaller than ``len(ranks)``, or ``ranks``
        is not strictly ascending from 0 or more.

    Examples
    --------
    >>> average_precision_of_ranks([0, 1], 2)
    1.0
    >>> average_precision_of_ranks([1], 1)
    0.25
    """
    _check_ranks(ranks, n_relevant)
    return _average_precision(ranks, n_relevant)


def step_average_precision_of_ranks(ranks: Sequence[int], n_relevant: int) -> float:
    """Non-interpolated average precision from the places of the relevant
    images found: the mean, over the relevant images, of the precision at
    each one's place (0 for those not found).

    It is the area under the precision-recall curve as a step function (the
    TREC and Pascal VOC convention before interpolation), where
    :func:`average_precision_of_ranks` takes the trapezoid between two
    relevant images (revisitop's): relevant image ``j`` (from 0) found at
    place ``r`` adds ``(j + 1) / (r + 1) / n_relevant``, never less than the
    trapezoid's share.

    Parameters
    ----------
    ranks, n_relevant
        As in :func:`average_precision_of_ranks`, as are the value's range
        (NaN when ``n_relevant`` is 0) and the errors.

    Returns
    -------
    float

    See Also
    --------
    average_precision_of_ranks : the trapezoid rule (revisitop's mAP).
    vlad.evaluation.Evaluation.step_map : its mean over queries.

    Examples
    --------
    >>> step_average_precision_of_ranks([0, 2], 2)  # (1/1 + 2/3) / 2
    0.8333333333333333
    >>> average_precision_of_ranks([0, 2], 2)  # (1 + (1/2 + 2/3) / 2) / 2
    0.7916666666666666
    """
    _check_ranks(ranks, n_relevant)
    if n_relevant == 0:
        return math.nan
    return (
        math.fsum((found + 1) / (rank + 1) for found, rank in enumerate(ranks))
        / n_relevant
    )


def score_ranks(
    ranks: Sequence[int], n_relevant: int, ks: Sequence[int] = ()
) -> dict[str, float]:
    """Every metric of one query from the places of its relevant images.

    Parameters
    ----------
    ranks : sequence of int
        Ascending places counted from 0, as :func:`relevant_ranks` gives them.
    n_relevant : int
        Relevant images of the query, found or not.
    ks : sequence of int, default=()
        Cut-offs of recall@k and precision@k.

    Returns
    -------
    dict
        ``"AP"``, ``"RR"``, then ``"recall@k"`` and ``"precision@k"`` for each
        ``k``; all NaN when ``n_relevant`` is 0.

    Examples
    --------
    >>> score_ranks([1, 3], 2, ks=[1, 2])
    {'AP': 0.3333333333333333, 'RR': 0.5, 'recall@1': 0.0, 'precision@1': 0.0, \
'recall@2': 1.0, 'precision@2': 0.5}
    """
    _check_ranks(ranks, n_relevant)
    scores = {
        "AP": _average_precision(ranks, n_relevant),
        "RR": _reciprocal(ranks, n_relevant),
    }
    for k in ks:
        k = _check_k(k)
        scores[f"recall@{k}"] = _hit(ranks, n_relevant, k)
        scores[f"precision@{k}"] = _precision(ranks, n_relevant, k)
    return scores


def _average_precision(ranks: Sequence[int], n_relevant: int) -> float:
    if n_relevant == 0:
        return math.nan
    area = 0.0
    for found, rank in enumerate(ranks):
        before = 1.0 if rank == 0 else found / rank
        after = (found + 1) / (rank + 1)
        area += (before + after) / 2.0
    return area / n_relevant


def average_precision(
    ranking: Sequence[str], relevant: Iterable[str], junk: Iterable[str] = ()
) -> float:
    """Average precision of one ranking, by the trapezoid rule (revisitop).

    Parameters
    ----------
    ranking : sequence of str
        Database image names, best first; it may be truncated.
    relevant : iterable of str
        The query's relevant images; those absent from ``ranking`` count as
        never retrieved.
    junk : iterable of str, default=()
        Removed from the ranking before places are counted.

    Returns
    -------
    float
        In [0, 1]; NaN when ``relevant`` is empty.

    Examples
    --------
    The only relevant image in second place: precision rises from 0 to 1/2
    over the whole recall step, so the trapezoid's area is 1/4 (a step-wise
    average precision, scikit-learn's, would say 1/2).

    >>> average_precision(["x", "a"], relevant=["a"])
    0.25
    >>> average_precision(["j", "a"], relevant=["a"], junk=["j"])
    1.0
    >>> average_precision(["a", "x", "b"], relevant=["a", "b", "c"])
    0.5277777777777778
    """
    relevant_set = _name_set(relevant, "relevant")
    ranks = relevant_ranks(ranking, relevant_set, junk)
    return _average_precision(ranks, len(relevant_set))


def recall_at_k(
    ranking: Sequence[str], relevant: Iterable[str], k: int, junk: Iterable[str] = ()
) -> float:
    """1.0 when a relevant image is among the first ``k`` (junk removed), else 0.0.

    This is the recall of place recognition and copy detection (did the
    search find the scene in its top ``k``?), not the fraction of the
    relevant images found.

    Parameters
    ----------
    ranking : sequence of str
        Database image names, best first.
    relevant : iterable of str
        The query's relevant images.
    k : int
        How many places of the ranking count.
    junk : iterable of str, default=()
        Images that neither count nor cost: removed from the ranking.

    Returns
    -------
    float
        0.0 or 1.0; NaN when ``relevant`` is empty.

    Examples
    --------
    >>> recall_at_k(["x", "y", "a"], ["a", "b"], 2)
    0.0
    >>> recall_at_k(["x", "y", "a"], ["a", "b"], 3)
    1.0
    """
    k = _check_k(k)
    relevant_set = _name_set(relevant, "relevant")
    ranks = relevant_ranks(ranking, relevant_set, junk)
    return _hit(ranks, len(relevant_set), k)


def _hit(ranks: Sequence[int], n_relevant: int, k: int) -> float:
    if n_relevant == 0:
        return math.nan
    return 1.0 if ranks and ranks[0] < k else 0.0


def precision_at_k(
    ranking: Sequence[str], relevant: Iterable[str], k: int, junk: Iterable[str] = ()
) -> float:
    """The fraction of the first ``k`` places (junk removed) holding a relevant image.

    A ranking shorter than ``k`` is not padded out: its missing places count
    as wrong, so the value is over ``k`` always. (revisitop's ``mP@k`` divides
    by the place of the last relevant image instead where that is smaller
    than ``k``.)

    Parameters
    ----------
    ranking : sequence of str
        Database image names, best first.
    relevant : iterable of str
        The query's relevant images.
    k : int
        How many places of the ranking count.
    junk : iterable of str, default=()
        Images that neither count nor cost: removed from the ranking.

    Returns
    -------
    float
        In [0, 1]; NaN when ``relevant`` is empty.

    Examples
    --------
    >>> precision_at_k(["a", "x", "b", "y"], ["a", "b"], 4)
    0.5
    """
    k = _check_k(k)
    relevant_set = _name_set(relevant, "relevant")
    ranks = relevant_ranks(ranking, relevant_set, junk)
    return _precision(ranks, len(relevant_set), k)


def _precision(ranks: Sequence[int], n_relevant: int, k: int) -> float:
    if n_relevant == 0:
        return math.nan
    return sum(1 for rank in ranks if rank < k) / k


def reciprocal_rank(
    ranking: Sequence[str], relevant: Iterable[str], junk: Iterable[str] = ()
) -> float:
    """1 / the place (from 1) of the first relevant image; 0.0 when none is found.

    Parameters
    ----------
    ranking : sequence of str
        Database image names, best first.
    relevant : iterable of str
        The query's relevant images.
    junk : iterable of str, default=()
        Images that neither count nor cost: removed from the ranking.

    Returns
    -------
    float
        In [0, 1]; NaN when ``relevant`` is empty.

    Examples
    --------
    >>> reciprocal_rank(["x", "y", "a"], ["a"]), reciprocal_rank(["x"], ["a"])
    (0.3333333333333333, 0.0)
    """
    relevant_set = _name_set(relevant, "relevant")
    ranks = relevant_ranks(ranking, relevant_set, junk)
    return _reciprocal(ranks, len(relevant_set))


def _reciprocal(ranks: Sequence[int], n_relevant: int) -> float:
    if n_relevant == 0:
        return math.nan
    return 1.0 / (ranks[0] + 1) if ranks else 0.0


def _check_ranks(ranks: Sequence[int], n_relevant: int) -> None:
    if isinstance(n_relevant, bool) or not isinstance(n_relevant, int):
        raise VladTypeError(f"n_relevant must be an int; got {n_relevant!r}")
    if n_relevant < len(ranks):
        raise VladError(
            f"n_relevant must be at least len(ranks) = {len(ranks)}; got {n_relevant}"
        )
    previous = -1
    for rank in ranks:
        if isinstance(rank, bool) or not isinstance(rank, int) or rank <= previous:
            raise VladError(
                f"ranks must be strictly ascending ints from 0; got {list(ranks)!r}"
            )
        previous = rank


def _check_k(k: int) -> int:
    """``k`` as :data:`vlad.core._parameters.K` takes it: an integer >= 1."""
    return K.check(k)


def _name_set(names: Iterable[str], parameter: str) -> frozenset[str]:
    if isinstance(names, (str, bytes)):
        raise VladTypeError(
            f"{parameter} must be a collection of image names, not a single "
            f"{type(names).__name__}: {names!r}"
        )
    found = frozenset(names)
    for name in found:
        if not isinstance(name, str):
            raise VladTypeError(
                f"{parameter} must hold image names (str); got {type(name).__name__} "
                f"{name!r}"
            )
    return found


def _check_ranking(ranking: Sequence[str]) -> None:
    if isinstance(ranking, (str, bytes)) or not isinstance(ranking, Sequence):
        raise VladTypeError(
            "ranking must be a sequence of image names, best first; got "
            f"{type(ranking).__name__}"
        )
    # One pass in C over the types, then a look for the culprit if needed.
    if not all(issubclass(kind, str) for kind in set(map(type, ranking))):
        name = next(name for name in ranking if not isinstance(name, str))
        raise VladTypeError(
            f"ranking must hold image names (str); got {type(name).__name__} {name!r}"
        )


def _check_disjoint(relevant: frozenset[str], junk: frozenset[str]) -> None:
    both = relevant & junk
    if both:
        raise VladError(
            "an image cannot be both relevant and junk; got "
            f"{sorted(both)[0]!r} in both"
        )
