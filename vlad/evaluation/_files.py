"""Evaluating a results file against a ground-truth file, of one of three kinds.

The ground truth is vlad's JSON (:func:`~vlad.evaluation.load_ground_truth`),
a revisited Oxford/Paris JSON with a protocol
(:func:`~vlad.evaluation.load_revisited_ground_truth`), or a list of INRIA
Holidays image names (:func:`~vlad.evaluation.load_holidays_ground_truth`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from vlad.errors import VladError
from vlad.evaluation._ground_truth import QueryTruth, load_ground_truth
from vlad.evaluation._holidays import load_holidays_ground_truth
from vlad.evaluation._revisited import load_revisited_ground_truth
from vlad.evaluation._scoring import DEFAULT_KS, Evaluation, evaluate
from vlad.search._results import read_rankings

__all__ = ["evaluate_files", "read_any_ground_truth"]


def read_any_ground_truth(
    path: str | os.PathLike, *, protocol: str | None = None, holidays: bool = False
) -> dict[str, QueryTruth]:
    """A ground-truth file of vlad's JSON, or revisited (with ``protocol``), or
    Holidays names (with ``holidays``).

    Raises
    ------
    ValueError
        Both ``protocol`` and ``holidays``, or a file that is not of its kind.
    """
    if protocol is not None and holidays:
        raise VladError(
            "a ground truth is either revisited Oxford/Paris (with a protocol) or "
            f"INRIA Holidays names, not both; got protocol={protocol!r} and holidays"
        )
    if holidays:
        return load_holidays_ground_truth(path)
    if protocol is not None:
        return load_revisited_ground_truth(path, protocol)
    return load_ground_truth(path)


def evaluate_files(
    results: str | os.PathLike,
    ground_truth: str | os.PathLike,
    *,
    protocol: str | None = None,
    holidays: bool = False,
    ks: Iterable[int] = DEFAULT_KS,
) -> Evaluation:
    """:func:`~vlad.evaluation.evaluate` of a results file of ``vlad search``.

    Parameters
    ----------
    results : path-like
        ``.json``, ``.csv`` or pairs ``.txt`` (see
        :func:`vlad.search.read_rankings`).
    ground_truth : path-like
        vlad's ground-truth JSON; with ``protocol``, a revisited Oxford/Paris
        JSON; with ``holidays``, a text file of every image's name.
    protocol : {"easy", "medium", "hard"}, optional
    holidays : bool, default=False
    ks : iterable of int, default=(1, 5, 10)

    Returns
    -------
    Evaluation
        Its ``record`` names both files and the kind of ground truth.

    Raises
    ------
    FileNotFoundError
        A file does not exist.
    ValueError
        A file that is not of its kind, or rankings that name none of the
        ground truth's queries.
    """
    truth = read_any_ground_truth(ground_truth, protocol=protocol, holidays=holidays)
    rankings = read_rankings(results)
    evaluation = evaluate(rankings, truth, ks)
    if holidays:
        kind = "holidays"
    elif protocol is not None:
        kind = f"revisited {protocol}"
    else:
        kind = "vlad"
    evaluation.record = {
        "results": str(results),
        "ground_truth": str(ground_truth),
        "ground_truth_kind": kind,
    }
    return evaluation
