"""``vlad extract``: images to a descriptor sets file."""

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
from vlad.images.batch import extract_images
from vlad.images.sift import SiftOptions

__all__ = ["extract"]

logger = logging.getLogger("vlad.cli")


@click.command(short_help="Extract local descriptors of images into an .npz.")
@input_argument
@output_option(".npz", "Descriptor sets file to write (.npz).")
@descriptor_options(from_codebook=False)
@jobs_option
@overwrite_option
@verbosity_options
def extract(
    inputs: tuple[Path, ...],
    output: Path,
    descriptor_options: dict,
    extractor: str | None,
    n_jobs: int | None,
    overwrite: bool,
    verbosity: int,
) -> None:
    """Extract the local descriptors of images into a descriptor sets file.

    Descriptors are OpenCV's RootSIFT by default; --features chooses SIFT,
    AKAZE or ORB, --extractor any Python callable (ViT patch tokens, say).

    INPUT... are image folders, walked recursively in sorted order (.jpg,
    .jpeg, .png, .bmp, .tif, .tiff and .webp files, in any case), and image
    files. Unreadable files are skipped with a warning, and so are images the
    --extractor callable raises on. The file records each
    image's name (relative to INPUT) and the descriptor options, and can be
    given to "vlad fit" and "vlad encode" in place of the images.

    \b
    Example:
        vlad extract data -o descriptors.npz
    """
    check_outputs([output], overwrite)
    with library_errors(), progress_bar(verbosity, "Extracting") as progress:
        sets, report = extract_images(
            inputs,
            descriptor_options,
            extractor=extractor,
            n_jobs=n_jobs,
            progress=progress,
        )
        sets.save(output, overwrite=overwrite)
    options = SiftOptions.from_record(sets.metadata)
    logger.info(
        "wrote %s of %s (%s) to %s",
        count(sets.descriptors.shape[0], "descriptor"),
        count(len(sets), "image"),
        options.kind if options else sets.metadata["extractor"],
        output,
    )
    report_skipped(report)
