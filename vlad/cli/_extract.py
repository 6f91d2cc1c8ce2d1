"""``vlad extract``: images to a descriptor sets file or folder of shards."""

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
    descriptor_options,
    input_argument,
    jobs_option,
    overwrite_option,
    verbosity_options,
)
from vlad.cli._reporting import (
    count,
    dense_advice,
    library_errors,
    progress_bar,
    report_skipped,
)
from vlad.images._extractors import descriptor_kind
from vlad.pipeline._descriptor_shards import DESCRIPTOR_SHARD_IMAGES, ImageDescriptors
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
    "Images each shard covers, of a folder or staged for a file.",
    "Finish an interrupted run: keep the shards it wrote with the same "
    "options and images; make the others. An .npz's shards are kept in "
    ".NAME.parts beside it until it is written: resume a run started with "
    "--resume (a file already written is not resumed).",
)
@dask_options("images and output folder")
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
    Both hold the same descriptors. An interrupted run into a folder continues
    with --resume; a run into an .npz started with --resume keeps its shards in
    .NAME.parts beside it, and continues so, until the file is written. With
    --dask or --scheduler, a Dask cluster makes the shards: each task writes
    one (an .npz's, in .NAME.parts), the manifest or file is written here once
    all are, and the output is the same, byte for byte, as without. A --extractor
    callable gives no keypoints: its descriptors go to an .npz, without
    --resume, --dask or --scheduler.

    \b
    Examples:
        vlad extract data -o descriptors.npz
        vlad extract data -o aliked.npz --features aliked --weights aliked-n16.pth
    """
    check_output(output, ImageDescriptors.files, overwrite, resume)
    with (
        library_errors(),
        folder_client(use_dask, scheduler, n_jobs) as (client, n_jobs),
        progress_bar(verbosity, "Extracting") as progress,
    ):
        sets, report = extract_images(
            inputs,
            descriptor_options,
            output=output,
            extractor=extractor,
            n_jobs=n_jobs,
            progress=progress,
            shard_images=shard_images,
            overwrite=overwrite,
            resume=resume,
            client=client,
        )
    logger.info(
        "wrote %s of %s (%s) to %s",
        count(int(sum(sets.lengths)), "descriptor"),
        count(len(sets), "image"),
        descriptor_kind(sets.metadata),
        written_to(output, sets),
    )
    report_skipped(report, listed_in=output, advice=dense_advice(sets.metadata))
