"""VLAD vectors of a large collection streamed to a folder of shards, resumable.

Images are read and encoded as by :func:`vlad.encode_images`, but each shard's
vectors are written as soon as they are made (see :mod:`vlad.formats.shards`),
so memory holds one shard, however many images there are. An interrupted run
continues with ``resume=True``: shards already written by the same run (same
codebook, options and images) are kept, the others are made again, and the
folder ends up the same, byte for byte, as an uninterrupted run's.
"""

from __future__ import annotations

import itertools
import logging
import os
from collections.abc import Iterator, Mapping, Sequence

import numpy as np

from vlad._version import __version__
from vlad.core.aggregators import require_aggregator
from vlad.core.chunked_encoding import encode_in_chunks
from vlad.core.codebook import Codebook
from vlad.core.descriptors import DescriptorSets
from vlad.core.encoding import encode
from vlad.core.options import EncodingOptions
from vlad.core.parallel import resolve_n_jobs
from vlad.core.validation import check_n_features
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
    BatchReport,
    check_same_kind,
    descriptor_options_for,
    extract_in_order,
    keep_readable,
    path_list,
    read_descriptor_sets,
    walk_batch,
)
from vlad.images.files import ImageFile
from vlad.images.pool import Progress
from vlad.images.sift import N_FEATURES

__all__ = ["SHARD_IMAGES", "encode_images_to_folder", "image_identities"]

logger = logging.getLogger(__name__)

#: Images a shard covers by default (a multiple of the encoding chunk, so that
#: a shard's vectors do not depend on where a run was interrupted).
SHARD_IMAGES = 16 * ENCODE_CHUNK_IMAGES
PathOrPaths = str | os.PathLike | Sequence[str | os.PathLike]


