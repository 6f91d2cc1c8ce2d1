"""The steps of a run into a folder of shards, wherever its shards are made.

A run is planned once (:func:`plan_folder_run`: the images, how they fall into
shards, each shard's key, which shards a resumed run keeps), its shards are
made in this process (:mod:`vlad.images.sharded`) or on a Dask cluster
(:mod:`vlad.images.dask_encoding`) by :func:`encode_shard`, and it is
committed once every shard is written (:func:`commit_folder_run`). The
shards' bytes do not depend on where they were made.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import os
from collections.abc import Callable, Iterator, Mapping, Sequence

import numpy as np

from vlad.core.codebook import Codebook
from vlad.core.descriptors import DescriptorSets
from vlad.core.encoding import encode
from vlad.core.options import EncodingOptions
from vlad.formats.shards import ShardedVectors, ShardWriter, open_shards, shard_key
from vlad.images.batch import (
    ENCODE_CHUNK_IMAGES,
    BatchReport,
    keep_readable,
    path_list,
    vectors_record,
    walk_batch,
)
from vlad.images.extractors import Extractor, extractor_for_codebook
from vlad.images.files import ImageFile

__all__ = [
    "FolderRun",
    "commit_folder_run",
    "encode_shard",
    "plan_folder_run",
    "image_identities",
    "run_settings",
    "shard_record",
]

logger = logging.getLogger(__name__)
PathOrPaths = str | os.PathLike | Sequence[str | os.PathLike]


@dataclasses.dataclass
class FolderRun:
    """A run into a folder of shards: what it writes and what is left to make.

    Attributes
    ----------
    writer : ShardWriter
        The folder.
    record : dict
        The manifest, less what the shards tell (counts, skipped, empty).
    shard_images : int
        Images found that each shard covers.
    codebook : Codebook
    sift_options : Extractor
    options : EncodingOptions
    groups : list of list of ImageFile
        The images of each shard.
    keys : list of str
        Each shard's key.
    shards : list of dict or None
        Each shard's record once written (or kept); None while to be made.
    walk_report : BatchReport
        The sub-folders that could not be walked.
    """

    writer: ShardWriter
    record: dict
    shard_images: int
    codebook: Codebook
    sift_options: Extractor
    options: EncodingOptions
    groups: list[list[ImageFile]]
    keys: list[str]
    shards: list[dict | None]
    walk_report: BatchReport

    @property
    def todo(self) -> list[int]:
        """The indices of the shards still to make."""
        return [index for index, shard in enumerate(self.shards) if shard is None]

    @property
    def n_images(self) -> int:
        """Images found."""
        return sum(len(group) for group in self.groups)


def plan_folder_run(
    inputs: PathOrPaths,
    codebook: Codebook,
    folder: str | os.PathLike,
    options: EncodingOptions,
    *,
    descriptor_options: Mapping | None,
    extractor: Callable | str | None = None,
    shard_images: int,
    overwrite: bool,
    resume: bool,
) -> FolderRun:
    """Walk ``inputs`` and open ``folder`` for a run of shards of
    ``shard_images`` images; with ``resume``, keep its finished shards.

    Arguments are as :func:`vlad.images.sharded.encode_images_to_folder`'s,
    already checked.
    """
    sift_options = extractor_for_codebook(codebook, descriptor_options, extractor)
    images, walk_report = walk_batch(inputs, line_breaks=True)
    n_dimensions = codebook.n_clusters * codebook.n_features
    record = {
        **vectors_record(0, inputs, codebook, sift_options.record(), options),
        "layout": "shards",
    }
    settings = run_settings(record, shard_images)
    writer = ShardWriter(folder, overwrite=overwrite, resume=resume)
    groups = [
        images[start : start + shard_images]
        for start in range(0, len(images), shard_images)
    ]
    keys = [shard_key(settings, image_identities(group)) for group in groups]
    shards = [writer.finished(i, key, n_dimensions) for i, key in enumerate(keys)]
    run = FolderRun(
        writer,
        record,
        shard_images,
        codebook,
        sift_options,
        options,
        groups,
        keys,
        shards,
        walk_report,
    )
    if len(run.todo) < len(groups):
        n_kept = len(groups) - len(run.todo)
        logger.info(
            "kept %d finished shard%s of %d",
            n_kept,
            "" if n_kept == 1 else "s",
            len(groups),
        )
    return run


def encode_shard(
    results: Iterator,
    n_images: int,
    codebook: Codebook,
    options: EncodingOptions,
    n_jobs: int | None,
) -> tuple[np.ndarray, BatchReport]:
    """The vectors of the next ``n_images`` of ``results`` (the readable ones),
    and their report; descriptors are held a chunk at a time.

    Parameters
    ----------
    results : iterator of (ImageFile, features or ImageReadError)
        As :func:`vlad.images.batch.extract_in_order` yields them.
    n_images : int
        How many of ``results`` the shard covers.
    codebook, options, n_jobs
        As in :func:`vlad.encode`.

    Returns
    -------
    vectors : ndarray of shape (n_rows, K * F)
        float32, one row per readable image.
    report : BatchReport
        Their names, and the images skipped or empty.
    """
    report = BatchReport(n_images, [], {}, [])
    n_dimensions = codebook.n_clusters * codebook.n_features
    vectors = np.zeros((n_images, n_dimensions), np.float32)
    for start in range(0, n_images, ENCODE_CHUNK_IMAGES):
        first = len(report.names)
        size = min(ENCODE_CHUNK_IMAGES, n_images - start)
        part = list(itertools.islice(results, size))
        blocks = [descriptors for _, descriptors in keep_readable(part, report)]
        if blocks:
            sets = DescriptorSets.from_list(blocks, n_features=codebook.n_features)
            vectors[first : first + len(blocks)] = encode(
                sets, codebook, options, n_jobs=n_jobs
            )
    return vectors[: len(report.names)], report


def shard_record(key: str, report: BatchReport) -> dict:
    """The record written beside a shard's vectors."""
    return {
        "key": key,
        "names": report.names,
        "skipped": [{"name": n, "reason": r} for n, r in report.skipped.items()],
        "empty": report.empty,
    }


