"""Descriptors of a large collection streamed to a folder of shards, resumable.

Images are read and described as by :func:`vlad.extract_images`, but each
shard's descriptors and keypoint positions are written as soon as its images
are described (see :mod:`vlad.formats.descriptor_shards`), so memory holds
one shard, however many images there are. An interrupted run continues with
``resume=True``: shards already written by the same run (same options and
images) are kept, the others are made again, and the folder ends up the same,
byte for byte, as an uninterrupted run's. Given a Dask client, the shards are
made on its cluster instead, one task per shard
(:func:`vlad.images.dask_encoding.run_shard_tasks`), into the same bytes.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from vlad._version import __version__
from vlad.core.descriptors import FORMAT_VERSION, KEYPOINT_FIELDS
from vlad.formats.descriptor_shards import (
    KEYPOINTS_ARRAY,
    ShardedDescriptorSets,
    open_descriptor_shards,
)
from vlad.formats.shards import ShardWriter, shard_key, write_shard
from vlad.images.batch import (
    BatchReport,
    extract_in_order,
    keep_readable,
    path_list,
    walk_batch,
)
from vlad.images.dask_encoding import require_client, run_shard_tasks
from vlad.images.extractors import Extractor, resolve_extractor
from vlad.images.files import ImageFile
from vlad.images.pool import Progress
from vlad.images.shard_runs import image_identities

__all__ = [
    "DESCRIPTOR_SHARD_IMAGES",
    "describe_shard",
    "extract_images_to_folder",
    "make_descriptor_shard",
]

logger = logging.getLogger(__name__)

#: Images a descriptor shard covers by default: at the default 2000 keypoints
#: a shard holds up to 135 MB, at about 500 keypoints (photos of 320x240) 34 MB.
DESCRIPTOR_SHARD_IMAGES = 128
PathOrPaths = str | os.PathLike | Sequence[str | os.PathLike]


def extract_images_to_folder(
    inputs: PathOrPaths,
    folder: str | os.PathLike,
    descriptor_options: Mapping | None = None,
    *,
    extractor: Callable | str | None = None,
    n_jobs: int | None = None,
    progress: Progress | None = None,
    shard_images: int = DESCRIPTOR_SHARD_IMAGES,
    overwrite: bool = False,
    resume: bool = False,
    client: Any = None,
) -> ShardedDescriptorSets:
    """:func:`vlad.extract_images` written to a folder of shards as it goes.

    Parameters
    ----------
    inputs, descriptor_options, extractor, n_jobs, progress
        As in :func:`vlad.extract_images`; but a callable ``extractor`` gives
        no keypoints, which a folder holds: refused (write an ``.npz``).
    folder : path-like
        The folder of shards to write (its parent must exist).
    shard_images : int, default=DESCRIPTOR_SHARD_IMAGES
        Images found that each shard covers (its images are the readable
        ones); memory holds one shard's descriptors.
    overwrite : bool, default=False
        Replace a folder of shards that exists.
    resume : bool, default=False
        Keep the shards that an interrupted run with the same options and
        images finished, and make the others.

    Returns
    -------
    ShardedDescriptorSets
        The folder, opened (a shard is read when one of its images is).

    Raises
    ------
    FileExistsError
        The folder exists, without ``overwrite`` or ``resume``.
    ValueError
        As :func:`vlad.extract_images`, or a bad ``shard_images``.
    TypeError
        ``client`` is not a ``distributed.Client``.
    RuntimeError
        A shard's task killed every Dask worker it ran on.

    See Also
    --------
    vlad.images.sharded.encode_images_to_folder : The same for VLAD vectors.
    """
    if isinstance(shard_images, bool) or not isinstance(shard_images, int):
        raise TypeError(f"shard_images must be an int; got {shard_images!r}")
    if shard_images < 1:
        raise ValueError(f"shard_images must be at least 1; got {shard_images}")
    if client is not None:
        require_client(client)
    options = resolve_extractor(descriptor_options, extractor)
    if options.n_features is None:
        raise ValueError(
            "extractor: a folder of descriptor shards holds keypoints, which a "
            "callable extractor does not give; extract to an .npz file instead"
        )
    run = _plan(inputs, folder, options, shard_images, overwrite, resume)
    if client is not None:
        run_shard_tasks(
            client,
            make_descriptor_shard,
            run.writer.folder,
            run.groups,
            run.keys,
            run.shards,
            (options,),
            progress=progress,
        )
        return _commit(run, inputs)
    todo = [index for index, shard in enumerate(run.shards) if shard is None]
    n_images = sum(len(group) for group in run.groups)
    n_kept = n_images - sum(len(run.groups[index]) for index in todo)
    results = extract_in_order(
        [image for index in todo for image in run.groups[index]],
        options,
        n_jobs,
        None
        if progress is None
        else lambda done, total: progress(done + n_kept, n_images),
        n_features=options.n_features,
    )
    for index in todo:
        descriptors, keypoints, run.shards[index] = describe_shard(
            results, len(run.groups[index]), run.keys[index], options.n_features
        )
        run.writer.write(
            index, descriptors, run.shards[index], extras={KEYPOINTS_ARRAY: keypoints}
        )
        del descriptors, keypoints
    return _commit(run, inputs)


def describe_shard(
    results: Iterator, n_images: int, key: str, n_features: int
) -> tuple[np.ndarray, np.ndarray, dict]:
    """The descriptors and keypoints of the next ``n_images`` of ``results``
    (the readable ones), and the shard's record.

    Parameters
    ----------
    results : iterator of (ImageFile, features or ImageReadError)
        As :func:`vlad.images.batch.extract_in_order` yields them.
    n_images : int
        How many of ``results`` the shard covers.
    key : str
        The shard's key.
    n_features : int
        The descriptors' width.

    Returns
    -------
    descriptors : ndarray of shape (n_descriptors, n_features)
        float32, the readable images' descriptors one after the other.
    keypoints : ndarray of shape (n_descriptors, len(KEYPOINT_FIELDS))
        float32, their keypoints.
    record : dict
        ``{"key", "names", "lengths", "skipped", "empty"}``, as written
        beside the descriptors.
    """
    report = BatchReport(n_images, [], {}, [])
    features = keep_readable(itertools.islice(results, n_images), report)
    lengths = [len(descriptors) for _, descriptors in features]
    keypoints = _stack([block for block, _ in features], len(KEYPOINT_FIELDS))
    descriptors = _stack([block for _, block in features], n_features, features)
    record = {
        "key": key,
        "names": report.names,
        "lengths": lengths,
        "skipped": [{"name": n, "reason": r} for n, r in report.skipped.items()],
        "empty": report.empty,
    }
    return descriptors, keypoints, record


def make_descriptor_shard(
    folder: str, index: int, key: str, images: list[ImageFile], options: Extractor
) -> dict:
    """The task of a Dask worker: describe ``images`` on this thread, write
    them as shard ``index`` of ``folder`` and return the shard's record.

    Parameters
    ----------
    folder : str
        The folder of shards (absolute).
    index : int
    key : str
        The shard's key (see :func:`vlad.formats.shards.shard_key`).
    images : list of ImageFile
        The shard's images, with absolute paths.
    options : SiftOptions
        The descriptors to make (their ``n_features`` known).

    Returns
    -------
    dict
        As :func:`describe_shard` gives it, and writes beside the descriptors.
    """
    results = extract_in_order(images, options, 1, None, n_features=options.n_features)
    descriptors, keypoints, record = describe_shard(
        results, len(images), key, options.n_features
    )
    write_shard(folder, index, descriptors, record, extras={KEYPOINTS_ARRAY: keypoints})
    return record


@dataclasses.dataclass
class _Run:
    """A run into a folder of descriptor shards (as
    :class:`vlad.images.shard_runs.FolderRun` is for vectors)."""

    writer: ShardWriter
    options: Extractor
    shard_images: int
    groups: list[list[ImageFile]]
    keys: list[str]
    shards: list[dict | None]
    walk_report: BatchReport


def _plan(
    inputs: PathOrPaths,
    folder: str | os.PathLike,
    options: Extractor,
    shard_images: int,
    overwrite: bool,
    resume: bool,
) -> _Run:
    """Walk ``inputs``, open ``folder`` and keep its finished shards if
    resumed."""
    images, walk_report = walk_batch(inputs, line_breaks=True)
    settings = {
        "format": "descriptor sets",
        "descriptor": options.record(),
        "shard_images": shard_images,
    }
    writer = ShardWriter(folder, overwrite=overwrite, resume=resume, kind="descriptor")
    groups = [
        images[start : start + shard_images]
        for start in range(0, len(images), shard_images)
    ]
    keys = [shard_key(settings, image_identities(group)) for group in groups]
    shards = [
        writer.finished(
            index,
            key,
            options.n_features,
            n_rows=_n_descriptors,
            extras={KEYPOINTS_ARRAY: len(KEYPOINT_FIELDS)},
        )
        for index, key in enumerate(keys)
    ]
    n_kept = sum(shard is not None for shard in shards)
    if n_kept:
        logger.info(
            "kept %d finished shard%s of %d",
            n_kept,
            "" if n_kept == 1 else "s",
            len(groups),
        )
    return _Run(writer, options, shard_images, groups, keys, shards, walk_report)


def _commit(run: _Run, inputs: PathOrPaths) -> ShardedDescriptorSets:
    """Write the manifest of a run whose shards are all written, and open it."""
    n_images = [len(shard["names"]) for shard in run.shards]
    if not sum(n_images):
        shown = ", ".join(str(path) for path in path_list(inputs))
        n_found = sum(len(group) for group in run.groups)
        raise ValueError(f"none of the {n_found} images in {shown} could be read")
    skipped = [
        {"name": name, "reason": reason}
        for name, reason in run.walk_report.skipped.items()
    ] + [entry for shard in run.shards for entry in shard["skipped"]]
    empty = [name for shard in run.shards for name in shard["empty"]]
    n_descriptors = [_n_descriptors(shard) for shard in run.shards]
    run.writer.commit(
        {
            "format": "descriptor sets",
            "format_version": FORMAT_VERSION,
            "vlad_version": __version__,
            "layout": "shards",
            "inputs": [str(path) for path in path_list(inputs)],
            "descriptor": run.options.record(),
            "n_features": run.options.n_features,
            "keypoint_fields": list(KEYPOINT_FIELDS),
            "n_found": run.walk_report.n_found,
            "n_images": sum(n_images),
            "n_descriptors": sum(n_descriptors),
            "n_skipped": len(skipped),
            "n_empty": len(empty),
            "skipped": skipped,
            "empty": empty,
            "shard_images": run.shard_images,
            "shards": [
                {"n_images": count, "n_descriptors": rows, "key": key}
                for count, rows, key in zip(
                    n_images, n_descriptors, run.keys, strict=True
                )
            ],
        }
    )
    return open_descriptor_shards(run.writer.folder)


def _n_descriptors(record: dict) -> int:
    """The descriptors a shard's record counts."""
    return sum(int(length) for length in record["lengths"])


def _stack(blocks: list, n_columns: int, owners: list | None = None) -> np.ndarray:
    """``blocks`` stacked as one float32 ``(n, n_columns)`` array; each block
    is dropped (from ``blocks`` and from ``owners``, the list of pairs that
    holds it) once copied, so that memory holds a shard about once."""
    n_rows = sum(len(block) for block in blocks)
    stacked = np.empty((n_rows, n_columns), np.float32)
    start = 0
    for index in range(len(blocks)):
        block = blocks[index]
        blocks[index] = None
        if owners is not None:
            owners[index] = None
        stacked[start : start + len(block)] = np.reshape(block, (-1, n_columns))
        start += len(block)
    return stacked
