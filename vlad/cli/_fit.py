"""``vlad fit``: a codebook from images or descriptors."""

from __future__ import annotations

import logging
from pathlib import Path

import click

from vlad.cli._kmeans_options import kmeans_options
from vlad.cli._options import (
    SpecifiedInt,
    deprecated_alias,
    descriptor_options,
    input_argument,
    jobs_option,
    output_option,
    overwrite_option,
    spec_option,
    verbosity_options,
)
from vlad.cli._reporting import (
    check_outputs,
    dense_advice,
    library_errors,
    progress_bar,
    report_skipped,
)
from vlad.core._parameters import N_CLUSTERS, SAMPLE
from vlad.pipeline._codebook_fit import write_adapted_codebook, write_codebook

__all__ = ["fit"]

logger = logging.getLogger("vlad.cli")


@click.command(short_help="Fit a k-means codebook on images or descriptors.")
@input_argument
@spec_option(N_CLUSTERS)
@output_option(".npz", "Codebook file to write (.npz).")
@spec_option(SAMPLE, default=SAMPLE.default)
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
@click.option(
    "--vocabularies",
    "n_vocabularies",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Fit this many vocabularies of K centres each, with seeds SEED, SEED+1, "
    '..., into one codebook: "vlad encode" concatenates their vectors, to be '
    'PCA-whitened together ("vlad index --pca D --whiten").',
)
@click.option(
    "--adapt",
    "adapt_from",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    metavar="CODEBOOK",
    help="Adapt CODEBOOK to INPUT instead of fitting afresh: each centre moves to "
    "the mean of INPUT's descriptors nearest to it (those without any stay). "
    "Descriptors are made as CODEBOOK's were, except for the options given.",
)
@kmeans_options
@descriptor_options(from_codebook=False)
@jobs_option
@overwrite_option
@verbosity_options
@deprecated_alias(
    "-k", "--n-clusters", "n_clusters", "fit", type=SpecifiedInt(N_CLUSTERS)
)
def fit(
    inputs: tuple[Path, ...],
    n_clusters: int,
    output: Path,
    sample: int,
    per_image: int | None,
    seed: int,
    n_vocabularies: int,
    adapt_from: Path | None,
    kmeans_options: dict,
    descriptor_options: dict,
    extractor: str | None,
    n_jobs: int | None,
    overwrite: bool,
    verbosity: int,
) -> None:
    """Fit a codebook (k-means centres) on the descriptors of images.

    INPUT... are image folders and files as for "vlad extract", or one
    descriptors file: an .npz from "vlad extract", an .npy of shape (N, F)
    or (T, L, F), or hloc's local features (.h5: SuperPoint, DISK...).
    Images are read as a stream: memory holds a uniform sample of --sample
    descriptors (reservoir sampling, seeded by --seed), never every image's.
    The codebook records the descriptor options, and "vlad encode" makes
    descriptors the same way.

    \b
    Examples:
        vlad fit data --n-clusters 16 -o codebook.npz
        vlad fit data --n-clusters 16 --vocabularies 4 -o codebooks.npz
        vlad fit mine/ --adapt generic.npz -o adapted.npz
    """
    check_outputs([output], overwrite)
    if adapt_from is not None:
        _refuse_fitting_options(adapt_from)
    with (
        library_errors(),
        progress_bar(verbosity, "Describing") as progress,
        progress_bar(verbosity, "k-means", lines=True) as kmeans_progress,
    ):
        if adapt_from is not None:
            codebook, report = write_adapted_codebook(
                inputs,
                adapt_from,
                output,
                descriptor_options=descriptor_options,
                extractor=extractor,
                n_jobs=n_jobs,
                progress=progress,
                overwrite=overwrite,
            )
        else:
            codebook, report = write_codebook(
                inputs,
                output,
                n_clusters,
                n_vocabularies=n_vocabularies,
                sample=sample,
                per_image=per_image,
                seed=seed,
                descriptor_options=descriptor_options,
                kmeans_options=kmeans_options,
                extractor=extractor,
                n_jobs=n_jobs,
                progress=progress,
                kmeans_progress=kmeans_progress,
                overwrite=overwrite,
            )
    if adapt_from is not None:
        record = codebook.metadata["adaptation"]
        logger.info(
            "wrote codebook %s adapted to %d descriptors of %d images (fingerprint "
            "%s; %d centres without descriptors kept in place) to %s",
            record["from"],
            record["n_descriptors"],
            len(report.names),
            codebook.fingerprint,
            record["n_empty_centers"],
            output,
        )
    elif n_vocabularies > 1:
        logger.info(
            "wrote a codebook of %d vocabularies of %d centres x %d features "
            "(fingerprint %s), fitted on the descriptors of %d images, to %s",
            codebook.n_vocabularies,
            n_clusters,
            codebook.n_features,
            codebook.fingerprint,
            len(report.names),
            output,
        )
    else:
        logger.info(
            "wrote a codebook of %d centres x %d features (fingerprint %s), fitted "
            "on %d descriptors of %d images, to %s",
            codebook.n_clusters,
            codebook.n_features,
            codebook.fingerprint,
            codebook.metadata["n_training_descriptors"],
            len(report.names),
            output,
        )
    report_skipped(report, advice=dense_advice(codebook.metadata.get("descriptor")))


def _refuse_fitting_options(adapt_from: Path) -> None:
    """``--adapt`` keeps the codebook's centres: refuse the options that fit
    them afresh."""
    ctx = click.get_current_context()
    options = {
        "n_clusters": "--n-clusters",
        "sample": "--sample",
        "per_image": "--per-image",
        "seed": "--seed",
        "n_vocabularies": "--vocabularies",
    }
    given = [
        name
        for name in options
        if ctx.get_parameter_source(name) != click.core.ParameterSource.DEFAULT
    ]
    if given:
        raise click.UsageError(
            f"{options[given[0]]} does not apply with --adapt: the adapted "
            "codebook keeps the centres and vocabularies of "
            f"{click.format_filename(adapt_from)}"
        )
