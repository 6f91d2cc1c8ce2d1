"""The search page: one row per query, its thumbnail and its ranked hits, as
one HTML file that opens from disk.

Each hit shows its rank, name and score, and after spatial re-ranking its
inliers, linked to a picture of them. With a ground truth, each hit is
labelled relevant, not relevant or junk (as text and as a colour) and each
query shows its average precision; a few lines of JavaScript in the page sort
the rows by AP and filter them by name.
"""

from __future__ import annotations

import functools
import hashlib
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from vlad.core._descriptors import DescriptorSets
from vlad.core._files import atomic_write
from vlad.core._pool import Progress
from vlad.errors import VladError, VladTypeError
from vlad.evaluation._ground_truth import (
    QueryTruth,
    ground_truth_from_mapping,
    load_ground_truth,
)
from vlad.evaluation._scoring import evaluate
from vlad.images._files import MAX_PIXELS, ImageReadError, check_max_pixels
from vlad.pages._cards import hit_card, query_card, relevance
from vlad.pages._html import PAGE_TITLES, escape, html_page, percent
from vlad.pages._matches import draw_matches, encode_picture, read_colour_image
from vlad.pages._thumbnails import (
    ImageFolders,
    Thumbnail,
    check_page_path,
    make_files,
    make_thumbnail,
    page_folder,
    prune_folder,
    require_pillow,
    reuse_file,
    sibling_files,
    source_key,
    write_file_atomically,
)
from vlad.search._results import QueryResult, SearchResults
from vlad.verification._spatial import MIN_INLIERS, inlier_matches

__all__ = ["DEFAULT_LIMIT", "MATCHES_HEIGHT", "PageReport", "write_search_page"]

#: Queries a page shows at most unless told otherwise: about 4 MB of HTML
#: at 10 hits each.
DEFAULT_LIMIT = 1000
#: Height in pixels of the pictures of inliers the page links to.
MATCHES_HEIGHT = 360

#: Sorting and filtering the rows; no other script runs in the page.
SCRIPT = """
(() => {
  const list = document.getElementById("rows");
  const rows = Array.from(list.children);
  const sort = document.getElementById("sort");
  const filter = document.getElementById("filter");
  const shown = document.getElementById("shown");
  const names = rows.map((row) => Array.from(
    row.querySelectorAll(".name"), (name) => name.textContent.toLowerCase()
  ).join("\\n"));
  const order = (row) => Number(row.dataset.order);
  const ap = (row, missing) => row.dataset.ap === "" ? missing : Number(row.dataset.ap);
  const compare = {
    order: (a, b) => order(a) - order(b),
    worst: (a, b) => ap(a, Infinity) - ap(b, Infinity) || order(a) - order(b),
    best: (a, b) => ap(b, -Infinity) - ap(a, -Infinity) || order(a) - order(b),
  };
  function update() {
    list.append(...rows.slice().sort(compare[sort ? sort.value : "order"]));
    const needle = filter.value.trim().toLowerCase();
    let count = 0;
    rows.forEach((row, index) => {
      row.hidden = needle !== "" && !names[index].includes(needle);
      count += row.hidden ? 0 : 1;
    });
    shown.textContent = `${count} of ${rows.length} queries shown`;
  }
  if (sort) sort.addEventListener("change", update);
  filter.addEventListener("input", update);
  update();
})();
"""


@dataclass(frozen=True)
class PageReport:
    """What a page shows and what making it took.

    Attributes
    ----------
    path : Path
        The page.
    folder : Path
        The folder of its images beside it.
    n_queries : int
        Queries shown.
    n_total : int
        Queries in the results.
    n_thumbnails : int
        Distinct images with a thumbnail.
    n_reused : int
        Of those, thumbnails an earlier run made.
    n_placeholders : int
        Distinct images shown as a placeholder (not found, unreadable).
    n_matches : int
        Pictures of inliers linked.
    unreadable : tuple of (Path, str)
        The images found that have no thumbnail, and why (unreadable, or of
        more pixels than the limit).
    """

    path: Path
    folder: Path
    n_queries: int
    n_total: int
    n_thumbnails: int
    n_reused: int
    n_placeholders: int
    n_matches: int = 0
    unreadable: tuple[tuple[Path, str], ...] = ()


