"""vlad.evaluation._metrics: average precision as revisitop computes it, recall@k,
precision@k and reciprocal rank, against hand computations, plain
reimplementations of revisitop's and the Oxford Buildings' code, and brute
force."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from vlad.evaluation import (
    average_precision,
    average_precision_of_ranks,
    precision_at_k,
    recall_at_k,
    reciprocal_rank,
    relevant_ranks,
    score_ranks,
    step_average_precision_of_ranks,
)

# --- independent references ------------------------------------------------


def revisitop_ap(ranks: np.ndarray, ok: np.ndarray, junk: np.ndarray) -> float:
    """revisitop's compute_map for one query, rewritten from its description:
    ``ranks`` are database indices best first, ``ok`` and ``junk`` indices.

    Positions of the positives and of the junk in the ranking; each positive
    moves up by the junk before it; then the trapezoids of compute_ap with a
    recall step of 1 / len(ok).
    """
    pos = np.arange(len(ranks))[np.isin(ranks, ok)]
    junk_positions = np.arange(len(ranks))[np.isin(ranks, junk)]
    shifted = [p - int(np.sum(junk_positions < p)) for p in pos]
    ap = 0.0
    recall_step = 1.0 / len(ok)
    for j, rank in enumerate(shifted):
        precision_0 = 1.0 if rank == 0 else j / rank
        precision_1 = (j + 1) / (rank + 1)
        ap += (precision_0 + precision_1) * recall_step / 2.0
    return ap


def oxford_ap(positives: set, ambiguous: set, ranked: list) -> float:
    """The Oxford Buildings compute_ap.cpp loop, in float64: walk the ranking,
    skip ambiguous images, add the trapezoid between consecutive
    (recall, precision) points."""
    old_recall, old_precision, ap = 0.0, 1.0, 0.0
    intersect, j = 0, 0
    for name in ranked:
        if name in ambiguous:
            continue
        if name in positives:
            intersect += 1
        recall = intersect / len(positives)
        precision = intersect / (j + 1.0)
        ap += (recall - old_recall) * (old_precision + precision) / 2.0
        old_recall, old_precision = recall, precision
        j += 1
    return ap


def cleaned(ranking, junk):
    """The ranking without junk and without repeats, by brute force."""
    kept = []
    for name in ranking:
        if name not in junk and name not in kept:
            kept.append(name)
    return kept


# --- hand computations -------------------------------------------------------


@pytest.mark.parametrize(
    "ranking, relevant, junk, expected",
    [
        # Perfect rankings.
        (["a"], ["a"], [], 1.0),
        (["a", "b", "x"], ["a", "b"], [], 1.0),
        # The only relevant image second: the trapezoid from precision 0 to
        # 1/2 over the whole recall step.
        (["x", "a"], ["a"], [], 0.25),
        # Third: from 0 to 1/3.
        (["x", "y", "a"], ["a"], [], 1 / 6),
        # Relevant at places 0 and 2: 1/2 * (1 + (1/2 + 2/3) / 2).
        (["a", "x", "b"], ["a", "b"], [], (1 + 7 / 12) / 2),
        # Junk before a relevant image is removed: "a" is first.
        (["j", "a"], ["a"], ["j"], 1.0),
        (["j", "x", "a"], ["a"], ["j"], 0.25),
        # Junk after the relevant images changes nothing.
        (["a", "x", "b", "j"], ["a", "b"], ["j"], (1 + 7 / 12) / 2),
        # Nothing relevant found.
        (["x", "y"], ["a"], [], 0.0),
        ([], ["a"], [], 0.0),
        # Truncated: "c" never retrieved, recall stops at 2/3.
        (["a", "b"], ["a", "b", "c"], [], 2 / 3),
        (["a", "x", "b"], ["a", "b", "c"], [], (1 + 7 / 12) / 3),
        # A repeated name counts at its first place only; later places are
        # removed as junk places are.
        (["a", "a", "b"], ["a", "b"], [], 1.0),
        (["x", "x", "a"], ["a"], [], 0.25),
        (["a", "x", "a", "b"], ["a", "b"], [], (1 + 7 / 12) / 2),
    ],
)
def test_average_precision_by_hand(ranking, relevant, junk, expected):
    assert average_precision(ranking, relevant, junk) == pytest.approx(expected)
    ranks = relevant_ranks(ranking, relevant, junk)
    assert average_precision_of_ranks(ranks, len(relevant)) == pytest.approx(expected)


def test_the_trapezoid_differs_from_step_wise_average_precision():
    """scikit-learn's average precision is the mean of the precision at each
    relevant image: 1/2 for one relevant image second; revisitop's is 1/4."""
    sklearn_metrics = pytest.importorskip("sklearn.metrics")
    step_wise = sklearn_metrics.average_precision_score([0, 1], [2.0, 1.0])
    assert step_wise == pytest.approx(0.5)
    assert average_precision(["x", "a"], ["a"]) == pytest.approx(0.25)


