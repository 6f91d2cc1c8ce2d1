"""Query expansion and database-side augmentation of VLAD vectors.

Both replace a vector by a weighted mean of itself and its nearest
neighbours, then L2-normalise: the query (query expansion, QE) or every
database vector (database-side augmentation, DBA). With ``alpha = 0`` the
neighbours weigh as much as the vector itself (average QE, Chum et al. 2007);
with ``alpha > 0`` each weighs its similarity to the power ``alpha``
(alpha-QE, Radenović et al. 2018), so that weak neighbours count little.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vlad.errors import VladError

__all__ = [
    "QueryExpansion",
    "augment_database",
    "expand_queries",
    "search_expanded",
]


@dataclass(frozen=True)
class QueryExpansion:
    """How many neighbours expand a query, and how they are weighed.

    Parameters
    ----------
    neighbours : int, default=3
        Top-ranked database vectors averaged into the query.
    alpha : float, default=3.0
        0 for average QE; otherwise each neighbour weighs
        ``max(similarity, 0) ** alpha`` (alpha-QE).

    References
    ----------
    .. [1] O. Chum, J. Philbin, J. Sivic, M. Isard, A. Zisserman. "Total
       recall: automatic query expansion with a generative feature model for
       object retrieval". ICCV 2007.
    .. [2] F. Radenović, G. Tolias, O. Chum. "Fine-tuning CNN image retrieval
       with no human annotation". TPAMI 2018.
    """

    neighbours: int = 3
    alpha: float = 3.0

    def __post_init__(self):
        if (
            isinstance(self.neighbours, bool)
            or not isinstance(self.neighbours, (int, np.integer))
            or self.neighbours < 1
        ):
            raise VladError(
                f"neighbours must be a positive integer; got {self.neighbours!r}"
            )
        if (
            isinstance(self.alpha, bool)
            or not isinstance(self.alpha, (int, float))
            or not 0 <= self.alpha < float("inf")
        ):
            raise VladError(f"alpha must be a finite number >= 0; got {self.alpha!r}")

    def record(self) -> dict:
        """JSON description."""
        return {"neighbours": int(self.neighbours), "alpha": float(self.alpha)}


def expand_queries(
    queries: np.ndarray,
    neighbours: np.ndarray,
    similarities: np.ndarray,
    *,
    alpha: float = 0.0,
) -> np.ndarray:
    """Queries replaced by the weighted mean of themselves and their neighbours.

    Parameters
    ----------
    queries : ndarray of shape (n_queries, n_dimensions)
    neighbours : ndarray of shape (n_queries, n_neighbours, n_dimensions)
        Each query's top-ranked database vectors.
    similarities : ndarray of shape (n_queries, n_neighbours)
        Their scores; used only when ``alpha > 0``.
    alpha : float, default=0.0
        See :class:`QueryExpansion`.

    Returns
    -------
    ndarray of float32 of shape (n_queries, n_dimensions)
        L2-normalised (an all-zero sum stays zero).

    Examples
    --------
    >>> import numpy as np
    >>> from vlad.search import expand_queries
    >>> expanded = expand_queries(np.array([[1.0, 0.0]]), np.array([[[0.0, 1.0]]]),
    ...                           np.array([[0.5]]))
    >>> print(expanded.round(4))
    [[0.7071 0.7071]]
    """
    if alpha > 0:
        weights = np.maximum(similarities, 0) ** alpha
    else:
        weights = np.ones(similarities.shape)
    expanded = queries + np.einsum("qn,qnd->qd", weights, neighbours)
    norms = np.linalg.norm(expanded, axis=1, keepdims=True)
    np.divide(expanded, norms, out=expanded, where=norms > 0)
    return expanded.astype(np.float32, copy=False)


def augment_database(
    vectors: np.ndarray, expansion: QueryExpansion, *, search
) -> np.ndarray:
    """Database-side augmentation: each vector expanded by its own neighbours.

    Parameters
    ----------
    vectors : ndarray of float32 of shape (n_vectors, n_dimensions)
        Non-zero, L2-normalised database vectors.
    expansion : QueryExpansion
        Neighbours (besides the vector itself) and weighting.
    search : callable
        ``search(queries, k) -> (scores, rows)`` over ``vectors``, such as
        :func:`vlad.search.search_exact` bound to them.

    Returns
    -------
    ndarray of float32 of shape (n_vectors, n_dimensions)
    """
    k = min(expansion.neighbours + 1, vectors.shape[0])
    augmented = np.empty_like(vectors, dtype=np.float32)
    # Blocks of rows keep the (rows, k, dimensions) neighbour array bounded.
    block = max(1, (64 << 20) // max(1, 4 * k * vectors.shape[1]))
    for start in range(0, vectors.shape[0], block):
        stop = min(start + block, vectors.shape[0])
        scores, rows = search(vectors[start:stop], k)
        own = rows == np.arange(start, stop)[:, None]
        # Each vector is its own best match unless it has an exact duplicate:
        # drop itself wherever it appears, or the last neighbour otherwise.
        keep = ~own
        keep[~own.any(axis=1), -1] = False
        shape = (stop - start, k - 1)
        rows = rows[keep].reshape(shape)
        scores = scores[keep].reshape(shape)
        augmented[start:stop] = expand_queries(
            vectors[start:stop], vectors[rows], scores, alpha=expansion.alpha
        )
    return augmented


def search_expanded(
    store,
    queries: np.ndarray,
    scores: np.ndarray,
    positions: np.ndarray,
    expansion: QueryExpansion,
) -> tuple[np.ndarray, np.ndarray]:
    """Search ``store`` again with each query expanded by its first results.

    Parameters
    ----------
    store : ExactStore or FaissStore
        What was searched: ``search(queries, k)``, ``reconstruct(rows)`` and
        ``dimension``.
    queries : ndarray of float32 of shape (n_queries, n_dimensions)
    scores, positions : ndarray of shape (n_queries, k)
        The first search's results; a position of -1 (an approximate index
        that found fewer) weighs nothing.
    expansion : QueryExpansion

    Returns
    -------
    scores, positions : ndarray of shape (n_queries, k)
        The second search's results.
    """
    depth = min(expansion.neighbours, positions.shape[1])
    top = positions[:, :depth]
    weights = np.where(top >= 0, scores[:, :depth], 0.0)
    neighbours = np.array(
        store.reconstruct(np.maximum(top, 0)), dtype=np.float32
    ).reshape(*top.shape, store.dimension)
    neighbours[top < 0] = 0
    expanded = expand_queries(queries, neighbours, weights, alpha=expansion.alpha)
    return store.search(expanded, positions.shape[1])
