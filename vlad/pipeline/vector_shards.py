"""VLAD vectors of a large collection streamed to a folder of shards, resumable.

Images are read and encoded as by :func:`vlad.encode_images`, but each shard's
vectors are written as soon as they are made (see :mod:`vlad.formats.shards`; the run is
:mod:`vlad.pipeline.shard_runs`'s),
so memory holds one shard, however many images there are. An interrupted run
continues with ``resume=True``: shards already written by the same run (same
codebook, options and images) are kept, the others are made again, and the
folder ends up the same, byte for byte, as an uninterrupted run's. Given a
Dask client, the shards are made on its cluster instead
(:mod:`vlad.pipeline.cluster`), into the same bytes.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from vlad.core.aggregators import require_aggregator
from vlad.core.chunked_encoding import encode_in_chunks
from vlad.core.codebook import Codebook
from vlad.core.descriptors import DescriptorSets
from vlad.core.encoding import encode
from vlad.core.options import EncodingOptions
from vlad.core.parallel import resolve_n_jobs
from vlad.formats.descriptor_files import descriptor_file_in
from vlad.formats.shards import MANIFEST_NAME, ShardedVectors, open_shards
from vlad.images.extractors import (
    Extractor,
    check_same_kind,
    extractor_for_codebook,
)
from vlad.pipeline.batch import BatchReport, PathOrPaths, keep_readable, walk_batch
from vlad.pipeline.cluster import require_client, worker_codebook
from vlad.pipeline.encoding import ENCODE_CHUNK_IMAGES, vectors_record
from vlad.pipeline.extraction import read_descriptor_sets
from vlad.pipeline.image_shards import ImageShardKind
from vlad.pipeline.pool import Progress
from vlad.pipeline.shard_runs import Shard, ShardKind, ShardRun, run_shards

__all__ = [
    "SHARD_IMAGES",
    "DescriptorFileVectors",
    "ImageVectors",
    "check_shard_images",
    "encode_images_to_folder",
    "encode_shard",
    "run_settings",
    "shard_record",
]

#: Images a shard covers by default (a multiple of the encoding chunk, so that
#: a shard's vectors do not depend on where a run was interrupted).
SHARD_IMAGES = 16 * ENCODE_CHUNK_IMAGES


def check_shard_images(shard_images: int, name: str = "shard_images") -> None:
    """Refuse a number of images a shard of vectors cannot cover, by ``name``
    (the option's name on the command line).

    Raises
    ------
    TypeError
        Not an int.
    ValueError
        Below 1, or above :data:`ENCODE_CHUNK_IMAGES` and not a multiple of it.
    """
    if isinstance(shard_images, bool) or not isinstance(shard_images, int):
        raise TypeError(f"{name} must be an int; got {shard_images!r}")
    if shard_images < 1 or (
        shard_images > ENCODE_CHUNK_IMAGES and shard_images % ENCODE_CHUNK_IMAGES
    ):
        raise ValueError(
            f"{name} must be at least 1, and a multiple of "
            f"{ENCODE_CHUNK_IMAGES} above it; got {shard_images}"
        )


def encode_images_to_folder(
    inputs: PathOrPaths,
    codebook: Codebook | str | os.PathLike,
    folder: str | os.PathLike,
    options: EncodingOptions | None = None,
    *,
    descriptor_options: Mapping | None = None,
    extractor: Callable | str | None = None,
    n_jobs: int | None = None,
    progress: Progress | None = None,
    shard_images: int = SHARD_IMAGES,
    overwrite: bool = False,
    resume: bool = False,
    client: Any = None,
    **settings,
) -> ShardedVectors:
    """:func:`vlad.encode_images` written to a folder of shards as it goes.

    Parameters
    ----------
    inputs, codebook, options, descriptor_options, extractor, n_jobs, progress
        As in :func:`vlad.encode_images`; and ``**settings``.
    folder : path-like
        The folder of shards to write (its parent must exist).
    shard_images : int, default=SHARD_IMAGES
        Images found that each shard covers (its rows are the readable ones);
        memory holds one shard's vectors. A multiple of
        :data:`vlad.pipeline.encoding.ENCODE_CHUNK_IMAGES` when above it.
    overwrite : bool, default=False
        Replace a folder of shards that exists.
    resume : bool, default=False
        Keep the shards that an interrupted run with the same codebook,
        options and images finished, and make the others.

    Returns
    -------
    ShardedVectors
        The folder, opened (its vectors memory-mapped).

    Raises
    ------
    FileExistsError
        The folder exists, without ``overwrite`` or ``resume``.
    ValueError
        As :func:`vlad.encode_images`, or a bad ``shard_images``.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> import vlad
    >>> from vlad.pipeline import encode_images_to_folder
    >>> codebook, _ = vlad.fit_codebook_to_images("data", 4, n_jobs=1)
    >>> folder = pathlib.Path(tempfile.mkdtemp(), "vectors")
    >>> shards = encode_images_to_folder("data", codebook, folder, shard_images=3)
    >>> len(shards.blocks), shards.shape
    (3, (8, 512))
    >>> whole = vlad.encode_images("data", codebook, n_jobs=1)
    >>> np.array_equal(np.asarray(shards), whole.vectors), shards.names == whole.names
    (True, True)
    """
    check_shard_images(shard_images)
    options = EncodingOptions.resolve(options, **settings)
    resolve_n_jobs(n_jobs)
    if isinstance(options.aggregator, str):
        require_aggregator(options.aggregator)
    codebook_path = None
    if not isinstance(codebook, Codebook):
        codebook_path = os.path.abspath(codebook)
        codebook = Codebook.load(codebook)
    if descriptor_file_in(inputs) is not None:
        if client is not None:
            raise ValueError(
                "client: a Dask cluster encodes images; a descriptors file is "
                "read whole, so encode it without a client"
            )
        sets, report = read_descriptor_sets(
            inputs, descriptor_options, extractor=extractor, lazy=True
        )
        check_same_kind(sets.metadata, codebook)
        kind: ShardKind = DescriptorFileVectors(
            inputs, sets, report, codebook, options, shard_images
        )
        items: list = list(range(len(sets)))
        progress = None
    else:
        if client is not None:
            require_client(client)
        sift_options = extractor_for_codebook(codebook, descriptor_options, extractor)
        items, walk_report = walk_batch(inputs, line_breaks=True)
        kind = ImageVectors(
            inputs,
            walk_report,
            sift_options,
            codebook.n_features,
            codebook,
            codebook_path,
            options,
            shard_images,
        )
    return run_shards(
        kind,
        items,
        folder,
        shard_size=shard_images,
        overwrite=overwrite,
        resume=resume,
        n_jobs=n_jobs,
        progress=progress,
        client=client,
    )


@dataclasses.dataclass
class ImageVectors(ImageShardKind):
    """Shards of the VLAD vectors of images, each row a readable image's.

    Attributes
    ----------
    inputs, walk_report, extractor, width
        As :class:`vlad.pipeline.image_shards.ImageShardKind`'s (``width``:
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
        """:func:`vlad.formats.shards.open_shards`."""
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
        """:func:`vlad.formats.shards.open_shards`."""
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
        As :func:`vlad.pipeline.batch.extract_in_order` yields them.
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
