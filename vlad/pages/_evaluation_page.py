"""The evaluation report: the metrics' table overall and by tag, the
precision-recall curve, mAP by tag, and the queries of lowest AP with their
best hits, as one HTML file that opens from disk."""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from vlad.core._files import atomic_write
from vlad.core._pool import Progress
from vlad.errors import VladError, VladTypeError
from vlad.evaluation._curves import RECALL_LEVELS, mean_interpolated_precision
from vlad.evaluation._ground_truth import ground_truth_from_mapping
from vlad.evaluation._scoring import Evaluation, QueryEvaluation
from vlad.images._files import MAX_PIXELS, check_max_pixels
from vlad.pages._cards import hit_card, query_card, relevance
from vlad.pages._charts import bar_chart, line_chart
from vlad.pages._html import PAGE_TITLES, escape, html_page, percent
from vlad.pages._search_page import PageReport, page_report
from vlad.pages._thumbnails import (
    ImageFolders,
    Thumbnail,
    check_page_path,
    make_files,
    make_thumbnail,
    page_folder,
    prune_folder,
    require_pillow,
    sibling_files,
)

__all__ = ["N_HITS", "N_WORST", "write_evaluation_page"]

#: Queries of lowest AP the report shows, and hits of each.
N_WORST = 20
N_HITS = 5
#: Relevant images found beyond the shown hits that a worst query's row shows
#: as pictures (the rest are named, and the missed ones always shown).
N_EXPECTED = 3


def write_evaluation_page(
    path: str | os.PathLike,
    evaluation: Evaluation,
    rankings: Mapping[str, Sequence[str]],
    ground_truth: Mapping,
    *,
    images: str | os.PathLike | Sequence | None = None,
    query_images: str | os.PathLike | Sequence | None = None,
    n_worst: int = N_WORST,
    n_hits: int = N_HITS,
    n_jobs: int | None = None,
    progress: Progress | None = None,
    max_pixels: int = MAX_PIXELS,
    overwrite: bool = True,
) -> PageReport:
    """Write the evaluation report to ``path`` (atomically), its thumbnails in
    the folder beside it.

    Parameters
    ----------
    path : path-like
        The page, ``.html``; replaced if it exists.
    evaluation : Evaluation
        :func:`vlad.evaluation.evaluate` of ``rankings`` and ``ground_truth``.
    rankings : mapping of str to sequence of str
        Query name to database names, best first (for the worst queries' hits).
    ground_truth : mapping
        As :func:`vlad.evaluation.evaluate` takes it (to label the hits).
    images, query_images : path-like or sequence of path-like, optional
        Database and query image folders and files, as in
        :func:`vlad.pages.write_search_page`.
    n_worst : int, default=20
        Queries of lowest AP shown with their hits.
    n_hits : int, default=5
        Hits shown of each.
    n_jobs, progress, max_pixels, overwrite
        As in :func:`vlad.pages.write_search_page`.

    Returns
    -------
    PageReport
        ``n_queries`` counts the worst queries shown.

    Raises
    ------
    ImportError
        Pillow is not installed (the ``html`` extra).
    ValueError
        A malformed ground truth, image folders with no images, or counts
        below 1.
    """
    path = check_page_path(path, overwrite=overwrite)
    if not isinstance(evaluation, Evaluation):
        raise VladTypeError(
            f"evaluation must be an Evaluation; got {type(evaluation).__name__}"
        )
    for value, name in ((n_worst, "n_worst"), (n_hits, "n_hits")):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise VladError(f"{name} must be an int >= 1; got {value!r}")
    max_pixels = check_max_pixels(max_pixels)
    require_pillow()
    truth = ground_truth_from_mapping(ground_truth, "ground_truth")
    worst = _worst(evaluation, n_worst)
    database, queries = ImageFolders(images), ImageFolders(query_images)
    rows = [_row_images(query, rankings, truth, n_hits) for query in worst]
    sources = [queries.locate(query.query) for query in worst]
    sources += [database.locate(entry[0]) for shown, _ in rows for entry in shown]
    distinct = list(dict.fromkeys(sources))
    folder = page_folder(path) / "thumbnails"
    if any(source is not None for source in distinct):
        folder.mkdir(parents=True, exist_ok=True)
    elsewhere = sibling_files(path, "thumbnails")
    jobs = [
        functools.partial(
            make_thumbnail,
            source,
            folder,
            path.parent,
            max_pixels=max_pixels,
            elsewhere=elsewhere,
        )
        for source in distinct
    ]
    made = make_files(jobs, n_jobs=n_jobs, progress=progress)
    thumbnails: dict[Path | None, Thumbnail] = dict(zip(distinct, made, strict=True))
    parts = [
        "<h1>Evaluation</h1>",
        _summary(evaluation),
        "<h2>Metrics</h2>",
        _table(evaluation),
        "<h2>Precision and recall</h2>",
        _charts(evaluation),
        "<h2>The query of lowest AP</h2>"
        if len(worst) == 1
        else f"<h2>The {len(worst)} queries of lowest AP</h2>",
    ]
    for query, (shown, named) in zip(worst, rows, strict=True):
        n_shown = min(n_hits, len(rankings.get(query.query, ())))
        parts.append(
            _worst_row(query, shown, named, n_shown, thumbnails, queries, database)
        )
    page = html_page(PAGE_TITLES["evaluation report"], "\n".join(parts))
    with atomic_write(path, overwrite=overwrite) as handle:
        handle.write(page.encode("utf-8"))
    prune_folder(
        folder, [Path(thumb.relative).name for thumb in made if thumb.relative]
    )
    return page_report(path, len(worst), len(evaluation.queries), thumbnails)


