"""``vlad extract``: images to a descriptor sets file or folder of shards."""

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
    descriptor_options,
    input_argument,
    jobs_option,
    overwrite_option,
    verbosity_options,
)
from vlad.cli._reporting import (
    check_outputs,
    count,
    dense_advice,
    library_errors,
    progress_bar,
    report_skipped,
)
from vlad.images._extractors import descriptor_kind
from vlad.pipeline._batch import BatchReport
from vlad.pipeline._descriptor_shards import (
    DESCRIPTOR_SHARD_IMAGES,
    extract_images_to_folder,
)
from vlad.pipeline._extraction import extract_images

__all__ = ["extract"]

logger = logging.getLogger("vlad.cli")


@click.command(short_help="Extract local descriptors of images (.npz or folder).")
@input_argument
@file_or_folder_output(
    ".npz",
    "Descriptors to write: NAME.npz, or a folder of shards NAME (no suffix).",
)
@shard_options(
    DESCRIPTOR_SHARD_IMAGES,
    "Images each shard of a folder covers.",
    "Finish an interrupted run into a folder: keep the shards it wrote "
    "with the same options and images; make the others.",
)
@dask_options("images and folder")
@descriptor_options(from_codebook=False)
@jobs_option
@overwrite_option
@verbosity_options
def extract(
    inputs: tuple[Path, ...],
    output: Path,
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
    """Extract the local descriptors of images into a descriptor sets file.

    Descriptors are OpenCV's RootSIFT by default; --features chooses SIFT,
    AKAZE, ORB or the learned ALIKED (by kornia, on --device; needs
    the learned extra), --extractor any Python callable (ViT patch
    tokens, say).

    INPUT... are image folders, walked recursively in sorted order (.jpg,
    .jpeg, .png, .bmp, .tif, .tiff and .webp files, in any case), and image
    files. Unreadable files are skipped with a warning, and so are images the
    --extractor callable or the network raises on. The output records each
    image's name (relative to INPUT) and the descriptor options, and can be
    given to "vlad fit" and "vlad encode" in place of the images.

    \b
    An output ending in .npz is one file, for collections that fit in memory.
    An output without a suffix is a folder of shards, written as images are
    described, in memory that does not grow with the number of images:
      NAME/part-00000-KEY.npy            descriptors of one shard's images
      NAME/part-00000-KEY.keypoints.npy  their keypoint positions
      NAME/part-00000-KEY.json           their names and numbers of descriptors
      NAME/manifest.json                 written last: the shards, the options
    An interrupted run into a folder continues with --resume. With --dask or
    --scheduler, a Dask cluster makes the shards: each task writes one, the
    manifest is written here once all are, and the folder is the same, byte for
    byte, as without.

    \b
    Examples:
        vlad extract data -o descriptors.npz
        vlad extract data -o aliked.npz --features aliked --weights aliked-n16.pth
    """
    if output.suffix.lower() != ".npz":
        _extract_to_folder(
            inputs,
            output,
            descriptor_options,
            shard_images=shard_images,
            resume=resume,
            use_dask=use_dask,
            scheduler=scheduler,
            extractor=extractor,
            n_jobs=n_jobs,
            overwrite=overwrite,
            verbosity=verbosity,
        )
        return
    check_file_output(".npz", resume, use_dask, scheduler)
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
    logger.info(
        "wrote %s of %s (%s) to %s",
        count(sets.descriptors.shape[0], "descriptor"),
        count(len(sets), "image"),
        descriptor_kind(sets.metadata),
        output,
    )
    report_skipped(report, listed_in=output, advice=dense_advice(sets.metadata))


def _extract_to_folder(
    inputs,
    output,
    descriptor_options,
    *,
    verbosity,
    overwrite,
    resume,
    use_dask,
    scheduler,
    n_jobs,
    **settings,
) -> None:
    """``vlad extract`` into a folder of shards, here or on a Dask cluster."""
    check_folder_output(output, overwrite, resume)
    with (
        library_errors(),
        folder_client(use_dask, scheduler, n_jobs) as (client, n_jobs),
        progress_bar(verbosity, "Extracting") as progress,
    ):
        shards = extract_images_to_folder(
            inputs,
            output,
            descriptor_options,
            progress=progress,
            overwrite=overwrite,
            resume=resume,
            client=client,
            n_jobs=n_jobs,
            **settings,
        )
    record = shards.record
    logger.info(
        "wrote %s of %s (%s) to %s, in %s",
        count(record["n_descriptors"], "descriptor"),
        count(len(shards), "image"),
        descriptor_kind(shards.metadata),
        output,
        count(shards.n_shards, "shard"),
    )
    report_skipped(
        BatchReport(
            record["n_found"],
            shards.names,
            {entry["name"]: entry["reason"] for entry in record["skipped"]},
            record["empty"],
        ),
        listed_in=output,
        advice=dense_advice(shards.metadata),
    )
