"""``vlad encode``: VLAD vectors of images (or descriptors) with a codebook."""

from __future__ import annotations

import logging
from pathlib import Path

import click

from vlad.cli.options import (
    descriptor_options,
    input_argument,
    jobs_option,
    output_option,
    overwrite_option,
    verbosity_options,
)
from vlad.cli.reporting import (
    check_outputs,
    count,
    library_errors,
    progress_bar,
    report_skipped,
)
from vlad.core.aggregators import AGGREGATORS
from vlad.core.options import EncodingOptions
from vlad.formats.vectors import save_vectors, vector_file_paths
from vlad.images.batch import encode_images

__all__ = ["encode"]

logger = logging.getLogger("vlad.cli")


@click.command(short_help="Encode images as VLAD vectors with a codebook.")
@input_argument
@click.option(
    "-c",
    "--codebook",
    required=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help='Codebook file from "vlad fit".',
)
@output_option(
    ".npy", "Vectors file to write (.npy); NAME.names.txt and NAME.json go beside it."
)
@click.option(
    "--aggregator",
    type=click.Choice(sorted(AGGREGATORS)),
    default="auto",
    show_default=True,
    help="Implementation of the residual sums; all give the same vectors.",
)
@click.option(
    "--power",
    type=click.FloatRange(0.0, 1.0, min_open=True),
    default=1.0,
    show_default=True,
    help="Power-law exponent; 0.5 is the signed square root, 1 leaves values as is.",
)
@click.option(
    "--intra/--no-intra",
    default=True,
    show_default=True,
    help="L2-normalise each centre's block.",
)
@click.option(
    "--mass/--no-mass",
    default=False,
    show_default=True,
    help="Divide each centre's residual sum by its number of descriptors first.",
)
@click.option(
    "--l2/--no-l2",
    default=True,
    show_default=True,
    help="L2-normalise each whole vector.",
)
@descriptor_options(from_codebook=True)
@jobs_option
@overwrite_option
@verbosity_options
def encode(
    inputs: tuple[Path, ...],
    codebook: Path,
    output: Path,
    aggregator: str,
    power: float,
    intra: bool,
    mass: bool,
    l2: bool,
    descriptor_options: dict,
    n_jobs: int | None,
    overwrite: bool,
    verbosity: int,
) -> None:
    """Encode images as VLAD vectors with a codebook from "vlad fit".

    INPUT... are image folders and files as for "vlad extract", or one
    descriptors file as for "vlad fit". Descriptors are made as the codebook's
    were unless options below say otherwise; a codebook never meets descriptors
    of another kind (RootSIFT or SIFT, detected or dense keypoints).

    \b
    Writes three files:
      NAME.npy        (n_images, K * 128) float32 vectors, one row per image
      NAME.names.txt  the image of each row, one name per line
      NAME.json       codebook fingerprint, parameters, skipped and empty images

    An unreadable file is skipped (and listed in NAME.json); an image without
    keypoints gets a zero row.

    \b
    Example:
        vlad encode data --codebook codebook.npz -o vectors.npy
    """
    with library_errors():
        outputs = vector_file_paths(output)
    check_outputs(outputs, overwrite)
    with library_errors(), progress_bar(verbosity, "Encoding") as progress:
        options = EncodingOptions(
            aggregator=aggregator, power=power, intra=intra, l2=l2, mass=mass
        )
        result = encode_images(
            inputs,
            codebook,
            options,
            descriptor_options=descriptor_options,
            n_jobs=n_jobs,
            progress=progress,
        )
        save_vectors(
            output,
            result.vectors,
            result.names,
            result.record(),
            overwrite=overwrite,
        )
    n_images, n_dimensions = result.vectors.shape
    logger.info(
        "wrote the VLAD vectors of %s (%d x %d float32, codebook %s) to %s, "
        "their names to %s and a report to %s",
        count(n_images, "image"),
        n_images,
        n_dimensions,
        result.codebook.fingerprint,
        *outputs,
    )
    report_skipped(result.report)