def _worst(evaluation: Evaluation, n_worst: int) -> list[QueryEvaluation]:
    """The counted queries of lowest AP, lowest first (ties: the ground
    truth's order)."""
    counted = [query for query in evaluation.queries if query.counted]
    return sorted(counted, key=lambda query: query.scores["AP"])[:n_worst]


def _row_images(
    query: QueryEvaluation, rankings: Mapping, truth: Mapping, n_hits: int
) -> tuple[list[tuple[str, str | None, int | None, str | None]], list[str]]:
    """``(name, label, rank, note)`` of the hits a worst query's row shows,
    then of its relevant images beyond them: the first :data:`N_EXPECTED`
    that the ranking holds and every one it misses; and the text of the
    others (``"a.jpg (rank 12)"``)."""
    ranking = list(rankings.get(query.query, ()))
    expected = truth.get(query.query)
    shown = [
        (name, relevance(name, expected), rank, None)
        for rank, name in enumerate(ranking[:n_hits], start=1)
    ]
    place = {}
    for rank, name in enumerate(ranking, start=1):
        place.setdefault(name, rank)
    beyond = [name for name in expected.relevant if name not in ranking[:n_hits]]
    found = sorted((place[name], name) for name in beyond if name in place)
    for rank, name in found[:N_EXPECTED]:
        shown.append((name, "relevant", rank, None))
    shown.extend(
        (name, "relevant", None, "not in the ranking")
        for name in beyond
        if name not in place
    )
    named = [f"{name} (rank {rank})" for rank, name in found[N_EXPECTED:]]
    return shown, named


def _worst_row(
    query: QueryEvaluation,
    shown: list[tuple[str, str | None, int | None, str | None]],
    named: list[str],
    n_hits: int,
    thumbnails: dict,
    queries: ImageFolders,
    database: ImageFolders,
) -> str:
    card = query_card(
        thumbnails[queries.locate(query.query)].html(query.query),
        query.query,
        average_precision=query.scores["AP"],
        n_relevant=query.n_relevant,
        n_found=len(query.ranks),
        reason=None if query.in_results else "not in the results",
        tags=query.tags,
    )
    cards = [
        hit_card(
            thumbnails[database.locate(name)].html(name), name, rank, label, note=note
        )
        for name, label, rank, note in shown
    ]
    hits = "".join(cards[:n_hits])
    expected = "".join(cards[n_hits:])
    if expected:
        heading = f"Relevant beyond the first {n_hits}:" if n_hits else "Relevant:"
        more = (
            f'<p class="facts">+{len(named)} more: {escape(", ".join(named))}</p>'
            if named
            else ""
        )
        expected = (
            f'<div class="expected"><p class="facts">{heading}</p>'
            f'<ol class="hits">{expected}</ol>{more}</div>'
        )
    return (
        f'<section class="row">{card}<ol class="hits">{hits}</ol>{expected}</section>'
    )


def _summary(evaluation: Evaluation) -> str:
    record = evaluation.record
    n_queries = len(evaluation.queries)
    facts = [
        f"{n_queries} {'query' if n_queries == 1 else 'queries'} in the ground truth"
    ]
    mean = evaluation.mean
    facts.append(f"{mean['n_queries']} with relevant images, in the means")
    if record.get("results"):
        facts.append(f"results {escape(record['results'])}")
    if record.get("ground_truth"):
        kind = record.get("ground_truth_kind")
        facts.append(
            f"ground truth {escape(record['ground_truth'])}"
            + (f" ({escape(kind)})" if kind else "")
        )
    lines = [f'<p class="summary">{", ".join(facts)}.</p>']
    lines.extend(f'<p class="notes">{escape(note)}</p>' for note in evaluation.notes)
    return "\n".join(lines)


def _table(evaluation: Evaluation) -> str:
    """The means overall and by tag, in percent."""
    names = evaluation.metric_names
    header = "".join(f"<th>{escape(name)}</th>" for name in ["", "queries", *names])
    rows = [("all", evaluation.mean), *evaluation.by_tag.items()]
    body = []
    for label, values in rows:
        cells = [f"<td>{escape(label)}</td>", f"<td>{values['n_queries']}</td>"]
        cells += [f"<td>{percent(values[name])}</td>" for name in names]
        body.append(f"<tr>{''.join(cells)}</tr>")
    return (
        f'<table class="metrics"><thead><tr>{header}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table>"
        '<p class="summary">Percent; AP by the trapezoid rule (revisitop), junk '
        "images removed from each ranking.</p>"
    )


def _charts(evaluation: Evaluation) -> str:
    curve = mean_interpolated_precision(evaluation.queries)
    charts = [
        line_chart(
            [("all", RECALL_LEVELS, curve.tolist())],
            title="Interpolated precision at each recall, mean over queries",
            x_label="recall",
            y_label="precision",
        )
    ]
    by_tag = evaluation.by_tag
    if by_tag:
        charts.append(
            bar_chart(
                [(tag, values["mAP"]) for tag, values in by_tag.items()],
                title="mAP by tag",
            )
        )
    else:
        charts.append('<p class="summary">The ground truth gives no tags.</p>')
    if all(math.isnan(value) for value in curve):
        charts[0] = '<p class="summary">No query has relevant images.</p>'
    return f'<div class="charts">{"".join(charts)}</div>'