def commit_folder_run(run: FolderRun, inputs: PathOrPaths) -> ShardedVectors:
    """Write the manifest of a run whose shards are all written, and open it.

    Raises
    ------
    ValueError
        None of the images could be read.
    """
    n_rows = [len(shard["names"]) for shard in run.shards]
    if not sum(n_rows):
        shown = ", ".join(str(path) for path in path_list(inputs))
        raise ValueError(f"none of the {run.n_images} images in {shown} could be read")
    skipped = [
        {"name": name, "reason": reason}
        for name, reason in run.walk_report.skipped.items()
    ] + [entry for shard in run.shards for entry in shard["skipped"]]
    empty = [name for shard in run.shards for name in shard["empty"]]
    run.writer.commit(
        {
            **run.record,
            "shape": [sum(n_rows), run.record["shape"][1]],
            "n_found": run.walk_report.n_found,
            "n_images": sum(n_rows),
            "n_skipped": len(skipped),
            "n_empty": len(empty),
            "skipped": skipped,
            "empty": empty,
            "shard_images": run.shard_images,
            "shards": [
                {"n_rows": rows, "key": key}
                for rows, key in zip(n_rows, run.keys, strict=True)
            ],
        }
    )
    return open_shards(run.writer.folder)


def run_settings(record: dict, shard_images: int) -> dict:
    """What every shard of a run shares: the codebook and the options."""
    fields = ("codebook", "descriptor", "encoding")
    return {
        **{field: record.get(field) for field in fields},
        "shard_images": shard_images,
    }


def image_identities(images: list[ImageFile]) -> list:
    """Each image's name, size and modification time (None if gone)."""
    identities = []
    for image in images:
        try:
            status = os.stat(image.path)
            identities.append([image.name, status.st_size, status.st_mtime_ns])
        except OSError:
            identities.append([image.name, None, None])
    return identities
