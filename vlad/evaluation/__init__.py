"""Evaluating retrieval: mean average precision, recall@k, precision@k and
mean reciprocal rank against a ground truth.

:func:`evaluate` scores rankings (query name to database names, best first)
against a ground truth read by :func:`load_ground_truth` (vlad's JSON),
:func:`load_revisited_ground_truth` (revisited Oxford and Paris, easy, medium
or hard) or :func:`load_holidays_ground_truth` (INRIA Holidays names), and
returns an :class:`Evaluation`: each query's metrics, and their means overall
and by tag. :func:`evaluate_files` does the same from a ``vlad search``
results file. The metrics of a single ranking are plain functions:
:func:`average_precision` (revisitop's trapezoid rule), :func:`recall_at_k`,
:func:`precision_at_k`, :func:`reciprocal_rank`;
:func:`step_average_precision_of_ranks` is the non-interpolated average
precision, whose mean over queries is :attr:`Evaluation.step_map`.
"""

from typing import TYPE_CHECKING

from vlad._lazy import attach

if TYPE_CHECKING:
    from vlad.evaluation._curves import mean_interpolated_precision
    from vlad.evaluation._files import evaluate_files
    from vlad.evaluation._ground_truth import (
        QueryTruth,
        ground_truth_from_mapping,
        load_ground_truth,
    )
    from vlad.evaluation._holidays import (
        holidays_ground_truth,
        load_holidays_ground_truth,
    )
    from vlad.evaluation._metrics import (
        average_precision,
        average_precision_of_ranks,
        precision_at_k,
        recall_at_k,
        reciprocal_rank,
        relevant_ranks,
        score_ranks,
        step_average_precision_of_ranks,
    )
    from vlad.evaluation._revisited import (
        REVISITED_PROTOCOLS,
        load_revisited_ground_truth,
        revisited_ground_truth,
    )
    from vlad.evaluation._scoring import (
        DEFAULT_KS,
        Evaluation,
        QueryEvaluation,
        evaluate,
    )

__getattr__, __dir__ = attach(
    __name__,
    {
        "DEFAULT_KS": "vlad.evaluation._scoring",
        "Evaluation": "vlad.evaluation._scoring",
        "QueryEvaluation": "vlad.evaluation._scoring",
        "QueryTruth": "vlad.evaluation._ground_truth",
        "REVISITED_PROTOCOLS": "vlad.evaluation._revisited",
        "average_precision": "vlad.evaluation._metrics",
        "average_precision_of_ranks": "vlad.evaluation._metrics",
        "evaluate": "vlad.evaluation._scoring",
        "evaluate_files": "vlad.evaluation._files",
        "ground_truth_from_mapping": "vlad.evaluation._ground_truth",
        "holidays_ground_truth": "vlad.evaluation._holidays",
        "load_ground_truth": "vlad.evaluation._ground_truth",
        "load_holidays_ground_truth": "vlad.evaluation._holidays",
        "load_revisited_ground_truth": "vlad.evaluation._revisited",
        "mean_interpolated_precision": "vlad.evaluation._curves",
        "precision_at_k": "vlad.evaluation._metrics",
        "recall_at_k": "vlad.evaluation._metrics",
        "reciprocal_rank": "vlad.evaluation._metrics",
        "relevant_ranks": "vlad.evaluation._metrics",
        "revisited_ground_truth": "vlad.evaluation._revisited",
        "score_ranks": "vlad.evaluation._metrics",
        "step_average_precision_of_ranks": "vlad.evaluation._metrics",
    },
)
__all__ = [
    "DEFAULT_KS",
    "Evaluation",
    "QueryEvaluation",
    "QueryTruth",
    "REVISITED_PROTOCOLS",
    "average_precision",
    "average_precision_of_ranks",
    "evaluate",
    "evaluate_files",
    "ground_truth_from_mapping",
    "holidays_ground_truth",
    "load_ground_truth",
    "load_holidays_ground_truth",
    "load_revisited_ground_truth",
    "mean_interpolated_precision",
    "precision_at_k",
    "recall_at_k",
    "reciprocal_rank",
    "relevant_ranks",
    "revisited_ground_truth",
    "score_ranks",
    "step_average_precision_of_ranks",
]
