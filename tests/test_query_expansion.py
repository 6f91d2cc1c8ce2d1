"""Query expansion and database-side augmentation: vlad.search._expansion, and
VectorIndex searches with them, against plain loops over the formula.

Average QE (Chum et al. 2007) and alpha-QE (Radenović et al. 2018) replace a
vector ``q`` by ``normalise(q + sum_i w_i d_i)`` over its ``n`` best database
vectors ``d_i``, with ``w_i = 1`` (alpha = 0) or ``max(q . d_i, 0) ** alpha``.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from vlad.search import QueryExpansion, augment_database, build_index, search_exact
from vlad.search._expansion import expand_queries


def expanded_by_loop(query, neighbours, similarities, alpha):
    """One query's expansion, a neighbour at a time, in float64."""
    total = np.array(query, dtype=np.float64)
    for vector, similarity in zip(neighbours, similarities, strict=True):
        weight = 1.0 if alpha == 0 else max(float(similarity), 0.0) ** alpha
        total = total + weight * np.asarray(vector, dtype=np.float64)
    norm = np.sqrt(np.sum(total**2))
    return total / norm if norm > 0 else total


def ranking_by_loop(query, database):
    """Database rows by decreasing inner product, lower row first among equals."""
    scores = [float(np.dot(query, row)) for row in database]
    return sorted(range(len(database)), key=lambda row: (-scores[row], row)), scores


def augmented_by_loop(database, neighbours, alpha):
    """Each database vector expanded by its ``neighbours`` best other vectors."""
    database = np.asarray(database, dtype=np.float64)
    augmented = []
    for row, vector in enumerate(database):
        order, scores = ranking_by_loop(vector, database)
        others = [other for other in order if other != row][:neighbours]
        augmented.append(
            expanded_by_loop(
                vector, database[others], [scores[other] for other in others], alpha
            )
        )
    return np.array(augmented)


def unit_rows(rng, n_rows, n_dimensions):
    rows = rng.standard_normal((n_rows, n_dimensions))
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


@given(
    st.integers(0, 2**32 - 1),
    st.integers(1, 6),
    st.integers(1, 5),
    st.sampled_from([0.0, 1.0, 3.0, 0.5]),
)
def test_expand_queries_equals_the_formula(seed, n_queries, n_neighbours, alpha):
    rng = np.random.default_rng(seed)
    queries = unit_rows(rng, n_queries, 7)
    neighbours = rng.standard_normal((n_queries, n_neighbours, 7))
    similarities = rng.uniform(-1, 1, (n_queries, n_neighbours))
    result = expand_queries(queries, neighbours, similarities, alpha=alpha)
    expected = [
        expanded_by_loop(query, rows, weights, alpha)
        for query, rows, weights in zip(queries, neighbours, similarities, strict=True)
    ]
    assert result.dtype == np.float32
    np.testing.assert_allclose(result, expected, atol=1e-6)


def test_an_expansion_that_sums_to_zero_stays_zero():
    result = expand_queries(
        np.array([[1.0, 0.0]]), np.array([[[-1.0, 0.0]]]), np.array([[0.5]])
    )
    assert result.tolist() == [[0.0, 0.0]]


@given(
    st.integers(0, 2**32 - 1),
    st.integers(1, 25),
    st.integers(1, 6),
    st.sampled_from([0.0, 3.0]),
)
def test_augment_database_equals_a_loop_over_every_vector(
    seed, n_vectors, neighbours, alpha
):
    rng = np.random.default_rng(seed)
    database = unit_rows(rng, n_vectors, 5).astype(np.float32)
    expansion = QueryExpansion(neighbours, alpha)
    result = augment_database(
        database,
        expansion,
        search=lambda queries, k: search_exact(queries, database, k),
    )
    expected = augmented_by_loop(database, neighbours, alpha)
    np.testing.assert_allclose(result, expected, atol=1e-5)


