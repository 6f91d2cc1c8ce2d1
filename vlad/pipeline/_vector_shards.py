"""VLAD vectors of images (or of a descriptors file), into memory, a file or
a folder of shards, here or on a Dask cluster.

Images are read and encoded a shard at a time by one run
(:mod:`vlad.pipeline._shard_runs`; its kinds of shards are
:mod:`vlad.pipeline._vector_kinds`'), whatever the output
(:mod:`vlad.pipeline._sinks`): into a folder of shards, each shard's vectors
are written as soon as they are made (see :mod:`vlad.formats._shards`), so
memory holds one shard, however many images there are. An interrupted run
continues with ``resume=True``: shards already written by the same run (same
codebook, options and images) are kept, the others are made again, and the
output ends up the same, byte for byte, as an uninterrupted run's. Given a
Dask client, the shards are made on its cluster instead
(:mod:`vlad.pipeline._cluster`), into the same bytes.
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
from vlad.pipeline._encoding import ENCODE_CHUNK_IMAGES, EncodedImages
from vlad.pipeline._extraction import read_descriptor_sets
from vlad.pipeline._shard_runs import ShardKind, run_shards
from vlad.pipeline._sinks import is_folder_output, open_sink
from vlad.pipeline._vector_kinds import DescriptorFileVectors, ImageVectors

__all__ = [
    "SHARD_IMAGES",
    "check_shard_images",
    "encode_images",
    "encode_images_to_folder",
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
        raise VladTypeError(f"{name} must be an int; got {shard_images!r}")
    if shard_images < 1 or (
        shard_images > ENCODE_CHUNK_IMAGES and shard_images % ENCODE_CHUNK_IMAGES
    ):
        raise VladError(
            f"{name} must be at least 1, and a multiple of "
            f"{ENCODE_CHUNK_IMAGES} above it; got {shard_images}"
        )


def encode_images(
    inputs: PathOrPaths,
    codebook: Codebook | str | os.PathLike,
    options: EncodingOptions | None = None,
    *,
    output: str | os.PathLike | None = None,
    descriptor_options: Mapping | None = None,
    extractor: Callable | str | None = None,
    n_jobs: int | None = None,
    progress: Progress | None = None,
    shard_images: int = SHARD_IMAGES,
    overwrite: bool = False,
    resume: bool = False,
    client: Any = None,
    **settings,
) -> EncodedImages:
    """VLAD vectors of every image in folders and files (or of a descriptors
    file), in memory or written to ``output``.

    Descriptors are made the way the codebook's were (as recorded in
    ``codebook.metadata["descriptor"]``), except for the options given, and
    encoded a chunk of :data:`ENCODE_CHUNK_IMAGES` images at a time, so memory
    holds the vectors but never every image's descriptors; into a folder of
    shards, it holds one shard's vectors. Every output holds the same rows.

    Parameters
    ----------
    inputs : path-like or sequence of path-like
        As in :func:`read_descriptor_sets`.
    codebook : Codebook or path-like
        A codebook or a file written by :meth:`Codebook.save`.
    options : EncodingOptions, optional
        The aggregator and the normalisation, as in :func:`vlad.encode`.
    output : path-like, optional
        Where the vectors go: ``NAME.npy`` (with ``NAME.names.txt`` and
        ``NAME.json`` beside it, see :func:`vlad.save_vectors`), ``NAME.h5``
        (hloc's global features), or a folder of shards ``NAME`` (a name
        without a suffix, see :func:`vlad.formats.open_shards`). None (the
        default) keeps them in memory.
    descriptor_options : mapping, optional
        Options of :class:`vlad.SiftOptions` (or of
        :class:`vlad.images.LearnedOptions`, for a codebook of learned
        features: its ``weights`` and ``device``, say) that replace the
        codebook's. ``max_side``, ``max_keypoints`` and ``min_keypoints`` may
        differ from the codebook's; ``features``, ``root_sift`` and ``dense``
        may not, nor the learned features' network and weights.
    extractor : callable or str, optional
        The callable the codebook's descriptors were made with (see
        :func:`extract_images`); required for such a codebook, refused for
        another's.
    n_jobs, progress
        As in :func:`extract_images`; ``n_jobs`` also bounds the threads of
        :func:`vlad.encode`.
    shard_images : int, default=SHARD_IMAGES
        Images found that each shard covers (its rows are the readable ones);
        a multiple of :data:`ENCODE_CHUNK_IMAGES` when above it. The rows do
        not depend on it.
    overwrite : bool, default=False
        Replace an output that exists.
    resume : bool, default=False
        Keep the shards that an interrupted run with the same codebook,
        options and images finished, and make the others. A file's shards
        are then staged in a hidden folder beside it (``.NAME.parts``),
        removed once the file is written; a file already written is not
        resumed (pass ``overwrite``). Needs an output.
    client : distributed.Client, optional
        Make the shards on this Dask cluster, a task per shard (see
        :func:`vlad.pipeline.dask_client`); workers write them into the
        folder (a file's: its hidden folder), which they must see at the same
        path. The output is the same, byte for byte, as one made here. Needs
        an output, and images rather than a descriptors file.
    **settings
        Fields of :class:`EncodingOptions` replacing those of ``options``.

    Returns
    -------
    EncodedImages
        ``vectors`` of shape (n_images, n_clusters * n_features), in row order of
        ``names``; an image without descriptors has a zero row. Into a folder,
        ``vectors`` is the folder opened (:class:`vlad.formats.ShardedVectors`).

    Raises
    ------
    ValueError
        Descriptors of another kind or dimension than the codebook's, a file
        that is not a codebook, bad settings, an output of another suffix,
        ``resume`` or ``client`` without an output, a ``client`` with a
        descriptors file, or as :func:`read_descriptor_sets`.
    FileExistsError
        The output exists, without ``overwrite`` (or ``resume``, for a
        folder).
    ImportError
        The aggregator's optional dependency is not installed.
    TypeError
        ``client`` is not a ``distributed.Client``.
    RuntimeError
        A shard's task killed every Dask worker it ran on.

    See Also
    --------
    vlad.encode : The same on descriptors in memory.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> import vlad
    >>> quick = {"max_side": 256}  # small images, to be quick
    >>> codebook, _ = vlad.fit_codebook_to_images(
    ...     "data", 4, descriptor_options=quick, n_jobs=1
    ... )
    >>> result = vlad.encode_images("data", codebook, power=0.5, n_jobs=1)
    >>> result.vectors.shape, result.names[0], result.encoding.power
    ((8, 512), 'astronaut.jpg', 0.5)

    Into a folder of shards (or a file), the same rows:

    >>> folder = pathlib.Path(tempfile.mkdtemp(), "vectors")
    >>> sharded = vlad.encode_images(
    ...     "data", codebook, power=0.5, output=folder, shard_images=3, n_jobs=1
    ... )
    >>> sharded.vectors.n_shards, np.array_equal(sharded.vectors, result.vectors)
    (3, True)
    """
    check_shard_images(shard_images)
    # Bad settings, n_jobs or a missing optional dependency fail here, before
    # any image is read.
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
        # Names with a line break are written to a folder's JSON, never to a
        # names file.
        items, walk_report = walk_batch(inputs, line_breaks=is_folder_output(output))
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
    sink = open_sink(kind, output, overwrite=overwrite, resume=resume, client=client)
    return run_shards(
        kind, items, sink, n_jobs=n_jobs, progress=progress, client=client
    )


def encode_images_to_folder(
    inputs: PathOrPaths,
    codebook: Codebook | str | os.PathLike,
    folder: str | os.PathLike,
    options: EncodingOptions | None = None,
    **arguments,
) -> ShardedVectors:
    """The vectors of :func:`encode_images` written to the folder of shards
    ``folder``, opened: memory-mapped a shard at a time.

    Parameters
    ----------
    inputs, codebook, options
        As in :func:`encode_images`.
    folder : path-like
        The folder of shards, ``encode_images``' ``output``.
    **arguments
        ``shard_images``, ``resume``, ``client``, encoding settings and the
        other keywords of :func:`encode_images`.

    Returns
    -------
    ShardedVectors
        ``encode_images(..., output=folder).vectors``.

    Raises
    ------
    ValueError, FileExistsError, TypeError, RuntimeError
        As :func:`encode_images` raises them.
    """
    return encode_images(inputs, codebook, options, output=folder, **arguments).vectors