def step_ap_by_loop(ranking: list, relevant: set, junk: set) -> float:
    """Non-interpolated average precision by a plain walk down the ranking:
    junk and repeated names skipped, the precision summed at each relevant
    image, divided by all the relevant images."""
    seen, place, found, total = set(), 0, 0, 0.0
    for name in ranking:
        if name in junk or name in seen:
            continue
        seen.add(name)
        place += 1
        if name in relevant:
            found += 1
            total += found / place
    return total / len(relevant)


@pytest.mark.parametrize(
    "ranks, n_relevant, expected",
    [
        ([0, 2], 2, (1 / 1 + 2 / 3) / 2),
        ([1], 1, 1 / 2),  # the trapezoid's is 1/4
        ([0, 1, 2], 3, 1.0),
        ([], 2, 0.0),
        ([4], 3, (1 / 5) / 3),
    ],
)
def test_step_average_precision_by_hand(ranks, n_relevant, expected):
    assert step_average_precision_of_ranks(ranks, n_relevant) == pytest.approx(expected)
    assert math.isnan(step_average_precision_of_ranks([], 0))


def test_a_query_without_relevant_images_scores_nan():
    assert math.isnan(average_precision(["a"], []))
    assert math.isnan(recall_at_k(["a"], [], 1))
    assert math.isnan(precision_at_k(["a"], [], 1))
    assert math.isnan(reciprocal_rank(["a"], []))
    assert all(math.isnan(value) for value in score_ranks([], 0, [1, 5]).values())


# --- against the references --------------------------------------------------


@st.composite
def revisitop_cases(draw):
    """A database of n images ranked (maybe truncated), disjoint ok and junk."""
    n = draw(st.integers(1, 30))
    order = np.array(draw(st.permutations(range(n))), dtype=np.int64)
    depth = draw(st.integers(0, n))
    roles = draw(
        st.lists(st.sampled_from(["ok", "junk", "other"]), min_size=n, max_size=n)
    )
    ok = np.array([i for i in range(n) if roles[i] == "ok"], dtype=np.int64)
    junk = np.array([i for i in range(n) if roles[i] == "junk"], dtype=np.int64)
    return order[:depth], ok, junk


@given(revisitop_cases())
def test_average_precision_matches_revisitop(case):
    order, ok, junk = case
    names = [f"img{i}" for i in order]
    relevant = [f"img{i}" for i in ok]
    ignored = [f"img{i}" for i in junk]
    result = average_precision(names, relevant, ignored)
    if len(ok) == 0:
        assert math.isnan(result)
        return
    assert result == pytest.approx(revisitop_ap(order, ok, junk), abs=1e-12)
    assert result == pytest.approx(
        oxford_ap(set(relevant), set(ignored), names), abs=1e-12
    )
    assert 0.0 <= result <= 1.0


@st.composite
def ranking_cases(draw):
    """A ranking over a few names (repeats allowed), disjoint relevant and junk."""
    pool = [f"n{i}" for i in range(draw(st.integers(1, 12)))]
    ranking = draw(st.lists(st.sampled_from(pool), max_size=20))
    roles = draw(
        st.lists(
            st.sampled_from(["relevant", "junk", "other"]),
            min_size=len(pool),
            max_size=len(pool),
        )
    )
    relevant = {
        name for name, role in zip(pool, roles, strict=True) if role == "relevant"
    }
    junk = {name for name, role in zip(pool, roles, strict=True) if role == "junk"}
    k = draw(st.integers(1, 25))
    return ranking, relevant, junk, k


