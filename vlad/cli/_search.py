"""``vlad search``: the best images of an index for each query."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import click

from vlad.asmk._files import is_asmk_index
from vlad.cli._options import (
    SpecifiedInt,
    deprecated_alias,
    jobs_option,
    overwrite_option,
    preset_defaults,
    spec_option,
    verbosity_options,
    verification_options,
)
from vlad.cli._page_options import PageOptions, page_options, write_results_page
from vlad.cli._reporting import (
    check_outputs,
    count,
    library_errors,
    name_list,
    progress_bar,
    report_skipped,
)
from vlad.core._parameters import (
    DEPTH,
    MIN_INLIERS,
    MULTIPLE_ASSIGNMENT,
    SEARCH_PARAMETERS,
    STOP_FRACTION,
    K,
)
from vlad.formats._names import printable
from vlad.pipeline._search_run import search_index
from vlad.search._results import RESULT_SUFFIXES, SearchResults

__all__ = ["search"]

logger = logging.getLogger("vlad.cli")

#: The parameters of the options that only a re-ranking reads, by re-ranking.
_RERANKING_ONLY = {
    "spatial": (
        "rerank_depth",
        "matching",
        "ratio",
        "model",
        "reprojection_threshold",
        "verify_keypoints",
        "min_inliers",
        "database_descriptors",
    ),
    "qe": ("qe_neighbours", "qe_alpha"),
}


def _check_results_suffix(ctx, param, value: Path | None) -> Path | None:
    if value is not None and value.suffix.lower() not in RESULT_SUFFIXES:
        raise click.BadParameter(
            f"must end in {', '.join(RESULT_SUFFIXES)}; got {str(value)!r}"
        )
    return value


@click.command(short_help="Search an index with query vectors or images.")
@click.argument(
    "index_folder",
    metavar="INDEX",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
)
@click.argument(
    "queries",
    metavar="QUERY...",
    nargs=-1,
    required=True,
    type=click.Path(exists=True, path_type=Path),
)
@click.option(
    "-c",
    "--codebook",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="The index's codebook; needed when queries are images or descriptors.",
)
@spec_option(K, "--top", "k")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    callback=_check_results_suffix,
    help="Results file: .json (ranks, scores, reasons), .csv "
    "(query,rank,name,score) or .txt (pairs: 'query image' per line). "
    "Default: a table on stdout.",
)
@click.option(
    "--rerank",
    type=click.Choice(["qe", "spatial"]),
    multiple=True,
    help="Re-rank: qe (query expansion), spatial (geometric verification "
    "of local descriptor matches); both may be given, query expansion runs "
    "first.",
)
@click.option(
    "--qe-neighbours",
    type=click.IntRange(min=1),
    default=3,
    show_default=True,
    help="Results averaged into each query by --rerank qe.",
)
@click.option(
    "--qe-alpha",
    type=click.FloatRange(min=0.0),
    default=3.0,
    show_default=True,
    help="Weight of a neighbour is its similarity to this power (0: average QE).",
)
@spec_option(
    DEPTH,
    "--rerank-depth",
    "rerank_depth",
    help=DEPTH.help + preset_defaults("depth", str),
)
@verification_options(from_descriptors=True)
@spec_option(
    MIN_INLIERS,
    default=None,
    show_default=False,
    help=MIN_INLIERS.help + preset_defaults("min_inliers", str),
)
@click.option(
    "--expand-verified",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    metavar="N",
    help="After --rerank spatial, search again with each query's descriptors "
    "and those of its first N verified images as one query; the verified "
    "images keep their places, the second search ranks the rest (10 was "
    "measured; 0: no second search).",
)
@click.option(
    "--database-descriptors",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="The index images' descriptors file from \"vlad extract\" or hloc's "
    "local features (.h5), with their keypoints, for --rerank spatial.",
)
@spec_option(SEARCH_PARAMETERS, help=f"{SEARCH_PARAMETERS.help} For this search.")
@spec_option(MULTIPLE_ASSIGNMENT)
@spec_option(STOP_FRACTION)
@page_options(search=True)
@jobs_option
@overwrite_option
@verbosity_options
@deprecated_alias("-k", "--top", "k", "search", type=SpecifiedInt(K))
def search(
    index_folder: Path,
    queries: tuple[Path, ...],
    codebook: Path | None,
    k: int,
    output: Path | None,
    rerank: tuple[str, ...],
    qe_neighbours: int,
    qe_alpha: float,
    rerank_depth: int | None,
    verification: dict,
    min_inliers: int | None,
    expand_verified: int,
    database_descriptors: Path | None,
    parameters: str | None,
    multiple_assignment: int | None,
    stop_fraction: float,
    page: PageOptions,
    n_jobs: int | None,
    overwrite: bool,
    verbosity: int,
) -> None:
    """Search INDEX (from "vlad index") for the best images of each QUERY.

    QUERY... is a vectors file or folder from "vlad encode" (or hloc's global
    features, .h5), a descriptors file from "vlad extract" (or hloc's local
    features, .h5), or image files and folders; descriptors and
    images are encoded with --codebook as the index's vectors were. A query
    without descriptors finds nothing, and says why. An ASMK index ("vlad
    index --method asmk") takes descriptors or images, and holds its codebook
    (--codebook, if given, must be the same).

    \b
    Examples:
        vlad search index queries.npy --top 100 -o results.json
        vlad search index photo.jpg -c codebook.npz --top 5
        vlad search asmk-index queries.npz --top 100 -o results.json
        vlad search index queries/ -c codebook.npz --rerank spatial \\
            --database-descriptors descriptors.npz -o results.json
        vlad search asmk-index feats-aliked-n16.h5 --rerank spatial \\
            --expand-verified 10 --database-descriptors feats-aliked-n16.h5
        vlad search index queries/ -c codebook.npz --html results.html \\
            --images photos/ --ground-truth ground_truth.json
    """
    _check_reranking_options(click.get_current_context(), rerank)
    if "spatial" in rerank and database_descriptors is None:
        raise click.UsageError("--rerank spatial needs --database-descriptors")
    if expand_verified and "spatial" not in rerank:
        raise click.UsageError("--expand-verified needs --rerank spatial")
    check_outputs([path for path in (output, page.html) if path], overwrite)
    asmk = is_asmk_index(index_folder)
    if asmk and ("qe" in rerank or parameters is not None):
        raise click.UsageError(
            "--rerank qe and --parameters do not apply to an ASMK index"
        )
    if not asmk and multiple_assignment is not None:
        raise click.UsageError("--multiple-assignment applies only to an ASMK index")
    if not asmk and stop_fraction != STOP_FRACTION.default:
        raise click.UsageError("--stop-fraction applies only to an ASMK index")
    label = "Describing queries" if asmk else "Encoding queries"
    with library_errors():
        with progress_bar(verbosity, label) as progress:
            run = search_index(
                index_folder,
                queries,
                codebook=codebook,
                top=k,
                rerank=rerank,
                qe_neighbours=qe_neighbours,
                qe_alpha=qe_alpha,
                rerank_depth=rerank_depth,
                min_inliers=min_inliers,
                verification=verification,
                expand_verified=expand_verified,
                database_descriptors=database_descriptors,
                parameters=parameters,
                multiple_assignment=multiple_assignment,
                stop_fraction=stop_fraction,
                n_jobs=n_jobs,
                progress=progress,
            )
        if output is not None:
            run.results.write(output, overwrite=overwrite)
    # The results file lists every query's reason; a table on stdout does not.
    listed_in = output if output and output.suffix.lower() == ".json" else None
    if run.report is not None:
        report_skipped(run.report, queries=True, advice=None, listed_in=listed_in)
    results = run.results
    for note in results.notes:
        logger.warning(note)
    # One line per reason: queries without descriptors were told just above.
    told = set(run.report.empty) if run.report is not None else set()
    by_reason: dict[str, list[str]] = {}
    for result in results:
        if result.reason and result.query not in told:
            by_reason.setdefault(result.reason, []).append(result.query)
    for reason, names in by_reason.items():
        logger.warning("%s: %s", name_list(names, listed_in), reason)
    if output is None:
        _print_table(results)
    else:
        logger.info(
            "wrote the best %s of %s to %s",
            count(k, "image"),
            count(len(results), "query", "queries"),
            output,
        )
    if page.html is not None:
        sets = None
        if run.query_descriptors is not None:
            sets = (run.query_descriptors, run.database_descriptors)
        with library_errors():
            write_results_page(
                page,
                results,
                queries,
                sets,
                n_jobs,
                verbosity,
                overwrite,
                run.max_pixels,
            )


def _check_reranking_options(ctx: click.Context, rerank: tuple[str, ...]) -> None:
    """Refuse the options of a re-ranking that is not asked for: given without
    it, they would change nothing."""
    flags = {param.name: max(param.opts, key=len) for param in ctx.command.params}
    for reranking, names in _RERANKING_ONLY.items():
        if reranking in rerank:
            continue
        given = [
            flags[name]
            for name in names
            if ctx.get_parameter_source(name) is not click.core.ParameterSource.DEFAULT
        ]
        if given:
            verb = "applies" if len(given) == 1 else "apply"
            raise click.UsageError(
                f"{', '.join(given)} {verb} only with --rerank {reranking}"
            )


def _print_table(results: SearchResults) -> None:
    """Query, rank, score and name, one result a line, on stdout.

    Written as bytes, the file system's for each name: a name that is not
    valid UTF-8 (kept with surrogate escapes) prints as the file's own name
    instead of failing on a strict terminal; control characters (tabs and
    line breaks too) are escaped, so that a name can neither drive the
    terminal nor add a column or a line.
    """
    for result in results:
        query = printable(result.query, keep_undecodable=True)
        for rank, (name, score) in enumerate(
            zip(result.names, result.scores, strict=True), start=1
        ):
            name = printable(name, keep_undecodable=True)
            click.echo(os.fsencode(f"{query}\t{rank}\t{score:.4f}\t{name}"))
