"""Descriptors of a large collection streamed to a folder of shards, resumable.

Images are read and described as by :func:`vlad.extract_images`, but each
shard's descriptors and keypoint positions are written as soon as its images
are described (see :mod:`vlad.formats._descriptor_shards`; the run is
:mod:`vlad.pipeline._shard_runs`'s), so memory holds one shard, however many
images there are. An interrupted run continues with
``resume=True``: shards already written by the same run (same options and
images) are kept, the others are made again, and the folder ends up the same,
byte for byte, as an uninterrupted run's. Given a Dask client, the shards are
made on its cluster instead, one task per shard
(:mod:`vlad.pipeline._cluster`), into the same bytes.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np

from vlad._version import __version__
from vlad.core._descriptors import FORMAT_VERSION, KEYPOINT_FIELDS
from vlad.core._pool import Progress
from vlad.errors import VladError, VladTypeError
from vlad.formats._descriptor_shards import (
    KEYPOINTS_ARRAY,
    ShardedDescriptorSets,
    open_descriptor_shards,
)
from vlad.images._extractors import Extractor, resolve_extractor
from vlad.pipeline._batch import (
    BatchReport,
    PathOrPaths,
    keep_readable,
    path_list,
    walk_batch,
)
from vlad.pipeline._cluster import require_client
from vlad.pipeline._image_shards import ImageShardKind
from vlad.pipeline._shard_runs import Shard, ShardRun, run_shards

__all__ = [
    "DESCRIPTOR_SHARD_IMAGES",
    "ImageDescriptors",
    "describe_shard",
    "extract_images_to_folder",
]

#: Images a descriptor shard covers by default: at the default 2000 keypoints
#: a shard holds up to 135 MB, at about 500 keypoints (photos of 320x240) 34 MB.
DESCRIPTOR_SHARD_IMAGES = 128


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
    client : distributed.Client, optional
        Make the shards on this Dask cluster, a task per shard (see
        :func:`vlad.pipeline.dask_client`); the folder is the same, byte for
        byte, as one made here.

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
    vlad.pipeline.encode_images_to_folder : The same for VLAD vectors.
    """
    if isinstance(shard_images, bool) or not isinstance(shard_images, int):
        raise VladTypeError(f"shard_images must be an int; got {shard_images!r}")
    if shard_images < 1:
        raise VladError(f"shard_images must be at least 1; got {shard_images}")
    if client is not None:
        require_client(client)
    options = resolve_extractor(descriptor_options, extractor)
    if options.n_features is None:
        raise VladError(
            "extractor: a folder of descriptor shards holds keypoints, which a "
            "callable extractor does not give; extract to an .npz file instead"
        )
    images, walk_report = walk_batch(inputs, line_breaks=True)
    kind = ImageDescriptors(
        inputs, walk_report, options, options.n_features, shard_images
    )
    return run_shards(
        kind,
        images,
        folder,
        shard_size=shard_images,
        overwrite=overwrite,
        resume=resume,
        n_jobs=n_jobs,
        progress=progress,
        client=client,
    )


@dataclasses.dataclass
class ImageDescriptors(ImageShardKind):
    """Shards of the descriptors and keypoints of images, image after image.

    Attributes
    ----------
    inputs, walk_report, extractor, width
        As :class:`vlad.pipeline._image_shards.ImageShardKind`'s (``width``:
        the extractor's ``n_features``).
    shard_images : int
    """

    inputs: PathOrPaths
    walk_report: BatchReport
    extractor: Extractor
    width: int | None
    shard_images: int
    noun = "descriptor"
    extras = {KEYPOINTS_ARRAY: len(KEYPOINT_FIELDS)}

    @property
    def settings(self) -> dict:
        """The descriptor options and the shard size."""
        return {
            "format": "descriptor sets",
            "descriptor": self.extractor.record(),
            "shard_images": self.shard_images,
        }

    @property
    def n_columns(self) -> int:
        """The descriptors' width."""
        return self.width

    def n_rows(self, record: dict) -> int:
        """The descriptors a shard's record counts."""
        return _n_descriptors(record)

    def make(
        self, results: Iterator, n_items: int, key: str, n_jobs: int | None
    ) -> Shard:
        """The descriptors and keypoints of the readable images among the next
        ``n_items``."""
        descriptors, keypoints, record = describe_shard(
            results, n_items, key, self.width
        )
        return Shard(descriptors, record, {KEYPOINTS_ARRAY: keypoints})

    def manifest(self, run: ShardRun) -> dict:
        """The options, counts, skipped and empty images, and the shards."""
        n_images, counts = self.image_counts(run)
        n_descriptors = [_n_descriptors(shard) for shard in run.shards]
        # The manifest counts descriptors after the images found and read.
        found = {field: counts.pop(field) for field in ("n_found", "n_images")}
        return {
            "format": "descriptor sets",
            "format_version": FORMAT_VERSION,
            "vlad_version": __version__,
            "layout": "shards",
            "inputs": [str(path) for path in path_list(self.inputs)],
            "descriptor": self.extractor.record(),
            "n_features": self.width,
            "keypoint_fields": list(KEYPOINT_FIELDS),
            **found,
            "n_descriptors": sum(n_descriptors),
            **counts,
            "shard_images": self.shard_images,
            "shards": [
                {"n_images": count, "n_descriptors": rows, "key": key}
                for count, rows, key in zip(
                    n_images, n_descriptors, run.keys, strict=True
                )
            ],
        }

    def open(self, folder: str | os.PathLike) -> ShardedDescriptorSets:
        """:func:`vlad.formats.open_descriptor_shards`."""
        return open_descriptor_shards(folder)


def describe_shard(
    results: Iterator, n_images: int, key: str, n_features: int
) -> tuple[np.ndarray, np.ndarray, dict]:
    """The descriptors and keypoints of the next ``n_images`` of ``results``
    (the readable ones), and the shard's record.

    Parameters
    ----------
    results : iterator of (ImageFile, features or ImageReadError)
        As :func:`vlad.pipeline._batch.extract_in_order` yields them.
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
