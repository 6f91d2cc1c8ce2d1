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

from vlad._lazy import attach_declared

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

__getattr__, __dir__, __all__ = attach_declared(__name__, __file__)
