"""Spatial re-ranking of search results: verify each query's top images by
geometry and move the verified ones first."""

from __future__ import annotations

import dataclasses

import numpy as np

from vlad.core._descriptors import DescriptorSets
from vlad.errors import VladError
from vlad.search._results import SearchResults
from vlad.search._spatial import (
    DEFAULT_THRESHOLDS,
    LOWE_RATIO,
    MAX_KEYPOINTS,
    MIN_INLIERS,
    spatial_rerank,
)

__all__ = ["DEFAULT_DEPTH", "rerank_spatially"]

#: Images per query verified by default. On the retrieval benchmark
#: (docs/retrieval.md) verifying the top 100 gained nothing over the top 20
#: and took twelve times as long: about 12 ms an image on one core.
DEFAULT_DEPTH = 20


def rerank_spatially(
    results: SearchResults,
    queries: DescriptorSets,
    database: DescriptorSets,
    *,
    depth: int = DEFAULT_DEPTH,
    matching: str = "mutual+ratio",
    model: str = "fundamental",
    ratio: float = LOWE_RATIO,
    reprojection_threshold: float | None = None,
    min_inliers: int = MIN_INLIERS,
    max_keypoints: int | None = MAX_KEYPOINTS,
    n_jobs: int | None = None,
) -> SearchResults:
    """Re-rank every query's first ``depth`` images by inliers of a geometric
    model.

    Queries and database images are matched by name to their descriptor sets
    (which must hold keypoint positions: ``vlad extract`` keeps them). Each
    result gains ``inliers`` (-1 where not verified); its scores stay the
    index's similarities.

    Parameters
    ----------
    results : SearchResults
        From :meth:`vlad.search.VectorIndex.search`.
    queries : DescriptorSets
        The queries' descriptors, named as the results' queries.
    database : DescriptorSets
        The database images' descriptors, named as the index's images.
    depth : int, default=DEFAULT_DEPTH
    matching, model, ratio, reprojection_threshold, min_inliers, max_keypoints, n_jobs
        As in :func:`vlad.search.spatial_rerank`.

    Returns
    -------
    SearchResults

    Raises
    ------
    ValueError
        A query or a result image with no descriptor set of its name.
    """
    query_rows = _rows_by_name(queries, "queries' descriptors")
    database_rows = _rows_by_name(database, "database descriptors")
    reranked = []
    for result in results.queries:
        if not result.names:
            reranked.append(result)
            continue
        if result.query not in query_rows:
            raise VladError(f"no descriptors of query {result.query!r} were given")
        missing = [name for name in result.names if name not in database_rows]
        if missing:
            raise VladError(
                f"{len(missing)} result images have no descriptors in the database "
                f"descriptors, such as {missing[0]!r}; give the descriptors of the "
                "images the index was built from"
            )
        row = query_rows[result.query]
        candidates = np.array([database_rows[name] for name in result.names])
        ranking, inliers = spatial_rerank(
            queries.keypoints_of(row),
            queries[row],
            candidates,
            database,
            depth=depth,
            matching=matching,
            model=model,
            ratio=ratio,
            reprojection_threshold=reprojection_threshold,
            min_inliers=min_inliers,
            max_keypoints=max_keypoints,
            n_jobs=n_jobs,
        )
        order = _positions_of(candidates, ranking)
        reranked.append(
            dataclasses.replace(
                result,
                names=tuple(result.names[position] for position in order),
                scores=result.scores[order],
                rows=result.rows[order],
                inliers=inliers,
            )
        )
    record = dict(results.record)
    record["spatial_verification"] = {
        "depth": depth,
        "matching": matching,
        "model": model,
        "ratio": ratio,
        "reprojection_threshold": (
            DEFAULT_THRESHOLDS.get(model)
            if reprojection_threshold is None
            else reprojection_threshold
        ),
        "min_inliers": min_inliers,
        "max_keypoints": max_keypoints,
    }
    return SearchResults(reranked, record, list(results.notes))


def _rows_by_name(sets: DescriptorSets, what: str) -> dict[str, int]:
    rows = {name: row for row, name in enumerate(sets.names)}
    if len(rows) != len(sets.names):
        raise VladError(f"the {what} name some image twice")
    return rows


def _positions_of(candidates: np.ndarray, ranking: np.ndarray) -> np.ndarray:
    """Where each re-ranked row was among the candidates (rows are distinct)."""
    position = {int(row): place for place, row in enumerate(candidates)}
    return np.array([position[int(row)] for row in ranking], dtype=np.int64)
