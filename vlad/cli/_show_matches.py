"""``vlad show-matches``: a picture of the correspondences that spatial
verification finds between two images."""

from __future__ import annotations

import logging
from pathlib import Path

import click

from vlad.cli._options import (
    descriptor_options,
    overwrite_option,
    verbosity_options,
    verification_options,
)
from vlad.cli._reporting import check_outputs, count, library_errors
from vlad.pages._matches import MATCHES_SUFFIXES, write_matches_picture

__all__ = ["show_matches"]

logger = logging.getLogger("vlad.cli")


def _check_suffix(ctx, param, value: Path) -> Path:
    if value.suffix.lower() not in MATCHES_SUFFIXES:
        raise click.BadParameter(
            f"must end in {', '.join(MATCHES_SUFFIXES)}; got {str(value)!r}"
        )
    return value


@click.command(
    "show-matches", short_help="Draw the inlier matches of two images side by side."
)
@click.argument("query", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument("image", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "-o",
    "--output",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    callback=_check_suffix,
    help="The picture: .png or .jpg.",
)
@verification_options()
@click.option(
    "--height",
    type=click.IntRange(min=1),
    default=600,
    show_default=True,
    help="Height of the picture at most, in pixels.",
)
@descriptor_options(from_codebook=False, extractor=False)
@overwrite_option
@verbosity_options
def show_matches(
    query: Path,
    image: Path,
    output: Path,
    verification: dict,
    height: int,
    descriptor_options: dict,
    overwrite: bool,
    verbosity: int,
) -> None:
    """Match QUERY's SIFT descriptors to IMAGE's as "vlad search --rerank
    spatial" does (mutual nearest neighbours, then a fundamental matrix, by
    default), and draw the two images side by side with a line for each
    inlier: the matches that verified IMAGE. Use the descriptor options the
    index was made with.

    \b
    Examples:
        vlad show-matches queries/q.jpg photos/a.jpg -o matches.png
        vlad show-matches q.jpg a.jpg -o matches.jpg --geometry homography
    """
    check_outputs([output], overwrite)
    with library_errors():
        found = write_matches_picture(
            query,
            image,
            output,
            descriptor_options=descriptor_options,
            max_height=height,
            overwrite=overwrite,
            **verification,
        )
    logger.info(
        "%d of %s are inliers of one %s model; wrote %s",
        found.n_inliers,
        count(found.n_matches, "match", "matches"),
        verification["model"],
        output,
    )
