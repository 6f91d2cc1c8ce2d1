"""Exact k-nearest-neighbour search by inner product, in bounded memory."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from vlad.core._files import read_numpy_file
from vlad.core._parameters import K
from vlad.core._validation import as_float_matrix, check_finite, check_positive_int
from vlad.errors import VladError

__all__ = [
    "MIN_DATABASE_BLOCK",
    "SCORE_CHUNK_BYTES",
    "ExactStore",
    "search_exact",
    "top_k",
]

#: Upper bound on the block of scores computed at once: large enough for the
#: matrix product to run at full speed, small enough to stay far below memory.
SCORE_CHUNK_BYTES = 64 << 20
#: Database rows scored at once at the least: narrower products waste the
#: BLAS kernels, wider ones leave fewer queries per pass over the database.
MIN_DATABASE_BLOCK = 2048


def search_exact(
    queries: ArrayLike,
    database: ArrayLike,
    k: int,
    *,
    chunk_bytes: int = SCORE_CHUNK_BYTES,
) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` database rows of largest inner product with each query.

    Scores are computed a block of queries by a block of database rows at a
    time (one matrix product each) and only each block's best ``k`` are kept,
    so no ``(n_queries, n_database)`` score matrix is ever held: beside the
    inputs and the results, memory stays within about four times
    ``chunk_bytes`` (the block of scores, and the selection of its best). For
    L2-normalised vectors the inner product is the cosine similarity, and
    ranking by it is ranking by Euclidean distance.

    Ties are broken by the lower database row, so results do not depend on the
    block sizes.

    Parameters
    ----------
    queries : array-like of shape (n_queries, n_dimensions)
    database : array-like of shape (n_database, n_dimensions)
    k : int
        Neighbours per query; at most ``n_database`` are returned.
    chunk_bytes : int, default=64 MiB
        Upper bound on one block of float32 scores.

    Returns
    -------
    scores : ndarray of float32 of shape (n_queries, min(k, n_database))
        Inner products, best first.
    indices : ndarray of int64 of shape (n_queries, min(k, n_database))
        Database rows, in the same order.

    Raises
    ------
    ValueError
        Dimensions differ, NaN or infinite values, or ``k`` < 1.

    See Also
    --------
    vlad.search.VectorIndex : Names, whitening, faiss indexes and re-ranking
        over this.

    Examples
    --------
    >>> import numpy as np
    >>> from vlad.search import search_exact
    >>> database = np.array([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]])
    >>> scores, indices = search_exact([[0.8, 0.6]], database, 2)
    >>> indices.tolist()
    [[2, 0]]
    >>> print(scores.round(2))
    [[0.96 0.8 ]]
    """
    queries = as_float_matrix(queries, "queries", dtype=np.float32)
    database = as_float_matrix(database, "database", dtype=np.float32)
    if queries.shape[1] != database.shape[1]:
        raise VladError(
            f"queries have {queries.shape[1]} dimensions but the database has "
            f"{database.shape[1]}"
        )
    check_finite(queries, "queries")
    check_finite(database, "database")
    k = min(K.check(k), database.shape[0])
    chunk_bytes = check_positive_int(chunk_bytes, "chunk_bytes")
    return _search_valid(queries, database, k, chunk_bytes)


