"""``vlad fit``: a codebook from images or descriptors."""

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
    library_errors,
    progress_bar,
    report_skipped,
)
from vlad.images.batch import fit_codebook_to_images

__all__ = ["fit"]

logger = logging.getLogger("vlad.cli")


@click.command(short_help="Fit a k-means codebook on images or descriptors.")
@input_argument
@click.option(
    "-k",
    "--n-clusters",
    type=click.IntRange(min=1),
    default=64,
    show_default=True,
    help="Number of centres K (visual words); vectors have K * F dimensions "
    "(F = 128 for SIFT).",
)
@output_option(".npz", "Codebook file to write (.npz).")
@click.option(
    "--sample",
    type=click.IntRange(min=1),
    default=100_000,
    show_default=True,
    help="Fit on a uniform sample of at most this many descriptors.",
)
@click.option(
    "--per-image",
    type=click.IntRange(min=1),
    default=None,
    help="Offer at most this many descriptors of each image to the sample, "
    "drawn at random (default: all).",
)
@click.option(
    "--seed",
    type=int,
    default=0,
    show_default=True,
    help="Seed of the sample and of k-means: the same seed, the same codebook.",
)
@descriptor_options(from_codebook=False)
@jobs_option
@overwrite_option
@verbosity_options
def fit(
    inputs: tuple[Path, ...],
    n_clusters: int,
    output: Path,
    sample: int,
    per_image: int | None,
    seed: int,
    descriptor_options: dict,
    extractor: str | None,
    n_jobs: int | None,
    overwrite: bool,
    verbosity: int,
) -> None:
    """Fit a codebook (k-means centres) on the descriptors of images.

    INPUT... are image folders and files as for "vlad extract", or one
    descriptors file: an .npz from "vlad extract", or an .npy of shape (N, F)
    or (T, L, F). Images are read as a stream: memory holds a uniform sample
    of --sample descriptors (reservoir sampling, seeded by --seed), never every
    image's. The codebook records the descriptor options, and "vlad encode"
    makes descriptors the same way.

    \b
    Example:
        vlad fit data -k 16 -o codebook.npz
    """
    check_outputs([output], overwrite)
    with library_errors(), progress_bar(verbosity, "Describing") as progress:
        codebook, report = fit_codebook_to_images(
            inputs,
            n_clusters,
            sample=sample,
            per_image=per_image,
            seed=seed,
            descriptor_options=descriptor_options,
            extractor=extractor,
            n_jobs=n_jobs,
            progress=progress,
        )
        codebook.save(output, overwrite=overwrite)
    logger.info(
        "wrote a codebook of %d centres x %d features (fingerprint %s), fitted on "
        "%d descriptors of %d images, to %s",
        codebook.n_clusters,
        codebook.n_features,
        codebook.fingerprint,
        codebook.metadata["n_training_descriptors"],
        len(report.names),
        output,
    )
    report_skipped(report)
