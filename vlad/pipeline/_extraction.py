"""Descriptors of many images at once, or read from a descriptors file.

:func:`extract_images` describes every image of folders and files, into
memory, an ``.npz`` or a folder of shards (one run,
:mod:`vlad.pipeline._shard_runs`, of the kind
:mod:`vlad.pipeline._descriptor_shards` says); :func:`read_descriptor_sets`
does that, or reads the descriptors a file or a folder of shards already
holds.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

from vlad.core._descriptors import DescriptorSets
from vlad.core._pool import Progress
from vlad.errors import VladError
from vlad.formats._descriptor_files import descriptor_file_in, read_descriptor_file
from vlad.formats._descriptor_shards import ShardedDescriptorSets
from vlad.pipeline._batch import (
    BatchReport,
    PathOrPaths,
)
from vlad.pipeline._cluster import require_client
from vlad.pipeline._descriptor_shards import DESCRIPTOR_SHARD_IMAGES, descriptor_kind
from vlad.pipeline._shard_runs import run_shards
from vlad.pipeline._sinks import is_folder_output, open_sink

__all__ = ["extract_images", "extract_images_to_folder", "read_descriptor_sets"]


def extract_images(
    inputs: PathOrPaths,
    descriptor_options: Mapping | None = None,
    *,
    output: str | os.PathLike | None = None,
    extractor: Callable | str | None = None,
    n_jobs: int | None = None,
    progress: Progress | None = None,
    shard_images: int = DESCRIPTOR_SHARD_IMAGES,
    overwrite: bool = False,
    resume: bool = False,
    client: Any = None,
) -> tuple[DescriptorSets | ShardedDescriptorSets, BatchReport]:
    """Local descriptors (SIFT by default) of every image in folders and files,
    in memory or written to ``output``.

    Parameters
    ----------
    inputs : path-like or sequence of path-like
        Folders (walked recursively, see :func:`vlad.images.find_images`) and
        image files.
    descriptor_options : mapping, optional
        Keyword arguments of :class:`vlad.images.SiftOptions` (``features``,
        ``root_sift``, ``dense``, ``max_side``, ``max_keypoints``,
        ``min_keypoints``, ``max_pixels``), or with ``features="aliked"`` of
        :class:`vlad.images.LearnedOptions` (learned features: ``weights``,
        ``device``, ``detection_threshold``...); defaults for those left out.
    output : path-like, optional
        Where the descriptors go: ``NAME.npz`` (see :meth:`DescriptorSets.save`)
        or a folder of shards ``NAME`` (a name without a suffix, see
        :func:`vlad.formats.open_descriptor_shards`). None (the default) keeps
        them in memory.
    extractor : callable or str, optional
        Describe images with this instead of OpenCV: a callable from an RGB
        ``uint8`` array of shape (height, width, 3) to a floating-point array
        of shape (L, F), or its ``"package.module:function"`` name (see
        :mod:`vlad.images._callables`). An image on which it raises is skipped
        and reported; one for which it returns anything else stops the batch.
        ``descriptor_options`` may then hold ``max_pixels`` only. It gives no
        keypoints, which a folder of shards holds: its descriptors go to
        memory or an ``.npz``, without ``resume`` or ``client``.
    n_jobs : int or None, default=None
        Worker threads; None or -1 uses every core (as :func:`vlad.assign`).
        The result does not depend on it.
    progress : callable, optional
        Called as ``progress(n_done, n_total)`` after each image.
    shard_images : int, default=DESCRIPTOR_SHARD_IMAGES
        Images found that each shard covers (its images are the readable
        ones); into a folder, memory holds one shard's descriptors. The
        descriptors do not depend on it.
    overwrite : bool, default=False
        Replace an output that exists.
    resume : bool, default=False
        Keep the shards that an interrupted run with the same options and
        images finished, and make the others. An ``.npz``'s shards are then
        staged in a hidden folder beside it (``.NAME.parts``), removed once
        the file is written; a file already written is not resumed (pass
        ``overwrite``). Needs an output.
    client : distributed.Client, optional
        Make the shards on this Dask cluster, a task per shard (see
        :func:`vlad.pipeline.dask_client`); workers write them into the
        folder (an ``.npz``'s: its hidden folder), which they must see at the
        same path. The output is the same, byte for byte, as one made here.
        Needs an output.

    Returns
    -------
    sets : DescriptorSets or ShardedDescriptorSets
        One set per readable image, named as in ``report.names``; ``metadata``
        records ``descriptor_options`` (or the extractor's name); ``keypoints``
        holds where each descriptor was taken, in the pixel coordinates of the
        original image (OpenCV's and learned features; a learned keypoint's
        detection score takes the place of its size). Into a folder, the
        folder opened (a shard is read when one of its images is).
    report : BatchReport

    Raises
    ------
    FileNotFoundError
        An input does not exist.
    FileExistsError
        The output exists, without ``overwrite`` (or ``resume``, for a
        folder).
    ValueError
        No images in the inputs, none of them readable, bad options, an
        output of another suffix, or ``resume`` or ``client`` without an
        output (or with a callable extractor).
    TypeError
        ``client`` is not a ``distributed.Client``.
    RuntimeError
        A shard's task killed every Dask worker it ran on.

    Examples
    --------
    >>> import vlad
    >>> options = {"max_keypoints": 50}
    >>> sets, report = vlad.extract_images("data", options, n_jobs=1)
    >>> len(sets), sets.n_features, report.skipped
    (8, 128, {})
    >>> sets.keypoints_of(0).shape == (len(sets[0]), 4)
    True
    """
    if client is not None:
        require_client(client)
    kind, images = descriptor_kind(
        inputs,
        descriptor_options,
        extractor,
        shard_images,
        keeps_shards=is_folder_output(output) or resume or client is not None,
        line_breaks=is_folder_output(output),
    )
    sink = open_sink(kind, output, overwrite=overwrite, resume=resume, client=client)
    return run_shards(
        kind, images, sink, n_jobs=n_jobs, progress=progress, client=client
    )


def extract_images_to_folder(
    inputs: PathOrPaths,
    folder: str | os.PathLike,
    descriptor_options: Mapping | None = None,
    **arguments,
) -> ShardedDescriptorSets:
    """The descriptor sets :func:`extract_images` writes to the folder of
    shards ``folder``, opened: a shard is read when one of its images is.

    Parameters
    ----------
    inputs, descriptor_options
        As :func:`extract_images` takes them.
    folder : path-like
        Where the shards go (``extract_images``' ``output``).
    **arguments
        Its other keywords: ``extractor``, ``shard_images``, ``resume``,
        ``client``...

    Returns
    -------
    ShardedDescriptorSets
        What ``extract_images(..., output=folder)[0]`` gives.

    Raises
    ------
    FileExistsError, ValueError, TypeError, RuntimeError
        Those of :func:`extract_images`.

    See Also
    --------
    vlad.pipeline.encode_images_to_folder : The same for VLAD vectors.
    """
    return extract_images(inputs, descriptor_options, output=folder, **arguments)[0]


def read_descriptor_sets(
    inputs: PathOrPaths,
    descriptor_options: Mapping | None = None,
    *,
    extractor: Callable | str | None = None,
    n_jobs: int | None = None,
    progress: Progress | None = None,
    lazy: bool = False,
) -> tuple[DescriptorSets, BatchReport]:
    """Descriptor sets of images, or read from a descriptors file or folder.

    Parameters
    ----------
    inputs : path-like or sequence of path-like
        Image folders and files (see :func:`extract_images`), or a single
        descriptors file: an ``.npz`` written by :meth:`DescriptorSets.save` or
        ``vlad extract``, or an ``.npy`` of shape (L, F) (one image) or
        (T, L, F) (T images).
    descriptor_options, extractor, n_jobs, progress
        As in :func:`extract_images`; only for images.
    lazy : bool, default=False
        Open a folder of shards or an hloc ``.h5`` without reading it: the
        descriptors are read a shard (an image) at a time when used.

    Returns
    -------
    sets : DescriptorSets
        With keypoints when extracted from images or read from a file that
        holds them.
    report : BatchReport

    Raises
    ------
    ValueError
        Descriptor options given with a descriptors file, a file that holds no
        descriptor sets, or as :func:`extract_images`.
    """
    descriptor_file = descriptor_file_in(inputs)
    if descriptor_file is None:
        return extract_images(
            inputs,
            descriptor_options,
            extractor=extractor,
            n_jobs=n_jobs,
            progress=progress,
        )
    if extractor is not None:
        descriptor_options = {"extractor": extractor, **(descriptor_options or {})}
    if descriptor_options:
        raise VladError(
            f"descriptor options ({', '.join(sorted(descriptor_options))}) apply to "
            f"images, not to the descriptors already in {descriptor_file}"
        )
    sets = read_descriptor_file(descriptor_file, lazy=lazy)
    empty = [
        name
        for name, length in zip(sets.names, sets.lengths, strict=True)
        if length == 0
    ]
    return sets, BatchReport(len(sets), list(sets.names), {}, empty, descriptor_file)