def page_report(
    path: Path,
    n_queries: int,
    n_total: int,
    thumbnails: Mapping[Path | None, Thumbnail],
    n_matches: int = 0,
) -> PageReport:
    """The :class:`PageReport` of a page written to ``path`` with
    ``thumbnails`` (by their images)."""
    return PageReport(
        path,
        page_folder(path),
        n_queries,
        n_total,
        sum(1 for thumb in thumbnails.values() if thumb.relative),
        sum(1 for thumb in thumbnails.values() if thumb.reused),
        sum(1 for thumb in thumbnails.values() if thumb.relative is None),
        n_matches,
        tuple(
            (source, thumb.problem.removeprefix("cannot read the image: "))
            for source, thumb in thumbnails.items()
            if source is not None and thumb.relative is None and thumb.problem
        ),
    )


def write_search_page(
    path: str | os.PathLike,
    results: SearchResults,
    *,
    images: str | os.PathLike | Sequence | None = None,
    query_images: str | os.PathLike | Sequence | None = None,
    ground_truth: Mapping | str | os.PathLike | None = None,
    limit: int | None = DEFAULT_LIMIT,
    descriptor_sets: tuple[DescriptorSets, DescriptorSets] | None = None,
    n_jobs: int | None = None,
    progress: Progress | None = None,
    max_pixels: int = MAX_PIXELS,
    overwrite: bool = True,
) -> PageReport:
    """Write the search page of ``results`` to ``path`` (atomically), its
    thumbnails in the folder beside it (see :mod:`vlad.pages._thumbnails`).

    Parameters
    ----------
    path : path-like
        The page, ``.html``; replaced if it exists.
    results : SearchResults
        From :meth:`vlad.search.VectorIndex.search` (and re-ranking).
    images : path-like or sequence of path-like, optional
        The index's image folders and files, as given to ``vlad encode``:
        the database images are found by name there. Without them, hits
        show a placeholder.
    query_images : path-like or sequence of path-like, optional
        The queries' image folders and files, as given to ``vlad search``.
    ground_truth : mapping or path-like, optional
        As :func:`vlad.evaluation.evaluate` takes it, or a ground-truth JSON
        file (:func:`vlad.evaluation.load_ground_truth`): labels each hit and
        gives each query its AP.
    limit : int or None, default=DEFAULT_LIMIT
        Queries shown at most: with a ground truth, those of lowest AP; else
        the first ones. They keep the results' order. None shows all.
    descriptor_sets : (DescriptorSets, DescriptorSets), optional
        The queries' and the database's descriptors with keypoints, as
        spatial re-ranking took them: the page then links each verified hit
        (:data:`~vlad.verification._spatial.MIN_INLIERS` inliers or the re-ranking's
        threshold) to a picture of its inliers.
    n_jobs : int or None, default=None
        Images made at once, on threads; None or -1 for every core.
    progress : callable, optional
        Called as ``progress(n_done, n_total)`` after each image made.
    max_pixels : int, default=MAX_PIXELS
        Images whose header declares more pixels are not decoded, as
        :func:`vlad.images.read_image` refuses them: they show a placeholder
        and :attr:`PageReport.unreadable` lists them. 0 for no limit.
    overwrite : bool, default=True
        Replace a page that exists. When False, one that exists is refused
        before anything is made, and one that another process writes
        meanwhile is never replaced (``FileExistsError``).

    Returns
    -------
    PageReport

    Raises
    ------
    ImportError
        Pillow is not installed (the ``html`` extra).
    ValueError
        A bad limit, a malformed ground truth or one that names none of the
        queries, or image folders with no images.
    """
    path = check_page_path(path, overwrite=overwrite)
    if not isinstance(results, SearchResults):
        raise VladTypeError(
            f"results must be a SearchResults; got {type(results).__name__}"
        )
    limit = _check_limit(limit)
    max_pixels = check_max_pixels(max_pixels)
    require_pillow()
    truth, scores = _judge(results, ground_truth)
    shown = _shown_queries(results.queries, scores, limit)
    database, queries = ImageFolders(images), ImageFolders(query_images)
    folder = page_folder(path)
    sources = [queries.locate(result.query) for result in shown]
    sources += [database.locate(name) for result in shown for name in result.names]
    distinct = list(dict.fromkeys(sources))
    thumbnail_folder = folder / "thumbnails"
    matches_folder = folder / "matches"
    elsewhere = sibling_files(path, "thumbnails")
    jobs = [
        functools.partial(
            make_thumbnail,
            source,
            thumbnail_folder,
            path.parent,
            max_pixels=max_pixels,
            elsewhere=elsewhere,
        )
        for source in distinct
    ]
    wanted = _matches_jobs(
        shown,
        results.record,
        descriptor_sets,
        (queries, database),
        matches_folder,
        path,
        max_pixels,
    )
    if any(source is not None for source in distinct) or wanted:
        thumbnail_folder.mkdir(parents=True, exist_ok=True)
    if wanted:
        matches_folder.mkdir(exist_ok=True)
    made = make_files(
        jobs + [job for _, job in wanted], n_jobs=n_jobs, progress=progress
    )
    thumbnails: dict[Path | None, Thumbnail] = dict(
        zip(distinct, made[: len(distinct)], strict=True)
    )
    matches = {
        key: relative
        for (key, _), relative in zip(wanted, made[len(distinct) :], strict=True)
        if relative is not None
    }
    body = _body(results, shown, truth, scores, thumbnails, matches, queries, database)
    with atomic_write(path, overwrite=overwrite) as handle:
        page = html_page(PAGE_TITLES["search page"], body, SCRIPT)
        handle.write(page.encode("utf-8"))
    kept = [
        Path(thumb.relative).name for thumb in thumbnails.values() if thumb.relative
    ]
    prune_folder(thumbnail_folder, kept)
    prune_folder(matches_folder, [Path(relative).name for relative in matches.values()])
    return page_report(path, len(shown), len(results.queries), thumbnails, len(matches))


