"""``vlad encode``: VLAD vectors of images (or descriptors) with a codebook."""

from __future__ import annotations

import logging
from pathlib import Path

import click

from vlad.cli._folder_outputs import (
    check_output,
    dask_options,
    file_or_folder_output,
    folder_client,
    shard_options,
    written_to,
)
from vlad.cli._options import (
    assignment_options,
    descriptor_options,
    input_argument,
    jobs_option,
    overwrite_option,
    spec_option,
    verbosity_options,
)
from vlad.cli._reporting import (
    DENSE_ADVICE,
    count,
    dense_advice,
    library_errors,
    progress_bar,
    report_skipped,
)
from vlad.core._options import EncodingOptions
from vlad.core._parameters import INTRA, L2, MASS, POWER
from vlad.core.aggregators import AGGREGATORS
from vlad.pipeline._encoding import ENCODE_CHUNK_IMAGES
from vlad.pipeline._vector_kinds import VECTOR_FILES
from vlad.pipeline._vector_shards import (
    SHARD_IMAGES,
    check_shard_images,
    encode_images,
)

__all__ = ["encode"]

logger = logging.getLogger("vlad.cli")

#: Dense keypoints describe every image, but only with a codebook of their own.
_DENSE_ADVICE = f"{DENSE_ADVICE} (with a codebook fitted with --dense)"


@click.command(short_help="Encode images as VLAD vectors with a codebook.")
@input_argument
@click.option(
    "-c",
    "--codebook",
    required=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help='Codebook file from "vlad fit".',
)
@file_or_folder_output(
    (".npy", ".h5"),
    "Vectors to write: NAME.npy (with NAME.names.txt and NAME.json beside "
    "it), NAME.h5 (hloc's global features), or a folder of shards NAME (no "
    "suffix).",
)
@click.option(
    "--aggregator",
    type=click.Choice(sorted(AGGREGATORS)),
    default="auto",
    show_default=True,
    help="Implementation of the residual sums; all give the same vectors.",
)
@spec_option(POWER)
@spec_option(INTRA)
@spec_option(MASS)
@spec_option(L2)
@assignment_options
@shard_options(
    SHARD_IMAGES,
    "Images each shard covers, of a folder or staged for a file (a multiple of "
    f"{ENCODE_CHUNK_IMAGES} above {ENCODE_CHUNK_IMAGES}).",
    "Finish an interrupted run: keep the shards it wrote with the same "
    "codebook, options and images; make the others. A file's shards are kept "
    "in .NAME.parts beside it until it is written: resume a run started with "
    "--resume (a file already written is not resumed).",
    check=check_shard_images,
)
@dask_options("images, codebook and output folder")
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
    variants: dict,
    shard_images: int,
    resume: bool,
    use_dask: bool,
    scheduler: str | None,
    descriptor_options: dict,
    extractor: str | None,
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
    An output ending in .npy is three files, for collections that fit in memory:
      NAME.npy        (n_images, K * 128) float32 vectors, one row per image
      NAME.names.txt  the image of each row, one name per line
      NAME.json       codebook fingerprint, parameters, skipped and empty images
    An output without a suffix is a folder of shards, written as vectors are
    made, in memory that does not grow with the number of images:
      NAME/part-00000-KEY.npy   vectors of the images of one shard
      NAME/part-00000-KEY.json  their names (any file name), what made them
      NAME/manifest.json        written last: as NAME.json, and the shards
    An output ending in .h5 is hloc's global features: a group per image with
    its vector as dataset global_descriptor, for hloc's pairs_from_retrieval.
    Every output holds the same vectors. An interrupted run into a folder
    continues with --resume; a run into a file started with --resume keeps its
    shards in .NAME.parts beside it, and continues so, until the file is
    written. With --dask or --scheduler, a Dask cluster makes the shards: each
    task writes one (a file's, in .NAME.parts), the manifest or file is written
    here once all are, and the output is the same, byte for byte, as without.

    An unreadable file is skipped (and listed in the record); an image without
    keypoints gets a zero row.

    \b
    Example:
        vlad encode data --codebook codebook.npz -o vectors.npy
    """
    with library_errors():
        options = EncodingOptions(
            aggregator=aggregator,
            power=power,
            intra=intra,
            l2=l2,
            mass=mass,
            **variants,
        )
    check_output(output, VECTOR_FILES, overwrite, resume)
    with (
        library_errors(),
        folder_client(use_dask, scheduler, n_jobs) as (client, n_jobs),
        progress_bar(verbosity, "Encoding") as progress,
    ):
        result = encode_images(
            inputs,
            codebook,
            options,
            output=output,
            descriptor_options=descriptor_options,
            extractor=extractor,
            n_jobs=n_jobs,
            progress=progress,
            shard_images=shard_images,
            overwrite=overwrite,
            resume=resume,
            client=client,
        )
    n_images, n_dimensions = result.vectors.shape
    logger.info(
        "wrote the VLAD vectors of %s (%d x %d float32, codebook %s) to %s",
        count(n_images, "image"),
        n_images,
        n_dimensions,
        result.codebook.fingerprint,
        written_to(output, result.vectors),
    )
    report_skipped(
        result.report,
        vectors=True,
        advice=dense_advice(result.descriptor, _DENSE_ADVICE),
        listed_in=output,
    )
