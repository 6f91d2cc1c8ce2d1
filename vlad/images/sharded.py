"""VLAD vectors of a large collection streamed to a folder of shards, resumable.

Images are read and encoded as by :func:`vlad.encode_images`, but each shard's
vectors are written as soon as they are made (see :mod:`vlad.formats.shards`),
so memory holds one shard, however many images there are. An interrupted run
continues with ``resume=True``: shards already written by the same run (same
codebook, options and images) are kept, the others are made again, and the
folder ends up the same, byte for byte, as an uninterrupted run's. Given a
Dask client, the shards are made on its cluster instead
(:mod:`vlad.images.dask_encoding`), into the same bytes.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from vlad.core.aggregators import require_aggregator
from vlad.core.chunked_encoding import encode_in_chunks
from vlad.core.codebook import Codebook
from vlad.core.options import EncodingOptions
from vlad.core.parallel import resolve_n_jobs
from vlad.formats.descriptor_files import descriptor_file_in
from vlad.formats.shards import (
    MANIFEST_NAME,
    ShardedVectors,
    ShardWriter,
    open_shards,
    shard_key,
)
from vlad.images.batch import (
    ENCODE_CHUNK_IMAGES,
    check_same_kind,
    extract_in_order,
    read_descriptor_sets,
    vectors_record,
)
from vlad.images.dask_encoding import encode_shards_on_cluster
from vlad.images.pool import Progress
from vlad.images.shard_runs import (
    commit_folder_run,
    encode_shard,
    plan_folder_run,
    run_settings,
    shard_record,
)

__all__ = ["SHARD_IMAGES", "encode_images_to_folder"]

#: Images a shard covers by default (a multiple of the encoding chunk, so that
#: a shard's vectors do not depend on where a run was interrupted).
SHARD_IMAGES = 16 * ENCODE_CHUNK_IMAGES
PathOrPaths = str | os.PathLike | Sequence[str | os.PathLike]


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
        :data:`vlad.images.batch.ENCODE_CHUNK_IMAGES` when above it.
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
    >>> from vlad.images.sharded import encode_images_to_folder
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
        return _encode_descriptors_to_folder(
            inputs,
            codebook,
            folder,
            options,
            descriptor_options=descriptor_options,
            extractor=extractor,
            n_jobs=n_jobs,
            shard_images=shard_images,
            overwrite=overwrite,
            resume=resume,
        )
    run = plan_folder_run(
        inputs,
        codebook,
        folder,
        options,
        descriptor_options=descriptor_options,
        extractor=extractor,
        shard_images=shard_images,
        overwrite=overwrite,
        resume=resume,
    )
    if client is not None:
        encode_shards_on_cluster(run, client, codebook=codebook_path, progress=progress)
        return commit_folder_run(run, inputs)
    todo = run.todo
    n_kept = run.n_images - sum(len(run.groups[i]) for i in todo)
    results = extract_in_order(
        [image for i in todo for image in run.groups[i]],
        run.sift_options,
        n_jobs,
        None
        if progress is None
        else lambda done, total: progress(done + n_kept, run.n_images),
        n_features=codebook.n_features,
    )
    for index in todo:
        vectors, report = encode_shard(
            results, len(run.groups[index]), codebook, options, n_jobs
        )
        run.shards[index] = shard_record(run.keys[index], report)
        run.writer.write(index, vectors, run.shards[index])
    return commit_folder_run(run, inputs)


def _encode_descriptors_to_folder(
    inputs: PathOrPaths,
    codebook: Codebook,
    folder: str | os.PathLike,
    options: EncodingOptions,
    *,
    descriptor_options: Mapping | None,
    extractor: Callable | str | None,
    n_jobs: int | None,
    shard_images: int,
    overwrite: bool,
    resume: bool,
) -> ShardedVectors:
    """:func:`encode_images_to_folder` of a descriptors file or folder, read
    and encoded a shard at a time."""
    sets, report = read_descriptor_sets(
        inputs, descriptor_options, extractor=extractor, lazy=True
    )
    check_same_kind(sets.metadata, codebook)
    n_dimensions = codebook.n_clusters * codebook.n_features
    source = descriptor_file_in(inputs)
    if source.is_dir():
        source = source / MANIFEST_NAME
    status = source.stat()
    run = {
        **run_settings(
            {
                "codebook": {"fingerprint": codebook.fingerprint},
                "descriptor": sets.metadata,
                "encoding": options.record(),
            },
            shard_images,
        ),
        "descriptors": [str(source), status.st_size, status.st_mtime_ns],
    }
    writer = ShardWriter(folder, overwrite=overwrite, resume=resume)
    entries = []
    empty = set(report.empty)
    for index, start in enumerate(range(0, len(sets), shard_images)):
        stop = min(len(sets), start + shard_images)
        names = report.names[start:stop]
        key = shard_key(run, names)
        if writer.finished(index, key, n_dimensions) is None:
            vectors = encode_in_chunks(
                sets,
                codebook,
                options,
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
            writer.write(index, vectors, record)
        entries.append({"n_rows": len(names), "key": key})
    writer.commit(
        {
            **vectors_record(len(sets), inputs, codebook, sets.metadata, options),
            **report.record(),
            "layout": "shards",
            "shards": entries,
        }
    )
    return open_shards(folder)
