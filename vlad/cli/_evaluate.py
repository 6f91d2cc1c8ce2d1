"""``vlad evaluate``: mAP, recall@k, precision@k and MRR of search results."""

from __future__ import annotations

import logging
from pathlib import Path

import click

from vlad.cli._options import deprecated_alias, overwrite_option, verbosity_options
from vlad.cli._page_options import PageOptions, page_options, write_evaluation_report
from vlad.cli._reporting import check_outputs, count, library_errors
from vlad.evaluation._files import evaluate_files
from vlad.evaluation._revisited import REVISITED_PROTOCOLS
from vlad.evaluation._scoring import DEFAULT_KS

__all__ = ["evaluate"]

logger = logging.getLogger("vlad.cli")


def _check_json_suffix(ctx, param, value: Path | None) -> Path | None:
    if value is not None and value.suffix.lower() != ".json":
        raise click.BadParameter(f"must end in .json; got {str(value)!r}")
    return value


@click.command(short_help="Score search results against a ground truth.")
@click.argument("results", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "-g",
    "--ground-truth",
    required=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help='JSON: {"query": {"relevant": [...], "junk": [...], "tags": [...]}}; '
    "junk and tags optional. See --protocol and --holidays for the others.",
)
@click.option(
    "--protocol",
    type=click.Choice(REVISITED_PROTOCOLS),
    help="The ground truth is revisited Oxford/Paris JSON "
    '({"query": {"easy": [...], "hard": [...], "junk": [...]}}); score this setup.',
)
@click.option(
    "--holidays",
    is_flag=True,
    help="The ground truth is a text file of every INRIA Holidays image name, one "
    "a line (such as the database's .names.txt); each query is its scene's "
    "image ending in 00, and is junk in its own ranking.",
)
@click.option(
    "--cutoff",
    "ks",
    type=click.IntRange(min=1),
    multiple=True,
    default=DEFAULT_KS,
    show_default=True,
    help="Cut-off of recall@k and precision@k; repeat for several.",
)
@click.option(
    "--json",
    "json_path",
    type=click.Path(dir_okay=False, path_type=Path),
    callback=_check_json_suffix,
    help="Also write everything, each query's metrics too, to this .json file.",
)
@click.option(
    "--per-query",
    is_flag=True,
    help="Also show each query's AP, the place of its first relevant image and "
    "the relevant images found.",
)
@page_options(search=False)
@overwrite_option
@verbosity_options
@deprecated_alias(
    "-k", "--cutoff", "ks", "evaluate", type=click.IntRange(min=1), multiple=True
)
def evaluate(
    results: Path,
    ground_truth: Path,
    protocol: str | None,
    holidays: bool,
    ks: tuple[int, ...],
    json_path: Path | None,
    per_query: bool,
    page: PageOptions,
    overwrite: bool,
    verbosity: int,
) -> None:
    """Score RESULTS (from "vlad search": .json, .csv or pairs .txt) against a
    ground truth: mAP, MRR, recall@k (a relevant image in the top k) and
    precision@k, overall and by tag, as a table on stderr.

    Average precision is revisitop's (trapezoid rule). Junk images are removed
    from each ranking before places are counted; relevant images absent from a
    truncated ranking count as not found. A query of the ground truth missing
    from RESULTS counts as finding nothing (AP 0); one with no relevant image
    is left out of the means. Both are listed.

    \b
    Examples:
        vlad evaluate results.json -g ground_truth.json
        vlad evaluate results.json -g roxford5k.json --protocol hard
        vlad evaluate pairs.txt -g vectors.names.txt --holidays --json eval.json
        vlad evaluate results.json -g ground_truth.json --html report.html \\
            --images photos/ --query-images queries/
    """
    if protocol is not None and holidays:
        raise click.UsageError("--protocol and --holidays exclude each other")
    check_outputs([path for path in (json_path, page.html) if path], overwrite)
    with library_errors():
        evaluation = evaluate_files(
            results, ground_truth, protocol=protocol, holidays=holidays, ks=ks
        )
        if json_path is not None:
            evaluation.write(json_path, overwrite=overwrite)
    for note in evaluation.notes:
        logger.warning(note)
    if verbosity >= 0:
        click.echo(evaluation.format_table(per_query=per_query), err=True)
    if json_path is not None:
        logger.info(
            "wrote the evaluation of %s to %s",
            count(len(evaluation.queries), "query", "queries"),
            json_path,
        )
    if page.html is not None:
        with library_errors():
            write_evaluation_report(
                page,
                evaluation,
                results,
                ground_truth,
                protocol=protocol,
                holidays=holidays,
                verbosity=verbosity,
                overwrite=overwrite,
            )
