"""Exact search by inner product: vlad.search._exact against a brute-force sort."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import DTYPES
from hypothesis import given
from hypothesis import strategies as st

from vlad.search import search_exact
from vlad.search._exact import top_k


def brute_force(queries, database, k):
    """Every score in float64, sorted by (-score, row) with a stable argsort."""
    queries = np.asarray(queries, dtype=np.float32).astype(np.float64)
    database = np.asarray(database, dtype=np.float32).astype(np.float64)
    scores = queries @ database.T
    order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(scores, order, axis=1), order


@st.composite
def integer_problems(draw):
    """Queries and a database of small integers, so that every inner product is
    exact in float32 whatever the summation order, and ties are frequent."""
    n_queries = draw(st.integers(0, 12))
    n_database = draw(st.integers(1, 40))
    n_dimensions = draw(st.integers(1, 6))
    spread = draw(st.sampled_from([1, 3]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    dtype = draw(st.sampled_from(DTYPES))
    queries = rng.integers(-spread, spread + 1, (n_queries, n_dimensions))
    database = rng.integers(-spread, spread + 1, (n_database, n_dimensions))
    return queries.astype(dtype), database.astype(dtype)


@given(
    integer_problems(),
    st.integers(1, 50),
    st.sampled_from([4, 40, 400, 1 << 20]),
)
def test_equals_a_stable_argsort_of_every_score(problem, k, chunk_bytes):
    """Ties included: the lower database row first, at any block size (4 bytes
    is one score a block)."""
    queries, database = problem
    scores, indices = search_exact(queries, database, k, chunk_bytes=chunk_bytes)
    expected_scores, expected_indices = brute_force(queries, database, k)
    width = min(k, database.shape[0])
    assert scores.shape == indices.shape == (queries.shape[0], width)
    assert scores.dtype == np.float32 and indices.dtype == np.int64
    np.testing.assert_array_equal(indices, expected_indices)
    np.testing.assert_array_equal(scores, expected_scores)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("chunk_bytes", [4 * 7, 4 * 300, 64 << 20])
def test_real_vectors_agree_with_the_brute_force_within_rounding(dtype, chunk_bytes):
    """Normalised random vectors, several blocks of queries and of database rows:
    the same neighbours, and scores within float32 rounding."""
    rng = np.random.default_rng(1)
    database = rng.standard_normal((500, 32)).astype(dtype)
    database /= np.linalg.norm(database, axis=1, keepdims=True)
    queries = database[::7] + 0.3 * rng.standard_normal((72, 32)).astype(dtype)
    scores, indices = search_exact(queries, database, 20, chunk_bytes=chunk_bytes)
    expected_scores, expected_indices = brute_force(queries, database, 20)
    np.testing.assert_allclose(scores, expected_scores, atol=1e-5)
    # Each rank holds a neighbour whose exact score is the brute force's: two
    # neighbours closer than float32's rounding (two of these are 2e-6 apart,
    # and another CPU's products round otherwise) may come in either order,
    # every other one is at its rank.
    exact = queries.astype(np.float32).astype(np.float64) @ (
        database.astype(np.float32).astype(np.float64).T
    )
    found = np.take_along_axis(exact, indices, axis=1)
    np.testing.assert_allclose(found, expected_scores, rtol=0, atol=1e-5)
    swapped = found != expected_scores
    assert np.array_equal(indices[~swapped], expected_indices[~swapped])
    assert all(len(set(row)) == len(row) for row in indices.tolist())


def test_every_score_tied_gives_the_first_rows_at_every_block_size():
    database = np.ones((100, 3), dtype=np.float32)
    for chunk_bytes in (4, 4 * 9, 4 * 100, 1 << 20):
        scores, indices = search_exact(
            np.ones((5, 3)), database, 10, chunk_bytes=chunk_bytes
        )
        assert indices.tolist() == [list(range(10))] * 5
        assert np.all(scores == 3)


def test_k_larger_than_the_database_returns_every_row():
    database = np.eye(3)
    scores, indices = search_exact([[0.0, 1.0, 0.5]], database, 10)
    assert indices.tolist() == [[1, 2, 0]]
    assert scores.tolist() == [[1.0, 0.5, 0.0]]


def test_an_empty_database_or_no_queries_give_empty_results():
    scores, indices = search_exact(np.ones((2, 4)), np.zeros((0, 4)), 3)
    assert scores.shape == indices.shape == (2, 0)
    scores, indices = search_exact(np.zeros((0, 4)), np.ones((5, 4)), 3)
    assert scores.shape == indices.shape == (0, 3)


def test_inputs_are_not_modified():
    rng = np.random.default_rng(0)
    queries = rng.standard_normal((4, 5))
    database = rng.standard_normal((9, 5))
    copies = queries.copy(), database.copy()
    search_exact(queries, database, 3, chunk_bytes=8)
    np.testing.assert_array_equal(queries, copies[0])
    np.testing.assert_array_equal(database, copies[1])


@pytest.mark.parametrize(
    ("queries", "database", "k", "chunk_bytes", "error", "message"),
    [
        (np.ones((1, 3)), np.ones((4, 2)), 1, 64, ValueError, "3 dimensions"),
        (np.ones((1, 2)), np.ones((4, 2)), 0, 64, ValueError, "k must be"),
        (np.ones((1, 2)), np.ones((4, 2)), 2.0, 64, TypeError, "k must be"),
        (np.ones((1, 2)), np.ones((4, 2)), 1, 0, ValueError, "chunk_bytes"),
        ([[np.nan, 0]], np.ones((4, 2)), 1, 64, ValueError, "queries contains 1"),
        (np.ones((1, 2)), [[0, np.inf]], 1, 64, ValueError, "database contains 1"),
        (np.ones(2), np.ones((4, 2)), 1, 64, ValueError, "queries"),
        ([["a", "b"]], np.ones((4, 2)), 1, 64, TypeError, "queries"),
    ],
)
def test_bad_inputs_are_refused_in_one_line(
    queries, database, k, chunk_bytes, error, message
):
    with pytest.raises(error, match=message) as raised:
        search_exact(queries, database, k, chunk_bytes=chunk_bytes)
    assert "\n" not in str(raised.value)


@given(
    st.lists(
        st.lists(st.integers(-2, 2), min_size=1, max_size=30), min_size=1, max_size=5
    ).filter(lambda rows: len({len(row) for row in rows}) == 1),
    st.data(),
)
def test_top_k_is_a_stable_sort_cut_at_k(rows, data):
    scores = np.array(rows, dtype=np.float64)
    k = data.draw(st.integers(0, scores.shape[1]))
    values, columns = top_k(scores, k)
    order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    np.testing.assert_array_equal(columns, order)
    np.testing.assert_array_equal(values, np.take_along_axis(scores, order, axis=1))
