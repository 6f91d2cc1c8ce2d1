"""The ``--html`` page of ``vlad search`` and ``vlad evaluate``: its options,
passed on as one ``page``, and writing it with a progress bar and a summary."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import click

from vlad.cli._reporting import count, library_errors, progress_bar
from vlad.core._descriptors import DescriptorSets
from vlad.evaluation._files import read_any_ground_truth
from vlad.evaluation._scoring import Evaluation
from vlad.images._files import MAX_PIXELS, is_image_path
from vlad.pages._evaluation_page import write_evaluation_page
from vlad.pages._search_page import DEFAULT_LIMIT, PageReport, write_search_page
from vlad.pages._thumbnails import require_pillow
from vlad.search._results import SearchResults, read_rankings

__all__ = [
    "PageOptions",
    "page_options",
    "write_evaluation_report",
    "write_results_page",
]

logger = logging.getLogger("vlad.cli")

_HTML_SUFFIXES = (".html", ".htm")
#: Images without a thumbnail named one a line at most; the page shows the rest.
_LISTED = 5


@dataclass(frozen=True)
class PageOptions:
    """What the page options asked for; ``html`` is None for no page."""

    html: Path | None
    images: tuple[Path, ...]
    query_images: tuple[Path, ...]
    limit: int | None = None
    ground_truth: Path | None = None


def _check_html(ctx, param, value: Path | None) -> Path | None:
    if value is not None and value.suffix.lower() not in _HTML_SUFFIXES:
        raise click.BadParameter(f"must end in .html; got {str(value)!r}")
    return value


def page_options(search: bool) -> Callable[[Callable], Callable]:
    """``--html``, ``--images`` and ``--query-images`` (and for ``vlad
    search``, ``--html-limit`` and ``--ground-truth``), passed on as one
    ``page`` (:class:`PageOptions`)."""
    images = "The index's image folders and files, as given to vlad encode"
    options = [
        click.option(
            "--html",
            type=click.Path(dir_okay=False, path_type=Path),
            callback=_check_html,
            help="Also write a page to look at: "
            + (
                "each query's thumbnail and its ranked images"
                if search
                else "the metrics, a precision-recall curve, mAP by tag and "
                "the 20 queries of lowest AP with their best 5 images"
            )
            + ". Thumbnails go in the folder beside it (PAGE_files/).",
        ),
        click.option(
            "--images",
            multiple=True,
            type=click.Path(exists=True, path_type=Path),
            help=f"{images}, for the page's thumbnails; repeat for several.",
        ),
        click.option(
            "--query-images",
            multiple=True,
            type=click.Path(exists=True, path_type=Path),
            help="The queries' image folders and files, for the page's thumbnails"
            + ("; default: QUERY... when they are images." if search else "."),
        ),
    ]
    if search:
        options += [
            click.option(
                "--html-limit",
                type=click.IntRange(min=1),
                default=DEFAULT_LIMIT,
                show_default=True,
                help="Queries the page shows at most: with --ground-truth, those "
                "of lowest AP; else the first.",
            ),
            click.option(
                "-g",
                "--ground-truth",
                type=click.Path(exists=True, dir_okay=False, path_type=Path),
                help="Ground truth JSON (as vlad evaluate reads it): the page "
                "labels each image relevant, not relevant or junk and shows "
                "each query's AP, and sorts by it.",
            ),
        ]

    def decorator(command: Callable) -> Callable:
        @functools.wraps(command)
        def wrapper(*args, html, images, query_images, **kwargs):
            limit = kwargs.pop("html_limit", None)
            truth = kwargs.pop("ground_truth") if search else None
            given = [
                name
                for name, value in (
                    ("--images", images),
                    ("--query-images", query_images),
                    ("--ground-truth", truth),
                )
                if value
            ]
            if html is None and given:
                raise click.UsageError(f"{given[0]} is for the page: give --html too")
            if html is not None:
                # Before any work: a missing Pillow is said at once.
                with library_errors():
                    require_pillow()
            page = PageOptions(html, images, query_images, limit, truth)
            return command(*args, page=page, **kwargs)

        for option in reversed(options):
            wrapper = option(wrapper)
        return wrapper

    return decorator


def write_results_page(
    page: PageOptions,
    results: SearchResults,
    queries: tuple[Path, ...],
    descriptor_sets: tuple[DescriptorSets, DescriptorSets] | None,
    n_jobs: int | None,
    verbosity: int,
    overwrite: bool,
    max_pixels: int = MAX_PIXELS,
) -> PageReport:
    """``vlad search --html``: the search page, its images made with a
    progress bar (none decoded beyond ``max_pixels``), and a line saying what
    it shows."""
    query_images = page.query_images or tuple(
        path for path in queries if path.is_dir() or is_image_path(path)
    )
    if not page.images:
        logger.warning(
            "no --images given: the page shows the index's images as placeholders"
        )
    with progress_bar(verbosity, "Making the page's images") as progress:
        report = write_search_page(
            page.html,
            results,
            images=page.images,
            query_images=query_images,
            ground_truth=page.ground_truth,
            limit=page.limit,
            descriptor_sets=descriptor_sets,
            n_jobs=n_jobs,
            progress=progress,
            overwrite=overwrite,
            max_pixels=max_pixels,
        )
    _log_page(report, "query", "queries")
    return report


def write_evaluation_report(
    page: PageOptions,
    evaluation: Evaluation,
    results: Path,
    ground_truth: Path,
    *,
    protocol: str | None,
    holidays: bool,
    verbosity: int,
    overwrite: bool,
) -> PageReport:
    """``vlad evaluate --html``: the evaluation report, its thumbnails made
    with a progress bar, and a line saying where it went."""
    with progress_bar(verbosity, "Making the report's thumbnails") as progress:
        report = write_evaluation_page(
            page.html,
            evaluation,
            read_rankings(results),
            read_any_ground_truth(ground_truth, protocol=protocol, holidays=holidays),
            images=page.images,
            query_images=page.query_images,
            progress=progress,
            overwrite=overwrite,
        )
    _log_page(report, "worst query", "worst queries")
    return report


def _log_page(report: PageReport, noun: str, plural: str) -> None:
    for source, problem in report.unreadable[:_LISTED]:
        logger.warning("no thumbnail of %s: %s", source, problem)
    if len(report.unreadable) > _LISTED:
        logger.warning(
            "no thumbnail of %s more images (the page says why for each)",
            len(report.unreadable) - _LISTED,
        )
    shown = count(report.n_queries, noun, plural)
    if report.n_queries < report.n_total and noun == "query":
        shown += f" of {report.n_total}"
    logger.info(
        "wrote a page of %s to %s (%s in %s: %d made, %d reused%s)",
        shown,
        report.path,
        count(report.n_thumbnails, "thumbnail"),
        report.folder,
        report.n_thumbnails - report.n_reused,
        report.n_reused,
        f", {report.n_placeholders} missing" if report.n_placeholders else "",
    )
