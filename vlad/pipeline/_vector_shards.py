"""VLAD vectors of a large collection streamed to a folder of shards, resumable.

Images are read and encoded as by :func:`vlad.encode_images`, but each shard's
vectors are written as soon as they are made (see :mod:`vlad.formats._shards`;
the run is :mod:`vlad.pipeline._shard_runs`'s, its kinds of shards are
:mod:`vlad.pipeline._vector_kinds`'), so memory holds one shard, however many
images there are. An interrupted run continues with ``resume=True``: shards
already written by the same run (same codebook, options and images) are kept,
the others are made again, and the folder ends up the same, byte for byte, as
an uninterrupted run's. Given a Dask client, the shards are made on its
cluster instead (:mod:`vlad.pipeline._cluster`), into the same bytes.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

from vlad.core._codebook import Codebook
from vlad.core._options import EncodingOptions
from vlad.core._parallel import resolve_n_jobs
from vlad.core._pool import Progress
from vlad.core.aggregators import require_aggregator
from vlad.errors import VladError, VladTypeError
from vlad.formats._descriptor_files import descriptor_file_in
from vlad.formats._shards import ShardedVectors
from vlad.images._extractors import check_same_kind, extractor_for_codebook
from vlad.pipeline._batch import PathOrPaths, walk_batch
from vlad.pipeline._cluster import require_client
from vlad.pipeline._encoding import ENCODE_CHUNK_IMAGES
from vlad.pipeline._extraction import read_descriptor_sets
from vlad.pipeline._shard_runs import ShardKind, run_shards
from vlad.pipeline._vector_kinds import DescriptorFileVectors, ImageVectors

__all__ = ["SHARD_IMAGES", "check_shard_images", "encode_images_to_folder"]

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
        raise VladTypeError(f"{name} must be an int; got {shard_images!r}")
    if shard_images < 1 or (
        shard_images > ENCODE_CHUNK_IMAGES and shard_images % ENCODE_CHUNK_IMAGES
    ):
        raise VladError(
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
        As in :func:`vlad.encode_images`.
    folder : path-like
        The folder of shards to write (its parent must exist).
    shard_images : int, default=SHARD_IMAGES
        Images found that each shard covers (its rows are the readable ones);
        memory holds one shard's vectors. A multiple of
        :data:`vlad.pipeline.ENCODE_CHUNK_IMAGES` when above it.
    overwrite : bool, default=False
        Replace a folder of shards that exists.
    resume : bool, default=False
        Keep the shards that an interrupted run with the same codebook,
        options and images finished, and make the others.
    client : distributed.Client, optional
        Make the shards on this Dask cluster, a task per shard (see
        :func:`vlad.pipeline.dask_client`); the folder is the same, byte for
        byte, as one made here.
    **settings
        Encoding settings given by name, as in :func:`vlad.encode_images`.

    Returns
    -------
    ShardedVectors
        The folder, opened (its vectors memory-mapped).

    Raises
    ------
    FileExistsError
        The folder exists, without ``overwrite`` or ``resume``.
    ValueError
        As :func:`vlad.encode_images`, a bad ``shard_images``, or a
        ``client`` with a descriptors file.
    TypeError
        ``client`` is not a ``distributed.Client``.
    RuntimeError
        A shard's task killed every Dask worker it ran on.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> import vlad
    >>> from vlad.pipeline import encode_images_to_folder
    >>> quick = {"max_side": 256}  # small images, to be quick
    >>> codebook, _ = vlad.fit_codebook_to_images(
    ...     "data", 4, descriptor_options=quick, n_jobs=1
    ... )
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
            raise VladError(
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
        progress = None  # descriptors are read, not described: nothing to tell
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