def encode_images_to_folder(
    inputs: PathOrPaths,
    codebook: Codebook | str | os.PathLike,
    folder: str | os.PathLike,
    options: EncodingOptions | None = None,
    *,
    descriptor_options: Mapping | None = None,
    n_jobs: int | None = None,
    progress: Progress | None = None,
    shard_images: int = SHARD_IMAGES,
    overwrite: bool = False,
    resume: bool = False,
    **settings,
) -> ShardedVectors:
    """:func:`vlad.encode_images` written to a folder of shards as it goes.

    Parameters
    ----------
    inputs, codebook, options, descriptor_options, n_jobs, progress, **settings
        As in :func:`vlad.encode_images`.
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
    if isinstance(shard_images, bool) or not isinstance(shard_images, int):
        raise TypeError(f"shard_images must be an int; got {shard_images!r}")
    if shard_images < 1 or (
        shard_images > ENCODE_CHUNK_IMAGES and shard_images % ENCODE_CHUNK_IMAGES
    ):
        raise ValueError(
            f"shard_images must be at least 1, and a multiple of "
            f"{ENCODE_CHUNK_IMAGES} above it; got {shard_images}"
        )
    options = EncodingOptions.resolve(options, **settings)
    resolve_n_jobs(n_jobs)
    if isinstance(options.aggregator, str):
        require_aggregator(options.aggregator)
    if not isinstance(codebook, Codebook):
        codebook = Codebook.load(codebook)
    if descriptor_file_in(inputs) is not None:
        return _encode_descriptors_to_folder(
            inputs,
            codebook,
            folder,
            options,
            descriptor_options=descriptor_options,
            n_jobs=n_jobs,
            shard_images=shard_images,
            overwrite=overwrite,
            resume=resume,
        )
    sift_options = descriptor_options_for(codebook, descriptor_options)
    check_same_kind(sift_options, codebook)
    check_n_features(N_FEATURES, codebook.n_features)
    images, walk_report = walk_batch(inputs, line_breaks=True)
    n_dimensions = codebook.n_clusters * codebook.n_features
    record = {
        "format": "vlad vectors",
        "format_version": 1,
        "vlad_version": __version__,
        "layout": "shards",
        "shape": [0, n_dimensions],
        "inputs": [str(path) for path in path_list(inputs)],
        "codebook": {
            "fingerprint": codebook.fingerprint,
            "n_clusters": codebook.n_clusters,
            "n_features": codebook.n_features,
        },
        "descriptor": sift_options.record(),
        "encoding": options.record(),
    }
    run = _run_record(record, shard_images)
    writer = ShardWriter(folder, overwrite=overwrite, resume=resume)
    groups = [
        images[start : start + shard_images]
        for start in range(0, len(images), shard_images)
    ]
    keys = [shard_key(run, image_identities(group)) for group in groups]
    shards = [writer.finished(i, key, n_dimensions) for i, key in enumerate(keys)]
    todo = [i for i, shard in enumerate(shards) if shard is None]
    if len(todo) < len(groups):
        logger.info(
            "kept %d finished shards of %d", len(groups) - len(todo), len(groups)
        )
    n_kept = len(images) - sum(len(groups[i]) for i in todo)
    results = extract_in_order(
        [image for i in todo for image in groups[i]],
        sift_options,
        n_jobs,
        None
        if progress is None
        else lambda done, total: progress(done + n_kept, len(images)),
    )
    for index in todo:
        vectors, report = _encode_shard(
            results, len(groups[index]), codebook, options, n_jobs
        )
        shards[index] = {
            "key": keys[index],
            "names": report.names,
            "skipped": [{"name": n, "reason": r} for n, r in report.skipped.items()],
            "empty": report.empty,
        }
        writer.write(index, vectors, shards[index])
    n_rows = [len(shard["names"]) for shard in shards]
    if not sum(n_rows):
        shown = ", ".join(str(path) for path in path_list(inputs))
        raise ValueError(f"none of the {len(images)} images in {shown} could be read")
    skipped = [
        {"name": name, "reason": reason} for name, reason in walk_report.skipped.items()
    ] + [entry for shard in shards for entry in shard["skipped"]]
    empty = [name for shard in shards for name in shard["empty"]]
    writer.commit(
        {
            **record,
            "shape": [sum(n_rows), n_dimensions],
            "n_found": walk_report.n_found,
            "n_images": sum(n_rows),
            "n_skipped": len(skipped),
            "n_empty": len(empty),
            "skipped": skipped,
            "empty": empty,
            "shard_images": shard_images,
            "shards": [
                {"n_rows": rows, "key": key}
                for rows, key in zip(n_rows, keys, strict=True)
            ],
        }
    )
    return open_shards(folder)


def _encode_descriptors_to_folder(
    inputs: PathOrPaths,
    codebook: Codebook,
    folder: str | os.PathLike,
    options: EncodingOptions,
    *,
    descriptor_options: Mapping | None,
    n_jobs: int | None,
    shard_images: int,
    overwrite: bool,
    resume: bool,
) -> ShardedVectors:
    """:func:`encode_images_to_folder` of a descriptors file or folder, read
    and encoded a shard at a time."""
    sets, report = read_descriptor_sets(inputs, descriptor_options, lazy=True)
    check_same_kind(sets.metadata, codebook)
    n_dimensions = codebook.n_clusters * codebook.n_features
    source = descriptor_file_in(inputs)
    if source.is_dir():
        source = source / MANIFEST_NAME
    status = source.stat()
    run = {
        **_run_record(
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
            "format": "vlad vectors",
            "format_version": 1,
            "vlad_version": __version__,
            "shape": [len(sets), n_dimensions],
            "inputs": [str(path) for path in path_list(inputs)],
            "codebook": {
                "fingerprint": codebook.fingerprint,
                "n_clusters": codebook.n_clusters,
                "n_features": codebook.n_features,
            },
            "descriptor": sets.metadata,
            "encoding": options.record(),
            **report.record(),
            "layout": "shards",
            "shards": entries,
        }
    )
    return open_shards(folder)


def _encode_shard(
    results: Iterator,
    n_images: int,
    codebook: Codebook,
    options: EncodingOptions,
    n_jobs: int | None,
) -> tuple[np.ndarray, BatchReport]:
    """The vectors of the next ``n_images`` of ``results`` (the readable ones),
    and their report; descriptors are held a chunk at a time."""
    report = BatchReport(n_images, [], {}, [])
    n_dimensions = codebook.n_clusters * codebook.n_features
    vectors = np.zeros((n_images, n_dimensions), np.float32)
    for start in range(0, n_images, ENCODE_CHUNK_IMAGES):
        first = len(report.names)
        size = min(ENCODE_CHUNK_IMAGES, n_images - start)
        part = list(itertools.islice(results, size))
        blocks = [descriptors for _, descriptors in keep_readable(part, report)]
        if blocks:
            sets = DescriptorSets.from_list(blocks, n_features=N_FEATURES)
            vectors[first : first + len(blocks)] = encode(
                sets, codebook, options, n_jobs=n_jobs
            )
    return vectors[: len(report.names)], report


def _run_record(record: dict, shard_images: int) -> dict:
    """What every shard of a run shares: the codebook and the options."""
    fields = ("codebook", "descriptor", "encoding")
    return {
        **{field: record.get(field) for field in fields},
        "shard_images": shard_images,
    }


def image_identities(images: list[ImageFile]) -> list:
    """Each image's name, size and modification time (None if gone)."""
    identities = []
    for image in images:
        try:
            status = os.stat(image.path)
            identities.append([image.name, status.st_size, status.st_mtime_ns])
        except OSError:
            identities.append([image.name, None, None])
    return identities