def _check_limit(limit: int | None) -> int | None:
    if limit is None:
        return None
    if isinstance(limit, bool) or not isinstance(limit, (int, np.integer)):
        raise VladTypeError(f"limit must be None or an int >= 1; got {limit!r}")
    if limit < 1:
        raise VladError(f"limit must be None or an int >= 1; got {limit!r}")
    return int(limit)


def _judge(
    results: SearchResults, ground_truth: Mapping | str | os.PathLike | None
) -> tuple[dict[str, QueryTruth], dict]:
    """The ground truth, and each of its queries' evaluation by name."""
    if ground_truth is None:
        return {}, {}
    if isinstance(ground_truth, (str, os.PathLike)):
        truth = load_ground_truth(ground_truth)
    else:
        truth = ground_truth_from_mapping(ground_truth, "ground_truth")
    evaluation = evaluate(results.rankings(), truth)
    return truth, {query.query: query for query in evaluation.queries}


def _ap(scores: dict, query: str) -> float:
    """The query's AP; NaN when the ground truth gives it none."""
    evaluated = scores.get(query)
    if evaluated is None or not evaluated.counted:
        return math.nan
    return evaluated.scores["AP"]


def _shown_queries(
    queries: list[QueryResult], scores: dict, limit: int | None
) -> list[QueryResult]:
    """The queries a page shows, in the results' order: all within the limit;
    beyond it, those of lowest AP (queries without one last), or the first."""
    if limit is None or len(queries) <= limit:
        return list(queries)
    if not scores:
        return list(queries[:limit])

    def worst_first(place: int) -> tuple[float, int]:
        ap = _ap(scores, queries[place].query)
        return (math.inf if math.isnan(ap) else ap, place)

    chosen = sorted(sorted(range(len(queries)), key=worst_first)[:limit])
    return [queries[place] for place in chosen]


