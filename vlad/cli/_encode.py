"""``vlad encode``: VLAD vectors of images (or descriptors) with a codebook."""

from __future__ import annotations

import logging
from pathlib import Path

import click

from vlad.cli._folder_outputs import (
    check_file_output,
    check_folder_output,
    dask_options,
    file_or_folder_output,
    folder_client,
    shard_options,
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
    check_outputs,
    count,
    dense_advice,
    library_errors,
    progress_bar,
    report_skipped,
)
from vlad.core._options import EncodingOptions
from vlad.core._parameters import INTRA, L2, MASS, POWER
from vlad.core.aggregators import AGGREGATORS
from vlad.formats._descriptor_files import descriptor_file_in
from vlad.formats._hloc_global import write_global_features
from vlad.formats._vectors import save_vectors, vector_file_paths
from vlad.pipeline._batch import BatchReport
from vlad.pipeline._encoding import ENCODE_CHUNK_IMAGES, encode_images
from vlad.pipeline._vector_shards import (
    SHARD_IMAGES,
    check_shard_images,
    encode_images_to_folder,
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
    "Images each shard of a folder covers (a multiple of "
    f"{ENCODE_CHUNK_IMAGES} above {ENCODE_CHUNK_IMAGES}).",
    "Finish an interrupted run into a folder: keep the shards it wrote "
    "with the same codebook, options and images; make the others.",
    check=check_shard_images,
)
@dask_options("images, codebook and folder")
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
    An interrupted run into a folder continues with --resume. With --dask or
    --scheduler, a Dask cluster makes the shards: each task writes one, the
    manifest is written here once all are, and the folder is the same, byte for
    byte, as without.

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
    if output.suffix.lower() not in (".npy", ".h5"):
        _encode_to_folder(
            inputs,
            codebook,
            output,
            options,
            shard_images=shard_images,
            resume=resume,
            use_dask=use_dask,
            scheduler=scheduler,
            descriptor_options=descriptor_options,
            extractor=extractor,
            n_jobs=n_jobs,
            overwrite=overwrite,
            verbosity=verbosity,
        )
        return
    hloc = output.suffix.lower() == ".h5"
    check_file_output(output.suffix.lower(), resume, use_dask, scheduler)
    with library_errors():
        outputs = (output,) if hloc else vector_file_paths(output)
    check_outputs(outputs, overwrite)
    with library_errors(), progress_bar(verbosity, "Encoding") as progress:
        result = encode_images(
            inputs,
            codebook,
            options,
            descriptor_options=descriptor_options,
            extractor=extractor,
            n_jobs=n_jobs,
            progress=progress,
        )
        save = write_global_features if hloc else save_vectors
        save(
            output,
            result.vectors,
            result.names,
            result.record(),
            overwrite=overwrite,
        )
    n_images, n_dimensions = result.vectors.shape
    if hloc:
        logger.info(
            "wrote the VLAD vectors of %s (%d x %d, codebook %s) to %s, hloc's "
            "global features",
            count(n_images, "image"),
            n_images,
            n_dimensions,
            result.codebook.fingerprint,
            output,
        )
        report_skipped(
            result.report, vectors=True, advice=_DENSE_ADVICE, listed_in=output
        )
        return
    logger.info(
        "wrote the VLAD vectors of %s (%d x %d float32, codebook %s) to %s, "
        "their names to %s and a report to %s",
        count(n_images, "image"),
        n_images,
        n_dimensions,
        result.codebook.fingerprint,
        *outputs,
    )
    report_skipped(
        result.report,
        vectors=True,
        advice=dense_advice(result.descriptor, _DENSE_ADVICE),
        listed_in=output,
    )


def _encode_to_folder(
    inputs,
    codebook,
    output,
    options,
    *,
    verbosity,
    overwrite,
    resume,
    use_dask,
    scheduler,
    n_jobs,
    **settings,
) -> None:
    """``vlad encode`` into a folder of shards, here or on a Dask cluster."""
    check_folder_output(output, overwrite, resume)
    with (
        library_errors(),
        folder_client(use_dask, scheduler, n_jobs) as (client, n_jobs),
        progress_bar(verbosity, "Encoding") as progress,
    ):
        shards = encode_images_to_folder(
            inputs,
            codebook,
            output,
            options,
            progress=progress,
            overwrite=overwrite,
            resume=resume,
            client=client,
            n_jobs=n_jobs,
            **settings,
        )
    logger.info(
        "wrote the VLAD vectors of %s (%d x %d float32, codebook %s) to %s, in %s",
        count(shards.shape[0], "image"),
        *shards.shape,
        shards.record["codebook"]["fingerprint"],
        output,
        count(len(shards.blocks), "shard"),
    )
    report_skipped(
        BatchReport(
            shards.record["n_found"],
            shards.names,
            {entry["name"]: entry["reason"] for entry in shards.record["skipped"]},
            shards.record["empty"],
            descriptor_file_in(inputs),
        ),
        vectors=True,
        advice=_DENSE_ADVICE,
        listed_in=output,
    )