@given(ranking_cases())
def test_recall_precision_and_reciprocal_rank_match_brute_force(case):
    ranking, relevant, junk, k = case
    kept = cleaned(ranking, junk)
    hits = [name in relevant for name in kept]
    recall = recall_at_k(ranking, relevant, k, junk)
    precision = precision_at_k(ranking, relevant, k, junk)
    reciprocal = reciprocal_rank(ranking, relevant, junk)
    if not relevant:
        assert math.isnan(recall) and math.isnan(precision) and math.isnan(reciprocal)
        return
    assert recall == (1.0 if any(hits[:k]) else 0.0)
    assert precision == sum(hits[:k]) / k
    assert reciprocal == (1.0 / (hits.index(True) + 1) if any(hits) else 0.0)
    assert relevant_ranks(ranking, relevant, junk) == [
        place for place, hit in enumerate(hits) if hit
    ]


@given(ranking_cases())
def test_score_ranks_gives_what_each_function_gives(case):
    ranking, relevant, junk, k = case
    ranks = relevant_ranks(ranking, relevant, junk)
    scores = score_ranks(ranks, len(relevant), [k])
    expected = {
        "AP": average_precision(ranking, relevant, junk),
        "RR": reciprocal_rank(ranking, relevant, junk),
        f"recall@{k}": recall_at_k(ranking, relevant, k, junk),
        f"precision@{k}": precision_at_k(ranking, relevant, k, junk),
    }
    assert scores.keys() == expected.keys()
    for name, value in expected.items():
        assert scores[name] == value or (math.isnan(value) and math.isnan(scores[name]))


def test_precision_counts_the_missing_places_of_a_short_ranking_as_wrong():
    assert precision_at_k(["a"], ["a", "b"], 10) == pytest.approx(0.1)
    assert recall_at_k(["x", "a"], ["a"], 1) == 0.0
    assert recall_at_k(["j", "a"], ["a"], 1, junk=["j"]) == 1.0


# --- errors --------------------------------------------------------------------


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: average_precision("abc", ["a"]), TypeError, "ranking must be"),
        (lambda: average_precision([1, 2], ["a"]), TypeError, "got int 1"),
        (lambda: average_precision(["a"], "a"), TypeError, "relevant must be"),
        (lambda: average_precision(["a"], ["a"], ["a"]), ValueError, "both relevant"),
        (lambda: recall_at_k(["a"], ["a"], 0), ValueError, "k must be an int"),
        (lambda: precision_at_k(["a"], ["a"], True), ValueError, "got True"),
        (lambda: average_precision_of_ranks([1, 0], 2), ValueError, "ascending"),
        (lambda: average_precision_of_ranks([0, 1], 1), ValueError, "at least"),
        (lambda: score_ranks([0], 1, [0]), ValueError, "k must be"),
        (lambda: step_average_precision_of_ranks([0, 0], 2), ValueError, "ascending"),
        (lambda: step_average_precision_of_ranks([0], 0), ValueError, "at least"),
        (lambda: step_average_precision_of_ranks([0], 1.0), TypeError, "an int"),
    ],
)
def test_bad_arguments_are_refused_in_one_line(call, error, match):
    with pytest.raises(error, match=match) as caught:
        call()
    assert "\n" not in str(caught.value)


@given(ranking_cases())
def test_step_average_precision_matches_a_plain_loop_and_scikit_learn(case):
    ranking, relevant, junk, _ = case
    if not relevant:
        return
    ranks = relevant_ranks(ranking, relevant, junk)
    step = step_average_precision_of_ranks(ranks, len(relevant))
    assert step == pytest.approx(step_ap_by_loop(ranking, set(relevant), set(junk)))
    # Never below the trapezoid, which lowers each relevant image's share.
    assert step >= average_precision_of_ranks(ranks, len(relevant)) - 1e-12
    if len(ranks) == len(set(relevant)):
        # Every relevant image found: scikit-learn's average precision of the
        # ranking (junk and repeats removed) scored by its places.
        metrics = pytest.importorskip("sklearn.metrics")
        kept = list(dict.fromkeys(name for name in ranking if name not in junk))
        truth = [name in relevant for name in kept]
        scores = -np.arange(len(kept), dtype=np.float64)
        assert step == pytest.approx(metrics.average_precision_score(truth, scores))
