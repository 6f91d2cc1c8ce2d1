"""The kinds of shards of VLAD vectors: of images, read and encoded a shard at
a time, and of a descriptors file or folder, encoded a shard at a time."""

from __future__ import annotations

import dataclasses
import functools
import itertools
import os
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from vlad.core._chunked_encoding import encode_in_chunks
from vlad.core._codebook import Codebook
from vlad.core._descriptors import DescriptorSets
from vlad.core._encoding import encode
from vlad.core._options import EncodingOptions
from vlad.core._pool import Progress
from vlad.formats._descriptor_files import descriptor_file_in
from vlad.formats._shards import MANIFEST_NAME, ShardedVectors, open_shards
from vlad.images._extractors import Extractor
from vlad.pipeline._batch import BatchReport, PathOrPaths, keep_readable
from vlad.pipeline._cluster import worker_codebook
from vlad.pipeline._encoding import ENCODE_CHUNK_IMAGES, vectors_record
from vlad.pipeline._image_shards import ImageShardKind
from vlad.pipeline._shard_runs import Shard, ShardKind, ShardRun

__all__ = [
    "DescriptorFileVectors",
    "ImageVectors",
    "encode_shard",
    "run_settings",
    "shard_record",
]


@dataclasses.dataclass
class ImageVectors(ImageShardKind):
    """Shards of the VLAD vectors of images, each row a readable image's.

    Attributes
    ----------
    inputs, walk_report, extractor, width
        As :class:`vlad.pipeline._image_shards.ImageShardKind`'s (``width``:
        the codebook's).
    codebook : Codebook or None
        None while sent to Dask workers, which read or receive it once.
    codebook_path : str or None
        The codebook's file, which the workers then read themselves.
    options : EncodingOptions
    shard_images : int
    """

    inputs: PathOrPaths
    walk_report: BatchReport
    extractor: Extractor
    width: int | None
    codebook: Codebook | None
    codebook_path: str | None
    options: EncodingOptions
    shard_images: int
    noun = "vector"

    @functools.cached_property
    def record(self) -> dict:
        """The manifest, less what the shards tell (counts, skipped, empty)."""
        return {
            **vectors_record(
                0, self.inputs, self.codebook, self.extractor.record(), self.options
            ),
            "layout": "shards",
        }

    @property
    def settings(self) -> dict:
        """The codebook, the options and the shard size."""
        return run_settings(self.record, self.shard_images)

    @property
    def n_columns(self) -> int:
        """``n_clusters * n_features``."""
        return self.codebook.n_clusters * self.codebook.n_features

    def make(
        self, results: Iterator, n_items: int, key: str, n_jobs: int | None
    ) -> Shard:
        """The vectors of the readable images among the next ``n_items``."""
        vectors, report = encode_shard(
            results, n_items, self.codebook, self.options, n_jobs
        )
        return Shard(vectors, shard_record(key, report))

    def manifest(self, run: ShardRun) -> dict:
        """The record, counts, skipped and empty images, and the shards."""
        record = self.record
        n_rows, counts = self.image_counts(run)
        return {
            **record,
            "shape": [sum(n_rows), record["shape"][1]],
            **counts,
            "shard_images": self.shard_images,
            "shards": [
                {"n_rows": rows, "key": key}
                for rows, key in zip(n_rows, run.keys, strict=True)
            ],
        }

    def open(self, folder: str | os.PathLike) -> ShardedVectors:
        """:func:`vlad.formats.open_shards`."""
        return open_shards(folder)

    def for_cluster(self, client: Any) -> tuple[ShardKind, tuple]:
        """This kind without its codebook, and the codebook's file and
        fingerprint (or the codebook scattered to every worker)."""
        if self.codebook_path is not None:
            source: Any = (self.codebook_path, self.codebook.fingerprint)
        else:
            source = client.scatter(self.codebook, broadcast=True, hash=False)
        return dataclasses.replace(self, codebook=None), (source,)

    def on_worker(self, source: Any) -> ShardKind:
        """This kind with the codebook, loaded once per worker process."""
        if not isinstance(source, Codebook):
            source = worker_codebook(*source)
        return dataclasses.replace(self, codebook=source)


@dataclasses.dataclass
class DescriptorFileVectors(ShardKind):
    """Shards of the VLAD vectors of a descriptors file or folder, read and
    encoded a shard at a time; its items are image indices."""

    inputs: PathOrPaths
    sets: Any
    report: BatchReport
    codebook: Codebook
    options: EncodingOptions
    shard_images: int
    noun = "vector"

    @property
    def settings(self) -> dict:
        """The codebook, the descriptors, the options and the file read."""
        source = descriptor_file_in(self.inputs)
        if source.is_dir():
            source = source / MANIFEST_NAME
        status = source.stat()
        return {
            **run_settings(
                {
                    "codebook": {"fingerprint": self.codebook.fingerprint},
                    "descriptor": self.sets.metadata,
                    "encoding": self.options.record(),
                },
                self.shard_images,
            ),
            "descriptors": [str(source), status.st_size, status.st_mtime_ns],
        }

    @property
    def n_columns(self) -> int:
        """``n_clusters * n_features``."""
        return self.codebook.n_clusters * self.codebook.n_features

    def identities(self, items: list[int]) -> list:
        """The images' names."""
        return [self.report.names[index] for index in items]

    def stream(
        self, items: Sequence[int], n_jobs: int | None, progress: Progress | None
    ) -> Iterator:
        """The indices themselves: :meth:`make` reads the descriptors."""
        return iter(items)

    def make(
        self, results: Iterator, n_items: int, key: str, n_jobs: int | None
    ) -> Shard:
        """The vectors of the next ``n_items`` images."""
        indices = list(itertools.islice(results, n_items))
        start, stop = indices[0], indices[-1] + 1
        names = self.report.names[start:stop]
        empty = set(self.report.empty)
        vectors = encode_in_chunks(
            self.sets,
            self.codebook,
            self.options,
            chunk_images=ENCODE_CHUNK_IMAGES,
            n_jobs=n_jobs,
            start=start,
            stop=stop,
        )
        record = {
            "key": key,
            "names": names,
            "skipped": [],
            "empty": [name for name in names if name in empty],
        }
        return Shard(vectors, record)

    def manifest(self, run: ShardRun) -> dict:
        """The file's record and report, and the shards."""
        return {
            **vectors_record(
                len(self.sets),
                self.inputs,
                self.codebook,
                self.sets.metadata,
                self.options,
            ),
            **self.report.record(),
            "layout": "shards",
            "shards": [
                {"n_rows": len(group), "key": key}
                for group, key in zip(run.groups, run.keys, strict=True)
            ],
        }

    def open(self, folder: str | os.PathLike) -> ShardedVectors:
        """:func:`vlad.formats.open_shards`."""
        return open_shards(folder)


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
        As :func:`vlad.pipeline._batch.extract_in_order` yields them.
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


def run_settings(record: dict, shard_images: int) -> dict:
    """What every shard of a run shares: the codebook and the options."""
    fields = ("codebook", "descriptor", "encoding")
    return {
        **{field: record.get(field) for field in fields},
        "shard_images": shard_images,
    }