def _matches_jobs(
    shown: list[QueryResult],
    record: dict,
    descriptor_sets: tuple[DescriptorSets, DescriptorSets] | None,
    folders: tuple[ImageFolders, ImageFolders],
    folder: Path,
    page: Path,
    max_pixels: int,
) -> list[tuple[tuple[str, str], functools.partial]]:
    """``((query, image), job)`` for each verified hit whose pair of image
    files is known: the job makes the picture of its inliers (or reuses it,
    from this page's folder or another's beside it)."""
    if descriptor_sets is None:
        return []
    queries, database = folders
    elsewhere = sibling_files(page, "matches")
    query_sets, database_sets = descriptor_sets
    recorded = record.get("spatial_verification") or {}
    min_inliers = recorded.get("min_inliers", MIN_INLIERS)
    settings = {
        key: recorded[key]
        for key in (
            "matching",
            "model",
            "ratio",
            "reprojection_threshold",
            "max_keypoints",
        )
        if key in recorded
    }
    if recorded and "matching" not in recorded:
        # Results of vlad 0.4, which matched every keypoint by the ratio test.
        settings.update(matching="ratio", max_keypoints=None)
    if "max_keypoints" in settings:
        # The results' record keeps the keypoint cap under its former name.
        settings["verify_keypoints"] = settings.pop("max_keypoints")
    query_rows = {name: row for row, name in enumerate(query_sets.names)}
    database_rows = {name: row for row, name in enumerate(database_sets.names)}
    wanted = []
    for result in shown:
        query_path = queries.locate(result.query)
        if result.inliers is None or query_path is None:
            continue
        if result.query not in query_rows:
            continue
        query_row = query_rows[result.query]
        for name, inliers in zip(result.names, result.inliers, strict=True):
            image_path = database.locate(name)
            if inliers < min_inliers or image_path is None or name not in database_rows:
                continue
            job = functools.partial(
                _matches_picture,
                query_path,
                image_path,
                (query_sets.keypoints_of(query_row), query_sets[query_row]),
                (
                    database_sets.keypoints_of(database_rows[name]),
                    database_sets[database_rows[name]],
                ),
                settings,
                folder,
                page.parent,
                max_pixels,
                elsewhere,
            )
            wanted.append(((result.query, name), job))
    return wanted


def _matches_picture(
    query_path: Path,
    image_path: Path,
    query_features: tuple[np.ndarray, np.ndarray],
    features: tuple[np.ndarray, np.ndarray],
    settings: dict,
    folder: Path,
    page_parent: Path,
    max_pixels: int,
    elsewhere: dict[str, Path],
) -> str | None:
    """The picture of a hit's inliers in ``folder`` (reused when there or in
    ``elsewhere``); its path relative to the page's folder, or None when an
    image is unreadable."""
    digest = hashlib.sha256()
    try:
        for part in (source_key(query_path), source_key(image_path)):
            digest.update(part.encode())
    except OSError:
        return None
    digest.update(repr(sorted(settings.items())).encode())
    for array in (*query_features, *features):
        digest.update(np.ascontiguousarray(array, dtype=np.float32).tobytes())
    target = folder / f"{digest.hexdigest()[:24]}.jpg"
    relative = target.relative_to(page_parent).as_posix()
    if target.is_file() and target.stat().st_size > 0:
        return relative
    other = elsewhere.get(target.name)
    if other is not None and other.is_file() and other.stat().st_size > 0:
        if reuse_file(other, target):
            return relative
    try:
        pictures = [
            read_colour_image(query_path, max_pixels=max_pixels),
            read_colour_image(image_path, max_pixels=max_pixels),
        ]
    except ImageReadError:
        return None
    pairs = inlier_matches(*query_features, *features, **settings)
    picture = draw_matches(
        *pictures,
        query_features[0][pairs[:, 0], :2],
        features[0][pairs[:, 1], :2],
        max_height=MATCHES_HEIGHT,
    )
    write_file_atomically(target, encode_picture(picture, ".jpg", quality=85))
    return relative