def test_augmentation_of_exact_duplicates_leaves_the_vector_itself_out():
    """Three equal vectors: each is averaged with the others, never with itself
    twice, whichever of the equals the search ranks first."""
    database = np.array([[1.0, 0.0], [1.0, 0.0], [1.0, 0.0], [0.0, 1.0]], np.float32)
    for neighbours in (1, 2, 3):
        result = augment_database(
            database,
            QueryExpansion(neighbours, 0.0),
            search=lambda queries, k: search_exact(queries, database, k),
        )
        np.testing.assert_allclose(
            result, augmented_by_loop(database, neighbours, 0.0), atol=1e-6
        )


@pytest.mark.parametrize("alpha", [0.0, 3.0])
@pytest.mark.parametrize("neighbours", [1, 3, 50])
def test_index_search_with_expansion_equals_two_searches_by_loop(neighbours, alpha):
    rng = np.random.default_rng(neighbours)
    database = unit_rows(rng, 40, 6)
    queries = unit_rows(rng, 5, 6)
    index = build_index(database)
    results = index.search(queries, 10, expansion=QueryExpansion(neighbours, alpha))
    database32 = database.astype(np.float32)
    for query, result in zip(queries.astype(np.float32), results, strict=True):
        first, scores = ranking_by_loop(query, database32)
        # The first search returns k = 10 rows: at most those expand the query.
        top = first[: min(neighbours, 10)]
        expanded = expanded_by_loop(
            query, database32[top], [scores[row] for row in top], alpha
        )
        second, second_scores = ranking_by_loop(expanded, database32)
        assert list(result.rows) == second[:10]
        np.testing.assert_allclose(
            result.scores, [second_scores[row] for row in second[:10]], atol=1e-5
        )
    assert results.record["query_expansion"] == {
        "neighbours": neighbours,
        "alpha": alpha,
    }


@pytest.mark.parametrize("alpha", [0.0, 3.0])
def test_an_augmented_index_searches_the_augmented_vectors(alpha):
    rng = np.random.default_rng(11)
    database = unit_rows(rng, 30, 5)
    queries = unit_rows(rng, 4, 5)
    index = build_index(database, augmentation=QueryExpansion(2, alpha))
    augmented = augmented_by_loop(database.astype(np.float32), 2, alpha)
    for query, result in zip(queries, index.search(queries, 5), strict=True):
        order, scores = ranking_by_loop(query.astype(np.float32), augmented)
        assert list(result.rows) == order[:5]
        np.testing.assert_allclose(
            result.scores, [scores[row] for row in order[:5]], atol=1e-5
        )


def test_augmentation_skips_images_without_descriptors_and_a_lone_image():
    database = np.array([[1.0, 0.0], [0.0, 0.0], [0.6, 0.8]])
    index = build_index(database, ["a", "blank", "b"], augmentation=QueryExpansion(1))
    expected = augmented_by_loop(database[[0, 2]], 1, 3.0)
    np.testing.assert_allclose(index.store.vectors, expected, atol=1e-6)
    lone = build_index([[0.0, 1.0]], augmentation=QueryExpansion(3))
    np.testing.assert_array_equal(lone.store.vectors, [[0.0, 1.0]])


@pytest.mark.parametrize(
    ("neighbours", "alpha", "message"),
    [
        (0, 3.0, "neighbours must be a positive integer; got 0"),
        (2.5, 3.0, "neighbours must be a positive integer"),
        (True, 3.0, "neighbours must be a positive integer"),
        (3, -1.0, "alpha must be a finite number >= 0; got -1.0"),
        (3, float("inf"), "alpha must be"),
        (3, float("nan"), "alpha must be"),
        (3, "3", "alpha must be"),
    ],
)
def test_bad_expansions_are_refused(neighbours, alpha, message):
    with pytest.raises(ValueError, match=message):
        QueryExpansion(neighbours, alpha)
