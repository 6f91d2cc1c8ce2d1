"""ASMK's stop list (``stop_fraction``): the words it leaves out, by their
definition, and searches that leave them out, against the plain-loop
reference of the kernel."""

from __future__ import annotations

import numpy as np
import pytest
from asmk_reference import (
    assert_matches_reference,
    random_problem,
    reference_scores,
    reference_stop_words,
    stop_words_by_definition,
)
from hypothesis import given, settings
from hypothesis import strategies as st

import vlad
from vlad.asmk import build_asmk_index
from vlad.asmk._scoring import ONLY_STOP_WORDS
from vlad.asmk._weights import stop_words
from vlad.errors import VladError


@settings(max_examples=200, deadline=None)
@given(
    counts=st.lists(st.integers(0, 50), min_size=1, max_size=30),
    fraction=st.one_of(st.just(0.0), st.floats(0, 1, exclude_max=True), st.just(0.5)),
)
def test_stop_words_are_the_commonest_within_the_fraction(counts, fraction):
    found = set(np.flatnonzero(stop_words(np.array(counts), fraction)).tolist())
    assert found == stop_words_by_definition(counts, fraction)


def test_stop_words_by_hand():
    counts = np.array([5, 1, 3, 0, 1])  # 10 entries
    assert not stop_words(counts, 0.0).any()
    assert not stop_words(counts, 0.49).any()  # the commonest holds 50%
    assert np.flatnonzero(stop_words(counts, 0.5)).tolist() == [0]
    assert np.flatnonzero(stop_words(counts, 0.8)).tolist() == [0, 2]
    # Ties go to the lower word: word 1 before word 4.
    assert np.flatnonzero(stop_words(counts, 0.9)).tolist() == [0, 1, 2]
    assert not stop_words(np.zeros(4, np.int64), 0.5).any()


@pytest.mark.parametrize("binary", [True, False])
@pytest.mark.parametrize("idf", [False, True])
@pytest.mark.parametrize("fraction", [0.3, 0.5])
def test_a_search_leaves_out_the_stop_words(binary, idf, fraction):
    centers, database, rng = random_problem(3, 8, [9, 0, 14, 4, 11, 7, 6])
    queries = [rng.standard_normal((9, 8)).astype(np.float32) for _ in range(3)]
    index = build_asmk_index(database, vlad.Codebook(centers), binary=binary, idf=idf)
    stopped = reference_stop_words(database, centers, fraction)
    assert stopped  # the problem has some
    found = index.search(queries, k=10, multiple_assignment=2, stop_fraction=fraction)
    assert found.record["stop_fraction"] == fraction
    assert found.record["stop_words"] == len(stopped)
    for query, result in zip(queries, found, strict=True):
        expected = reference_scores(
            database, query, centers, 2, binary, 3.0, 0.0, idf=idf, stopped=stopped
        )
        if all(score is None for score in expected):
            assert result.names == () and result.reason
            continue
        assert_matches_reference(result, expected)
    # Without a stop list, the search is the one it was.
    plain = index.search(queries, k=10, multiple_assignment=2)
    assert plain.record["stop_words"] == 0
    none = index.search(queries, k=10, multiple_assignment=2, stop_fraction=0)
    assert plain.rankings() == none.rankings()


def test_a_query_of_stop_words_only_matches_nothing_and_says_why():
    centers = np.eye(4, 8, dtype=np.float32) * 10
    # Word 0 in every image: it holds 3 of the 5 entries.
    database = [centers[[0]], centers[[0, 1]], centers[[0, 2]]]
    index = build_asmk_index(database, vlad.Codebook(centers))
    query = centers[[0]] + 0.1
    (result,) = index.search([query], k=3, multiple_assignment=1, stop_fraction=0.6)
    assert result.names == ()
    assert result.reason == ONLY_STOP_WORDS
    (kept,) = index.search([query], k=3, multiple_assignment=1, stop_fraction=0.5)
    assert kept.names  # 60% > 0.5: no stop word


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (1.0, r"stop_fraction must be a number in \[0, 1\); got 1.0"),
        (-0.1, r"stop_fraction must be a number in \[0, 1\); got -0.1"),
        (float("nan"), "stop_fraction must be a number in"),
        ("0.3", "stop_fraction must be a number"),
        (True, "stop_fraction must be a number"),
    ],
)
def test_bad_stop_fractions_are_refused_in_one_line(value, message):
    centers, database, rng = random_problem(4, 3, [4, 5])
    index = build_asmk_index(database, vlad.Codebook(centers))
    with pytest.raises((VladError, TypeError), match=message) as caught:
        index.search([database[0]], k=2, stop_fraction=value)
    assert "\n" not in str(caught.value)
