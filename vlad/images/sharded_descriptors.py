"""Descriptors of a large collection streamed to a folder of shards, resumable.

Images are read and described as by :func:`vlad.extract_images`, but each
shard's descriptors and keypoint positions are written as soon as its images
are described (see :mod:`vlad.formats.descriptor_shards`), so memory holds
one shard, however many images there are. An interrupted run continues with
``resume=True``: shards already written by the same run (same options and
images) are kept, the others are made again, and the folder ends up the same,
byte for byte, as an uninterrupted run's.
"""

from __future__ import annotations

import itertools
import logging
import os
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from vlad._version import __version__
from vlad.core.descriptors import FORMAT_VERSION, KEYPOINT_FIELDS
from vlad.formats.descriptor_shards import (
    KEYPOINTS_ARRAY,
    ShardedDescriptorSets,
    open_descriptor_shards,
)
from vlad.formats.shards import ShardWriter, shard_key
from vlad.images.batch import (
    BatchReport,
    extract_in_order,
    keep_readable,
    path_list,
    walk_batch,
)
from vlad.images.extractors import resolve_extractor
from vlad.images.pool import Progress
from vlad.images.shard_runs import image_identities

__all__ = ["DESCRIPTOR_SHARD_IMAGES", "extract_images_to_folder"]

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

    See Also
    --------
    vlad.images.sharded.encode_images_to_folder : The same for VLAD vectors.
    """
    if isinstance(shard_images, bool) or not isinstance(shard_images, int):
        raise TypeError(f"shard_images must be an int; got {shard_images!r}")
    if shard_images < 1:
        raise ValueError(f"shard_images must be at least 1; got {shard_images}")
    options = resolve_extractor(descriptor_options, extractor)
    n_features = options.n_features
    if n_features is None:
        raise ValueError(
            "extractor: a folder of descriptor shards holds keypoints, which a "
            "callable extractor does not give; extract to an .npz file instead"
        )
    images, walk_report = walk_batch(inputs, line_breaks=True)
    run = {
        "format": "descriptor sets",
        "descriptor": options.record(),
        "shard_images": shard_images,
    }
    writer = ShardWriter(folder, overwrite=overwrite, resume=resume, kind="descriptor")
    groups = [
        images[start : start + shard_images]
        for start in range(0, len(images), shard_images)
    ]
    keys = [shard_key(run, image_identities(group)) for group in groups]
    shards = [
        writer.finished(
            index,
            key,
            n_features,
            n_rows=_n_descriptors,
            extras={KEYPOINTS_ARRAY: len(KEYPOINT_FIELDS)},
        )
        for index, key in enumerate(keys)
    ]
    todo = [index for index, shard in enumerate(shards) if shard is None]
    if len(todo) < len(groups):
        logger.info(
            "kept %d finished shards of %d", len(groups) - len(todo), len(groups)
        )
    n_kept = len(images) - sum(len(groups[index]) for index in todo)
    results = extract_in_order(
        [image for index in todo for image in groups[index]],
        options,
        n_jobs,
        None
        if progress is None
        else lambda done, total: progress(done + n_kept, len(images)),
        n_features=n_features,
    )
    for index in todo:
        report = BatchReport(len(groups[index]), [], {}, [])
        features = keep_readable(itertools.islice(results, len(groups[index])), report)
        lengths = [len(descriptors) for _, descriptors in features]
        keypoints = _stack([block for block, _ in features], len(KEYPOINT_FIELDS))
        descriptors = _stack([block for _, block in features], n_features, features)
        shards[index] = {
            "key": keys[index],
            "names": report.names,
            "lengths": lengths,
            "skipped": [{"name": n, "reason": r} for n, r in report.skipped.items()],
            "empty": report.empty,
        }
        writer.write(
            index, descriptors, shards[index], extras={KEYPOINTS_ARRAY: keypoints}
        )
        del features, descriptors, keypoints
    n_images = [len(shard["names"]) for shard in shards]
    if not sum(n_images):
        shown = ", ".join(str(path) for path in path_list(inputs))
        raise ValueError(f"none of the {len(images)} images in {shown} could be read")
    skipped = [
        {"name": name, "reason": reason} for name, reason in walk_report.skipped.items()
    ] + [entry for shard in shards for entry in shard["skipped"]]
    empty = [name for shard in shards for name in shard["empty"]]
    n_descriptors = [_n_descriptors(shard) for shard in shards]
    writer.commit(
        {
            "format": "descriptor sets",
            "format_version": FORMAT_VERSION,
            "vlad_version": __version__,
            "layout": "shards",
            "inputs": [str(path) for path in path_list(inputs)],
            "descriptor": options.record(),
            "n_features": n_features,
            "keypoint_fields": list(KEYPOINT_FIELDS),
            "n_found": walk_report.n_found,
            "n_images": sum(n_images),
            "n_descriptors": sum(n_descriptors),
            "n_skipped": len(skipped),
            "n_empty": len(empty),
            "skipped": skipped,
            "empty": empty,
            "shard_images": shard_images,
            "shards": [
                {"n_images": count, "n_descriptors": rows, "key": key}
                for count, rows, key in zip(n_images, n_descriptors, keys, strict=True)
            ],
        }
    )
    return open_descriptor_shards(folder)


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
