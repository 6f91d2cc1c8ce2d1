"""The kinds of shards of VLAD vectors: of images, read and encoded a shard at
a time, and of a descriptors file or folder, encoded a shard at a time; their
rows stacked in memory, or written to ``.npy`` or hloc's ``.h5``."""

from __future__ import annotations

import abc
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
from vlad.formats._hloc_global import write_global_features
from vlad.formats._shards import MANIFEST_NAME, ShardedVectors, open_shards
from vlad.formats._vectors import save_vectors, vector_file_paths
from vlad.images._extractors import Extractor
from vlad.pipeline._batch import BatchReport, PathOrPaths, keep_readable, path_list
from vlad.pipeline._cluster import worker_codebook
from vlad.pipeline._encoding import ENCODE_CHUNK_IMAGES, EncodedImages, vectors_record
from vlad.pipeline._image_shards import ImageShardKind
from vlad.pipeline._shard_runs import ShardKind, ShardRun
from vlad.pipeline._sinks import OutputFile, Shard, stack_rows

__all__ = [
    "DescriptorFileVectors",
    "ImageVectors",
    "VECTOR_FILES",
    "VectorKind",
    "encode_shard",
    "run_settings",
    "shard_record",
]


def _file_writer(save: Any) -> Any:
    """``write(result, path, overwrite=...)``: an :class:`EncodedImages`'s
    vectors, names and record saved by ``save`` (:func:`save_vectors`'s
    signature)."""

    def write(result: EncodedImages, path: Any, *, overwrite: bool) -> None:
        save(path, result.vectors, result.names, result.record(), overwrite=overwrite)

    return write


#: The files VLAD vectors are written to: ``NAME.npy`` with ``NAME.names.txt``
#: and ``NAME.json`` beside it, and hloc's global features.
VECTOR_FILES = {
    ".npy": OutputFile(vector_file_paths, _file_writer(save_vectors)),
    ".h5": OutputFile(lambda path: (path,), _file_writer(write_global_features)),
}


class VectorKind(ShardKind):
    """What the kinds of shards of VLAD vectors share: a row per image of
    ``n_clusters * n_features`` float32 values, and their files.

    Subclasses set ``inputs``, ``codebook`` and ``options``, and
    :meth:`batch_report` and :meth:`descriptor_record`.
    """

    inputs: PathOrPaths
    codebook: Codebook | None
    options: EncodingOptions
    noun = "vector"
    files = VECTOR_FILES

    @property
    def n_columns(self) -> int:
        """``n_clusters * n_features``."""
        return self.codebook.n_clusters * self.codebook.n_features

    def open(self, folder: str | os.PathLike) -> ShardedVectors:
        """:func:`vlad.formats.open_shards`."""
        return open_shards(folder)

    def stack(self, shards: list[Shard]) -> np.ndarray:
        """The shards' vectors, one after the other."""
        return stack_rows([shard.array for shard in shards], self.n_columns)

    def result(self, run: ShardRun, rows: Any) -> EncodedImages:
        """The vectors (an array, or a folder opened), their images' report
        and how they were made."""
        return EncodedImages(
            rows,
            self.batch_report(run),
            self.codebook,
            [str(path) for path in path_list(self.inputs)],
            self.descriptor_record(),
            self.options,
        )

    @abc.abstractmethod
    def batch_report(self, run: ShardRun) -> BatchReport:
        """What became of the run's images."""

    @abc.abstractmethod
    def descriptor_record(self) -> dict:
        """How the descriptors were made."""


@dataclasses.dataclass
class ImageVectors(ImageShardKind, VectorKind):
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

    def descriptor_record(self) -> dict:
        """The extractor's record."""
        return self.extractor.record()

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
class DescriptorFileVectors(VectorKind):
    """Shards of the VLAD vectors of a descriptors file or folder, read and
    encoded a shard at a time; its items are image indices."""

    inputs: PathOrPaths
    sets: Any
    report: BatchReport
    codebook: Codebook
    options: EncodingOptions
    shard_images: int

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

    def batch_report(self, run: ShardRun) -> BatchReport:
        """The file's report."""
        return self.report

    def descriptor_record(self) -> dict:
        """The file's descriptor record."""
        return self.sets.metadata

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
