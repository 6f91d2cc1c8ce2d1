"""The search benchmark: exact and faiss search against the bare product.

:func:`make_search_problem` builds database and query vectors with the shape
of VLAD vectors (L2-normalised, most of their variance in a few hundred
directions, as PCA finds in real VLAD vectors) where each query is a
perturbed copy of one database row, its *source*; :func:`benchmark_search`
times, on them,

- the floor: the bare product ``Q @ D.T`` (which holds every score at once);
- :func:`vlad.search.search_exact` and an exact :class:`vlad.search.VectorIndex`
  (validation, names and results included), each against the floor;
- a PCA-whitened faiss IVF-PQ :class:`~vlad.search.VectorIndex` (what
  ``vlad index --pca 256 --factory IVF1024,PQ32`` builds), against the exact
  index;

and notes each one's Recall@1 (the fraction of queries whose best match is
their source), bytes per image and build time.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from benchmarks.measuring import Measurement, measure_or_record
from benchmarks.tables import FLOOR, Table
from benchmarks.workloads import GIB
from vlad.search import build_index, search_exact

__all__ = [
    "EXACT_INDEX",
    "EXACT_SEARCH",
    "SEARCH_FLOOR",
    "SEARCH_WORKLOADS",
    "SearchProblem",
    "SearchWorkload",
    "benchmark_search",
    "compressed_label",
    "make_search_problem",
]

SEARCH = "search"
SEARCH_FLOOR = "search floor: Q @ D.T"
EXACT_SEARCH = "vlad.search.search_exact"
EXACT_INDEX = "VectorIndex.search, exact"


@dataclasses.dataclass(frozen=True)
class SearchWorkload:
    """Shape of one search benchmark.

    Parameters
    ----------
    name : str
    n_database : int
    n_queries : int
    n_dimensions : int
        Length of each vector (``K * F`` for VLAD vectors: 8,192 is K=64 SIFT).
    k : int
        Results per query.
    rank : int
        Directions that hold most of the vectors' variance.
    pca : int
        Whitened dimensions of the compressed index.
    factory : str
        faiss ``index_factory`` string of the compressed index.
    parameters : str
        Its faiss search parameters.
    """

    name: str
    n_database: int
    n_queries: int
    n_dimensions: int
    k: int = 100
    rank: int = 512
    pca: int = 256
    factory: str = "IVF1024,PQ32"
    parameters: str = "nprobe=16"

    def describe(self) -> str:
        """One line: the shape and the size of the database."""
        size = self.n_database * self.n_dimensions * 4 / GIB
        return (
            f"{self.n_queries:,} queries against {self.n_database:,} database "
            f"vectors of {self.n_dimensions:,} float32 ({size:.1f} GiB), k={self.k}"
        )


#: ``search``: 2,000 queries against 100,000 database vectors of 8,192 floats
#: (about 8 GiB of memory, 15 minutes on two cores: the floor alone is 1.6e12
#: multiply-adds; time per query is what compares, and 10,000 queries take five
#: times as long); ``search-small`` a tenth of the database and half the
#: queries, for a quick look.
SEARCH_WORKLOADS: dict[str, SearchWorkload] = {
    "search": SearchWorkload("search", 100_000, 2_000, 8192),
    "search-small": SearchWorkload(
        "search-small", 10_000, 1_000, 8192, factory="IVF64,PQ32", parameters="nprobe=8"
    ),
}


@dataclasses.dataclass(frozen=True)
class SearchProblem:
    """A search workload's data.

    Attributes
    ----------
    workload : SearchWorkload
    database : ndarray of float32 of shape (n_database, n_dimensions)
    queries : ndarray of float32 of shape (n_queries, n_dimensions)
    sources : ndarray of int64 of shape (n_queries,)
        The database row each query was made from.
    """

    workload: SearchWorkload
    database: np.ndarray
    queries: np.ndarray
    sources: np.ndarray


def make_search_problem(
    workload: SearchWorkload, *, seed: int = 0, block: int = 4096
) -> SearchProblem:
    """Database and query vectors for ``workload``, built in blocks of rows.

    Each vector is ``z @ basis + noise``, L2-normalised, where the rows of
    ``basis`` have decaying lengths (``1 / sqrt(1 + i)``), so that a PCA of a
    few hundred dimensions keeps most of the variance; a query adds to its
    source row a perturbation of the same kind, a third of the source's length.
    """
    rng = np.random.default_rng(seed)
    spectrum = 1.0 / np.sqrt(1.0 + np.arange(workload.rank, dtype=np.float32))
    basis = rng.standard_normal((workload.rank, workload.n_dimensions), np.float32)
    basis *= spectrum[:, None] / np.sqrt(workload.n_dimensions, dtype=np.float32)

    def vectors(n_rows: int) -> np.ndarray:
        result = np.empty((n_rows, workload.n_dimensions), dtype=np.float32)
        for start in range(0, n_rows, block):
            stop = min(start + block, n_rows)
            rows = rng.standard_normal((stop - start, workload.rank), np.float32)
            values = rows @ basis
            values += rng.standard_normal(values.shape, np.float32) * np.float32(
                0.2 / np.sqrt(workload.n_dimensions)
            )
            values /= np.linalg.norm(values, axis=1, keepdims=True)
            result[start:stop] = values
        return result

    database = vectors(workload.n_database)
    sources = rng.choice(workload.n_database, workload.n_queries, replace=False)
    queries = vectors(workload.n_queries)
    queries *= np.float32(1 / 3)
    queries += database[sources]
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    return SearchProblem(workload, database, queries, sources.astype(np.int64))


def compressed_label(workload: SearchWorkload) -> str:
    """The row name of the compressed index."""
    return (
        f"VectorIndex.search, PCA{workload.pca} + {workload.factory} "
        f"({workload.parameters})"
    )


def benchmark_search(
    problem: SearchProblem,
    *,
    repeats: int = 3,
    threads: int | None = 1,
    max_seconds: float = 60.0,
) -> Table:
    """Time the bare product, exact search and a compressed faiss index.

    Parameters
    ----------
    problem : SearchProblem
    repeats, threads, max_seconds
        As in :func:`benchmarks.measuring.measure`.

    Returns
    -------
    Table
        Rows: the floor; :func:`~vlad.search.search_exact` and the exact index
        (ratio to the floor); the compressed index (ratio to the exact index).
        Notes: Recall@1, bytes per image and build times.
    """
    workload = problem.workload
    database, queries, k = problem.database, problem.queries, workload.k
    options = {"repeats": repeats, "threads": threads, "max_seconds": max_seconds}
    notes = [workload.describe() + "."]
    rows = [
        measure_or_record(
            SEARCH_FLOOR,
            lambda: queries @ database.T,
            skipped=None,
            group=FLOOR,
            **options,
        ),
        measure_or_record(
            EXACT_SEARCH,
            lambda: search_exact(queries, database, k),
            skipped=None,
            group=SEARCH,
            baseline=(SEARCH_FLOOR,),
            **options,
        ),
    ]
    built = {}
    for label, settings in (
        (EXACT_INDEX, {}),
        (
            compressed_label(workload),
            {
                "pca": workload.pca,
                "factory": workload.factory,
                "parameters": workload.parameters,
            },
        ),
    ):
        start = time.perf_counter()
        try:
            index = build_index(database, **settings)
        except (ImportError, ValueError) as error:
            rows.append(Measurement(label, SEARCH, skipped=f"failed: {error}"))
            continue
        seconds = time.perf_counter() - start
        rows.append(
            measure_or_record(
                label,
                lambda index=index: index.search(queries, k),
                skipped=None,
                group=SEARCH,
                baseline=(SEARCH_FLOOR,) if label == EXACT_INDEX else (EXACT_INDEX,),
                **options,
            )
        )
        built[label] = (index, seconds)
    _, exact_indices = search_exact(queries, database, 1)
    recalls = {EXACT_SEARCH: _recall_at_1(exact_indices[:, 0], problem.sources)}
    for label, (index, seconds) in built.items():
        results = index.search(queries, 1)
        found = np.array(
            [result.rows[0] if len(result.rows) else -1 for result in results]
        )
        recalls[label] = _recall_at_1(found, problem.sources)
        notes.append(
            f"{label}: built in {seconds:.1f} s, {index.bytes_per_image:,} bytes "
            f"per image, Recall@1 {recalls[label]:.4f}."
        )
    notes.append(
        f"Recall@1 of exact search: {recalls[EXACT_SEARCH]:.4f} (the fraction of "
        "queries whose best match is the database row they were made from)."
    )
    notes.append(
        "Ratios: exact search against the floor, the compressed index against "
        "the exact index (below 1 is faster). Peak memory is beyond the inputs."
    )
    return Table(
        workload.name,
        f"Search: {workload.describe()}",
        rows,
        notes,
        ratio_label="x baseline",
        values={f"recall@1 {label}": recall for label, recall in recalls.items()},
    )


def _recall_at_1(found: np.ndarray, sources: np.ndarray) -> float:
    return float(np.mean(found == sources))
