"""The kind of shards of descriptors and keypoints of images: a shard's images
described, its rows stacked in memory, written to an ``.npz``, or to a folder
of shards (see :mod:`vlad.formats._descriptor_shards`).

A run of them is :func:`vlad.extract_images`' (the engine is
:mod:`vlad.pipeline._shard_runs`'): into a folder, each shard is written as
soon as its images are described, so memory holds one shard, however many
images there are; an interrupted run continues with ``resume=True``, keeping
the shards the same run (same options and images) finished, into the same
bytes; given a Dask client, the shards are made on its cluster, one task per
shard (:mod:`vlad.pipeline._cluster`), into the same bytes.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
from collections.abc import Callable, Iterator, Mapping

import numpy as np

from vlad._version import __version__
from vlad.core._descriptors import FORMAT_VERSION, KEYPOINT_FIELDS, DescriptorSets
from vlad.errors import VladError, VladTypeError
from vlad.formats._descriptor_shards import (
    KEYPOINTS_ARRAY,
    ShardedDescriptorSets,
    open_descriptor_shards,
)
from vlad.images._extractors import Extractor, resolve_extractor
from vlad.images._files import ImageFile
from vlad.pipeline._batch import (
    BatchReport,
    PathOrPaths,
    keep_readable,
    path_list,
    walk_batch,
)
from vlad.pipeline._image_shards import ImageShardKind
from vlad.pipeline._shard_runs import ShardRun
from vlad.pipeline._sinks import OutputFile, Shard, stack_rows

__all__ = [
    "DESCRIPTOR_SHARD_IMAGES",
    "ImageDescriptors",
    "describe_shard",
    "descriptor_kind",
]

#: Images a descriptor shard covers by default: at the default 2000 keypoints
#: a shard holds up to 135 MB, at about 500 keypoints (photos of 320x240) 34 MB.
DESCRIPTOR_SHARD_IMAGES = 128


def descriptor_kind(
    inputs: PathOrPaths,
    descriptor_options: Mapping | None,
    extractor: Callable | str | None,
    shard_images: int,
    *,
    keeps_shards: bool,
    line_breaks: bool,
) -> tuple[ImageDescriptors, list[ImageFile]]:
    """The kind of a run extracting the descriptors of ``inputs``, and the
    images found; ``keeps_shards``: its shards are written (to a folder, or
    staged to resume or for Dask workers), which needs keypoints.

    Raises
    ------
    TypeError, ValueError
        A bad ``shard_images``, bad options, or a callable extractor for a
        run that keeps its shards.
    """
    if isinstance(shard_images, bool) or not isinstance(shard_images, int):
        raise VladTypeError(f"shard_images must be an int; got {shard_images!r}")
    if shard_images < 1:
        raise VladError(f"shard_images must be at least 1; got {shard_images}")
    options = resolve_extractor(descriptor_options, extractor)
    if keeps_shards and options.n_features is None:
        raise VladError(
            "extractor: a folder of descriptor shards (or a run resumed or made "
            "on a Dask cluster) holds keypoints, which a callable extractor does "
            "not give; extract to an .npz file instead, without them"
        )
    images, walk_report = walk_batch(inputs, line_breaks=line_breaks)
    kind = ImageDescriptors(
        inputs, walk_report, options, options.n_features, shard_images
    )
    return kind, images


def _write_sets(result: tuple, path, *, overwrite: bool) -> None:
    """Write the descriptor sets of a run's ``result`` to an ``.npz``."""
    result[0].save(path, overwrite=overwrite)


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
    files = {".npz": OutputFile(lambda path: (path,), _write_sets)}

    @property
    def extras(self) -> dict[str, int]:
        """The keypoints' columns, by name (none from a callable extractor)."""
        if self.width is None:
            return {}
        return {KEYPOINTS_ARRAY: len(KEYPOINT_FIELDS)}

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
        extras = {} if keypoints is None else {KEYPOINTS_ARRAY: keypoints}
        return Shard(descriptors, record, extras)

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

    def stack(self, shards: list[Shard]) -> DescriptorSets:
        """The shards' descriptor sets, one after the other."""
        blocks = [shard.array for shard in shards]
        width = _width(blocks, self.width)
        names = [name for shard in shards for name in shard.record["names"]]
        lengths = [int(n) for shard in shards for n in shard.record["lengths"]]
        keypoints = None
        if self.extras:
            keypoints = stack_rows(
                [shard.extras[KEYPOINTS_ARRAY] for shard in shards],
                len(KEYPOINT_FIELDS),
            )
        descriptors = stack_rows(blocks, width)
        offsets = np.zeros(len(lengths) + 1, np.int64)
        np.cumsum(lengths, out=offsets[1:])
        return DescriptorSets(
            descriptors,
            offsets,
            names,
            self.extractor.record(),
            keypoints=keypoints,
        )

    def result(
        self, run: ShardRun, rows: DescriptorSets | ShardedDescriptorSets
    ) -> tuple[DescriptorSets | ShardedDescriptorSets, BatchReport]:
        """The descriptor sets (in memory, or a folder opened) and what became
        of the images."""
        return rows, self.batch_report(run)


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
    n_features : int or None
        The descriptors' width; None for a callable extractor's, whose width
        is its descriptors' and whose images have no keypoints.

    Returns
    -------
    descriptors : ndarray of shape (n_descriptors, n_features)
        float32, the readable images' descriptors one after the other.
    keypoints : ndarray of shape (n_descriptors, len(KEYPOINT_FIELDS)) or None
        float32, their keypoints (None for a callable extractor's).
    record : dict
        ``{"key", "names", "lengths", "skipped", "empty"}``, as written
        beside the descriptors.
    """
    report = BatchReport(n_images, [], {}, [])
    features = keep_readable(itertools.islice(results, n_images), report)
    lengths = [len(descriptors) for _, descriptors in features]
    keypoints = None
    if n_features is not None:
        keypoints = stack_rows([block for block, _ in features], len(KEYPOINT_FIELDS))
    blocks = [block for _, block in features]
    # Each block is held once, by ``blocks``, which drops it once copied.
    features.clear()
    descriptors = stack_rows(blocks, _width(blocks, n_features))
    record = {
        "key": key,
        "names": report.names,
        "lengths": lengths,
        "skipped": [{"name": n, "reason": r} for n, r in report.skipped.items()],
        "empty": report.empty,
    }
    return descriptors, keypoints, record


def _width(blocks: list[np.ndarray], n_features: int | None) -> int:
    """``n_features``, or when None (a callable extractor's) the width of the
    first 2-D block (0 if none is)."""
    if n_features is not None:
        return n_features
    return next((block.shape[1] for block in blocks if block.ndim == 2), 0)


def _n_descriptors(record: dict) -> int:
    """The descriptors a shard's record counts."""
    return sum(int(length) for length in record["lengths"])
