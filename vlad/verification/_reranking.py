"""Spatial re-ranking of search results: verify each query's top images by
geometry and move the verified ones first."""

from __future__ import annotations

import dataclasses

import numpy as np

from vlad.core._deprecation import renamed_keyword
from vlad.core._descriptors import DescriptorSets
from vlad.core._parameters import (
    DEPTH,
    GEOMETRY,
    INLIER_THRESHOLD,
    MATCHING,
    MIN_INLIERS,
    N_JOBS,
    VERIFY_KEYPOINTS,
)
from vlad.errors import VladError
from vlad.search._results import SearchResults
from vlad.verification._geometry import fitter
from vlad.verification._matching import matcher
from vlad.verification._presets import (
    DEFAULT_DEPTH,
    VerificationSettings,
    verification_preset,
)
from vlad.verification._spatial import DEFAULT_THRESHOLDS, spatial_rerank

__all__ = ["DEFAULT_DEPTH", "check_verification", "rerank_spatially"]


@renamed_keyword("max_keypoints", "verify_keypoints", since="0.5")
def rerank_spatially(
    results: SearchResults,
    queries: DescriptorSets,
    database: DescriptorSets,
    *,
    depth: int | None = None,
    matching: str = MATCHING.default,
    model: str = GEOMETRY.default,
    ratio: float | None = None,
    reprojection_threshold: float | None = INLIER_THRESHOLD.default,
    min_inliers: int | None = None,
    verify_keypoints: int | None = None,
    preset: str | None = None,
    n_jobs: int | None = N_JOBS.default,
) -> SearchResults:
    """Re-rank every query's first ``depth`` images by inliers of a geometric
    model.

    Queries and database images are matched by name to their descriptor sets
    (which must hold keypoint positions: ``vlad extract`` keeps them). Each
    result gains ``inliers`` (-1 where not verified); its scores stay the
    index's similarities.

    ``depth``, ``ratio``, ``min_inliers`` and ``verify_keypoints`` suit one kind
    of descriptors and not another: each left None is taken from the
    preset of :data:`vlad.verification.VERIFICATION_PRESETS` that suits the
    descriptors, read from their record (:func:`vlad.verification.verification_preset`):
    SIFT's (vlad's defaults) or ALIKED's, say. Values given are kept.

    Parameters
    ----------
    results : SearchResults
        From :meth:`vlad.search.VectorIndex.search`.
    queries : DescriptorSets
        The queries' descriptors, named as the results' queries.
    database : DescriptorSets
        The database images' descriptors, named as the index's images.
    depth : int, optional
        Images of each query's ranking verified (SIFT's preset: 20).
    matching, model, reprojection_threshold, n_jobs
        As in :func:`vlad.verification.spatial_rerank`.
    ratio : float, optional
        Lowe's ratio (SIFT's preset: 0.8).
    min_inliers : int, optional
        Inliers that verify an image (SIFT's preset: 12).
    verify_keypoints : int, optional
        Each image's largest (strongest) keypoints matched, or 0 for all
        (SIFT's preset: 1,024). Formerly ``max_keypoints``, a name that still
        works, with a ``DeprecationWarning``, until the next release.
    preset : str, optional
        A key of :data:`vlad.verification.VERIFICATION_PRESETS` to use whatever the
        descriptors' record says.

    Returns
    -------
    SearchResults
        Its record's ``spatial_verification`` holds the settings used, the
        preset (``name``, ``reason``, ``known``) and, for each of
        ``depth``, ``ratio``, ``min_inliers`` and ``max_keypoints``, where its
        value came from (``settings_from``: ``"given"`` or the preset's name).
        When the descriptors' kind has no preset of its own and a setting came
        from the defaults, its notes say so.

    Raises
    ------
    ValueError
        A query or a result image with no descriptor set of its name, queries
        and database descriptors of two extractors, or an unknown preset.
    """
    chosen = verification_preset(_kind_record(queries, database), preset)
    # Keyed as the results' record and the presets name them.
    given = {
        "depth": depth,
        "ratio": ratio,
        "min_inliers": min_inliers,
        "max_keypoints": verify_keypoints,
    }
    preset_values = chosen.settings.record()
    settings = {
        key: preset_values[key] if value is None else value
        for key, value in given.items()
    }
    # Checked before any work.
    settings = _checked(settings, matching, model, reprojection_threshold)
    if settings["max_keypoints"] == 0:
        settings["max_keypoints"] = None
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
            matching=matching,
            model=model,
            reprojection_threshold=reprojection_threshold,
            n_jobs=n_jobs,
            depth=settings["depth"],
            ratio=settings["ratio"],
            min_inliers=settings["min_inliers"],
            verify_keypoints=settings["max_keypoints"],
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
        "depth": settings["depth"],
        "matching": matching,
        "model": model,
        "ratio": settings["ratio"],
        "reprojection_threshold": (
            DEFAULT_THRESHOLDS.get(model)
            if reprojection_threshold is None
            else reprojection_threshold
        ),
        "min_inliers": settings["min_inliers"],
        "max_keypoints": settings["max_keypoints"],
        "preset": chosen.record(),
        "settings_from": {
            key: chosen.name if value is None else "given"
            for key, value in given.items()
        },
    }
    notes = list(results.notes)
    defaulted = [
        "verify_keypoints" if key == "max_keypoints" else key
        for key, value in given.items()
        if value is None
    ]
    if not chosen.known and defaulted:
        notes.append(
            f"spatial verification took {', '.join(defaulted)} from the defaults, "
            f"measured on SIFT ({_describe(chosen.settings)}): {chosen.reason}; "
            "give them, or a verification preset, for these descriptors"
        )
    return SearchResults(reranked, record, notes)