def _body(
    results: SearchResults,
    shown: list[QueryResult],
    truth: dict[str, QueryTruth],
    scores: dict,
    thumbnails: dict[Path | None, Thumbnail],
    matches: dict[tuple[str, str], str],
    queries: ImageFolders,
    database: ImageFolders,
) -> str:
    parts = ["<h1>Search results</h1>", _summary(results, shown, scores)]
    controls = ['<form id="controls" role="search">']
    if scores:
        controls.append(
            '<label>Sort <select id="sort">'
            '<option value="order">in the results\' order</option>'
            '<option value="worst">by AP, worst first</option>'
            '<option value="best">by AP, best first</option></select></label>'
        )
    controls.append(
        '<label>Filter by name <input id="filter" type="search" '
        'autocomplete="off" placeholder="part of a name"></label>'
        '<output id="shown"></output></form>'
    )
    parts.append("".join(controls))
    rows = []
    for order, result in enumerate(shown):
        query_truth = truth.get(result.query)
        evaluated = scores.get(result.query)
        ap = _ap(scores, result.query)
        thumbnail = thumbnails[queries.locate(result.query)]
        query = query_card(
            thumbnail.html(result.query),
            result.query,
            average_precision=None if math.isnan(ap) else ap,
            n_relevant=None if evaluated is None else evaluated.n_relevant,
            n_found=None if evaluated is None else len(evaluated.ranks),
            reason=result.reason,
        )
        hits = []
        for rank, (name, score) in enumerate(
            zip(result.names, result.scores, strict=True), start=1
        ):
            inliers = None if result.inliers is None else int(result.inliers[rank - 1])
            hits.append(
                hit_card(
                    thumbnails[database.locate(name)].html(name),
                    name,
                    rank,
                    relevance(name, query_truth),
                    score=float(score),
                    inliers=inliers,
                    matches=matches.get((result.query, name)),
                )
            )
        data_ap = "" if math.isnan(ap) else f"{ap:.6f}"
        rows.append(
            f'<section class="row" data-order="{order}" data-ap="{data_ap}">'
            f'{query}<ol class="hits">{"".join(hits)}</ol></section>'
        )
    parts.append(f'<main id="rows">{"".join(rows)}</main>')
    return "\n".join(parts)


def _queries(n: int) -> str:
    """``"1 query"``, ``"2 queries"``."""
    return f"{n} {'query' if n == 1 else 'queries'}"


def _summary(results: SearchResults, shown: list[QueryResult], scores: dict) -> str:
    record = results.record
    facts = [_queries(len(results.queries))]
    if "k" in record:
        facts.append(f"the best {escape(record['k'])} images of each")
    index = record.get("index") or {}
    if index.get("factory"):
        facts.append(
            f"index {escape(index['factory'])} of {escape(index.get('n_images'))} "
            "images"
        )
    if record.get("query_expansion"):
        facts.append("query expansion")
    verification = record.get("spatial_verification")
    if verification:
        facts.append(
            f"spatial verification of the first {escape(verification.get('depth'))}"
        )
    counted = [query for query in scores.values() if query.counted]
    if counted:
        mean = math.fsum(query.scores["AP"] for query in counted) / len(counted)
        facts.append(f"mAP {percent(mean)}% over {_queries(len(counted))}")
    lines = [f'<p class="summary">{", ".join(facts)}.</p>']
    if len(shown) < len(results.queries):
        which = "of lowest AP" if scores else "first in the results"
        lines.append(
            f'<p class="summary">Showing {len(shown)} of '
            f"{_queries(len(results.queries))}, those {which}; raise the limit to "
            "show more.</p>"
        )
    lines.extend(f'<p class="notes">{escape(note)}</p>' for note in results.notes)
    return "\n".join(lines)
