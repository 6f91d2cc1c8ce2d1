"""Precision-recall curves: vlad.evaluation._curves against a plain loop over
the ranking and a hand computation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from vlad.evaluation import evaluate
from vlad.evaluation._curves import (
    RECALL_LEVELS,
    interpolated_precision,
    mean_interpolated_precision,
)


def loop_interpolated_precision(relevant_flags, n_relevant, levels):
    """Walk the ranking place by place: precision and recall after each
    relevant image, then for each level the best precision at that recall or
    more (TREC's definition, written out)."""
    points = []
    found = 0
    for place, is_relevant in enumerate(relevant_flags, start=1):
        if is_relevant:
            found += 1
            points.append((found / n_relevant, found / place))
    curve = []
    for level in levels:
        reached = [precision for recall, precision in points if recall >= level - 1e-9]
        curve.append(max(reached) if reached else 0.0)
    return curve


def test_a_hand_computed_curve():
    # Relevant at places 1, 3 and 6 of 4 relevant: precisions 1, 2/3, 1/2 at
    # recalls 1/4, 1/2, 3/4; recall 1 is never reached.
    curve = interpolated_precision([0, 2, 5], 4)
    expected = [1, 1, 1, 2 / 3, 2 / 3, 2 / 3, 0.5, 0.5, 0, 0, 0]
    np.testing.assert_allclose(curve, expected)


@given(
    flags=st.lists(st.booleans(), max_size=40),
    missing=st.integers(0, 5),
    levels=st.lists(st.floats(0, 1), min_size=1, max_size=12),
)
def test_agrees_with_a_plain_loop(flags, missing, levels):
    n_relevant = sum(flags) + missing
    if n_relevant == 0:
        return
    ranks = [place for place, flag in enumerate(flags) if flag]
    np.testing.assert_allclose(
        interpolated_precision(ranks, n_relevant, levels),
        loop_interpolated_precision(flags, n_relevant, levels),
    )


def test_the_mean_is_over_the_queries_with_relevant_images():
    rankings = {"q1": ["a", "x", "b"], "q2": ["y", "c"], "q3": ["z"]}
    truth = {
        "q1": {"relevant": ["a", "b"]},
        "q2": {"relevant": ["c"], "junk": ["y"]},
        "q3": {"relevant": []},
    }
    evaluation = evaluate(rankings, truth)
    mean = mean_interpolated_precision(evaluation.queries)
    q1 = loop_interpolated_precision([True, False, True], 2, RECALL_LEVELS)
    q2 = loop_interpolated_precision([True], 1, RECALL_LEVELS)  # junk removed
    np.testing.assert_allclose(mean, (np.array(q1) + q2) / 2)
    nothing = evaluate({"q3": []}, {"q3": {"relevant": []}})
    assert all(
        math.isnan(value) for value in mean_interpolated_precision(nothing.queries)
    )


@pytest.mark.parametrize(
    ("ranks", "n_relevant", "message"),
    [
        ([0, 1], 1, "at least the 2 ranks"),
        ([2, 1], 3, "increasing"),
        ([], 0, "at least 1"),
    ],
)
def test_bad_input_is_refused(ranks, n_relevant, message):
    with pytest.raises(ValueError, match=message):
        interpolated_precision(ranks, n_relevant)