def _search_valid(
    queries: np.ndarray, database: np.ndarray, k: int, chunk_bytes: int
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`search_exact` on checked float32 inputs with ``k <= n_database``."""
    n_queries, n_database = queries.shape[0], database.shape[0]
    scores = np.empty((n_queries, k), dtype=np.float32)
    indices = np.empty((n_queries, k), dtype=np.int64)
    if n_queries == 0 or k == 0:
        return scores, indices
    # Each query block reads the whole database again, so query blocks are
    # made as tall as the budget allows beside a database block of
    # MIN_DATABASE_BLOCK rows (wide enough for the product to run at full
    # speed); when every query fits in one block, the database block widens
    # into what is left of the budget.
    score_rows = max(1, chunk_bytes // 4)
    database_block = int(min(n_database, max(k, MIN_DATABASE_BLOCK)))
    query_block = int(max(1, min(n_queries, score_rows // database_block)))
    if query_block == n_queries:
        database_block = int(
            min(n_database, max(database_block, score_rows // n_queries))
        )
    for start in range(0, n_queries, query_block):
        stop = min(start + query_block, n_queries)
        best_scores, best_indices = None, None
        for first in range(0, n_database, database_block):
            last = min(first + database_block, n_database)
            block = queries[start:stop] @ database[first:last].T
            block_scores, block_indices = top_k(block, min(k, last - first))
            block_indices += first
            if best_scores is None:
                best_scores, best_indices = block_scores, block_indices
            else:
                best_scores, best_indices = _merge(
                    best_scores, best_indices, block_scores, block_indices, k
                )
        scores[start:stop] = best_scores
        indices[start:stop] = best_indices
    return scores, indices


def top_k(scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` largest values of each row and their columns, best first.

    Ties are broken by the lower column, including ties at the ``k``-th place
    (which ``np.argpartition`` alone would break arbitrarily).

    Parameters
    ----------
    scores : ndarray of shape (n_rows, n_columns)
    k : int
        ``0 <= k <= n_columns``.

    Returns
    -------
    values : ndarray of shape (n_rows, k)
    columns : ndarray of int64 of shape (n_rows, k)

    Examples
    --------
    >>> import numpy as np
    >>> from vlad.search._exact import top_k
    >>> values, columns = top_k(np.array([[0.5, 0.9, 0.5, 0.1]]), 2)
    >>> values.tolist(), columns.tolist()
    ([[0.9, 0.5]], [[1, 0]])
    """
    n_rows, n_columns = scores.shape
    if k == 0:
        return scores[:, :0].copy(), np.zeros((n_rows, 0), dtype=np.int64)
    if k < n_columns:
        columns = np.argpartition(-scores, k - 1, axis=1)[:, :k]
        values = np.take_along_axis(scores, columns, axis=1)
        _settle_boundary_ties(scores, values, columns)
    else:
        columns = np.broadcast_to(np.arange(n_columns), scores.shape).copy()
        values = scores.copy()
    # Best first, lower column first among equals.
    order = np.lexsort((columns, -values), axis=1)
    return (
        np.take_along_axis(values, order, axis=1),
        np.take_along_axis(columns, order, axis=1).astype(np.int64, copy=False),
    )


def _settle_boundary_ties(
    scores: np.ndarray, values: np.ndarray, columns: np.ndarray
) -> None:
    """Where a row's ``k``-th value is tied with columns left out, keep the
    lowest columns among those tied (in place)."""
    threshold = values.min(axis=1)
    tied_everywhere = np.count_nonzero(scores == threshold[:, None], axis=1)
    tied_kept = np.count_nonzero(values == threshold[:, None], axis=1)
    for row in np.flatnonzero(tied_everywhere > tied_kept):
        above = np.flatnonzero(scores[row] > threshold[row])
        tied = np.flatnonzero(scores[row] == threshold[row])
        chosen = np.concatenate([above, tied[: columns.shape[1] - above.size]])
        columns[row] = chosen
        values[row] = scores[row, chosen]


def _merge(
    scores: np.ndarray,
    indices: np.ndarray,
    more_scores: np.ndarray,
    more_indices: np.ndarray,
    k: int,
) -> tuple[np.ndarray, np.ndarray]:
    """The best ``k`` of two sets of candidates per row (indices all distinct)."""
    all_scores = np.concatenate([scores, more_scores], axis=1)
    all_indices = np.concatenate([indices, more_indices], axis=1)
    # Sorting a few hundred candidates per row costs nothing beside the product,
    # and sorting by (score, index) keeps the tie rule exact across blocks.
    order = np.lexsort((all_indices, -all_scores), axis=1)[:, :k]
    return (
        np.take_along_axis(all_scores, order, axis=1),
        np.take_along_axis(all_indices, order, axis=1),
    )


class ExactStore:
    """Vectors kept as they are, in a float32 matrix, searched exactly.

    Parameters
    ----------
    vectors : ndarray of float32 of shape (n_vectors, n_dimensions)
        Finite; may be a read-only memory map.
    """

    suffix = ".npy"
    factory = None
    parameters = None

    def __init__(self, vectors: np.ndarray):
        self.vectors = vectors

    @classmethod
    def build(cls, vectors: np.ndarray, parameters: str | None = None) -> ExactStore:
        """Keep a float32 copy of ``vectors``; search parameters are refused."""
        _refuse_parameters(parameters)
        return cls(np.array(vectors, dtype=np.float32))

    def add(self, vectors: np.ndarray) -> None:
        """Append vectors (copies the matrix once)."""
        self.vectors = np.concatenate([self.vectors, vectors.astype(np.float32)])

    def __len__(self) -> int:
        return self.vectors.shape[0]

    @property
    def dimension(self) -> int:
        """Dimension of the stored vectors."""
        return self.vectors.shape[1]

    @property
    def bytes_per_vector(self) -> int:
        """Four bytes per dimension."""
        return 4 * self.dimension

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Best ``min(k, len(self))`` by inner product (checked float32 queries)."""
        return _search_valid(
            queries, self.vectors, min(k, len(self)), SCORE_CHUNK_BYTES
        )

    def reconstruct(self, rows: np.ndarray) -> np.ndarray:
        """The stored vectors of ``rows``."""
        return np.asarray(self.vectors[np.asarray(rows, dtype=np.int64)])

    def save(self, path) -> None:
        """Write the matrix as ``.npy`` (the caller makes it atomic)."""
        with open(path, "wb") as handle:
            np.save(handle, self.vectors)

    @classmethod
    def load(
        cls, path, *, mmap: bool = False, parameters: str | None = None
    ) -> ExactStore:
        """Read a matrix written by :meth:`save`; search parameters are refused."""
        _refuse_parameters(parameters)
        vectors = read_numpy_file(path, "vlad index vectors file", mmap=mmap)
        if not isinstance(vectors, np.ndarray) or vectors.ndim != 2:
            raise VladError(f"{path} is not a vlad index vectors file")
        if vectors.dtype != np.float32:
            raise VladError(
                f"{path} is a damaged vlad index vectors file: dtype {vectors.dtype}"
            )
        return cls(vectors)


def _refuse_parameters(parameters: str | None) -> None:
    """faiss search parameters given for exact search would be silently moot."""
    if parameters:
        raise VladError(
            f"parameters={parameters!r} tune a faiss index, and this index searches "
            "exactly: build it with a factory string to use them"
        )