def check_verification(
    *,
    depth: int | None = None,
    matching: str = MATCHING.default,
    model: str = GEOMETRY.default,
    ratio: float | None = None,
    reprojection_threshold: float | None = INLIER_THRESHOLD.default,
    min_inliers: int | None = None,
    verify_keypoints: int | None = None,
    preset: str | None = None,
) -> None:
    """Check settings of :func:`rerank_spatially` before any work.

    A search that verifies its results reads descriptors and searches the
    index first: this refuses a bad setting before all that, with the message
    :func:`rerank_spatially` would give (its specification's). Settings left
    None suit the descriptors and are not checked here.

    Parameters
    ----------
    depth, matching, model, ratio, reprojection_threshold, min_inliers
        As in :func:`rerank_spatially`.
    verify_keypoints, preset
        As in :func:`rerank_spatially`.

    Raises
    ------
    ParameterError
        A setting :func:`rerank_spatially` refuses: the message names it and
        echoes the value.
    ParameterTypeError
        ``ratio`` or ``reprojection_threshold`` is not a number.

    Examples
    --------
    >>> from vlad.verification import check_verification
    >>> check_verification(ratio=0.9, min_inliers=12, verify_keypoints=0)
    >>> check_verification(ratio=1.5)
    Traceback (most recent call last):
    ...
    vlad.errors.ParameterError: ratio must be a number in (0, 1]; got 1.5
    """
    settings = {
        "depth": depth,
        "ratio": ratio,
        "min_inliers": min_inliers,
        "max_keypoints": verify_keypoints,
    }
    _checked(settings, matching, model, reprojection_threshold)
    if preset is not None:
        verification_preset({}, preset)


#: The verification settings that are numbers checked by their specification,
#: keyed as the results' record names them.
_NUMBERS = {
    "depth": DEPTH,
    "min_inliers": MIN_INLIERS,
    "max_keypoints": VERIFY_KEYPOINTS,
}


def _checked(settings: dict, matching: str, model: str, reprojection_threshold) -> dict:
    """``settings`` (``depth``, ``ratio``, ``min_inliers``,
    ``max_keypoints``; None where the preset decides) with its numbers checked
    and made plain Python values, once the matching (with the ratio) and the
    model (with its threshold) are checked too."""
    checked = {
        **settings,
        **{
            key: None if settings[key] is None else specification.check(settings[key])
            for key, specification in _NUMBERS.items()
        },
    }
    ratio = settings["ratio"]
    matcher(matching, *(() if ratio is None else (ratio,)))
    fitter(model, reprojection_threshold)
    return checked


def _kind_record(queries: DescriptorSets, database: DescriptorSets) -> dict:
    """The record that says what the descriptors are: the database's, or the
    queries' where the database's names no extractor; ``ValueError`` if both
    name one and they differ."""
    records = [getattr(sets, "metadata", None) or {} for sets in (queries, database)]
    extractors = [record.get("extractor") for record in records]
    if None not in extractors and extractors[0] != extractors[1]:
        raise VladError(
            f"the queries' descriptors are {extractors[0]!r} descriptors but the "
            f"database's are {extractors[1]!r}; verification matches descriptors "
            "of one kind"
        )
    return records[1] if extractors[1] is not None else records[0]


def _describe(settings: VerificationSettings) -> str:
    keypoints = settings.max_keypoints
    return (
        f"ratio {settings.ratio:g}, {settings.min_inliers} inliers, "
        f"{'every' if keypoints is None else f'the {keypoints:,} largest'} "
        f"keypoints, the top {settings.depth}"
    )


def _rows_by_name(sets: DescriptorSets, what: str) -> dict[str, int]:
    rows = {name: row for row, name in enumerate(sets.names)}
    if len(rows) != len(sets.names):
        raise VladError(f"the {what} name some image twice")
    return rows


def _positions_of(candidates: np.ndarray, ranking: np.ndarray) -> np.ndarray:
    """Where each re-ranked row was among the candidates (rows are distinct)."""
    position = {int(row): place for place, row in enumerate(candidates)}
    return np.array([position[int(row)] for row in ranking], dtype=np.int64)
