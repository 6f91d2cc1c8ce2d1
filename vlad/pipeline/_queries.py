"""Query vectors for an index: read from a vectors file, or made from images or
descriptors exactly as the index's own vectors were made; query descriptors
for an ASMK index."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from vlad.asmk._index import ASMKIndex
from vlad.core._codebook import Codebook
from vlad.core._descriptors import DescriptorSets
from vlad.core._encoding import encode
from vlad.core._options import EncodingOptions
from vlad.core._pool import Progress
from vlad.errors import VladError
from vlad.formats._descriptor_files import descriptor_file_in
from vlad.formats._hloc import hloc_file_kind, is_hdf5_path
from vlad.formats._shards import MANIFEST_NAME
from vlad.formats._vectors import load_vectors
from vlad.images._learned import LearnedOptions
from vlad.images._sift import SiftOptions
from vlad.pipeline._batch import BatchReport
from vlad.pipeline._extraction import read_descriptor_sets
from vlad.pipeline._vector_shards import encode_images
from vlad.search._index import VectorIndex

__all__ = [
    "Queries",
    "encoding_options",
    "read_asmk_queries",
    "read_queries",
    "source_record",
]

PathOrPaths = str | os.PathLike | Sequence[str | os.PathLike]


@dataclass(frozen=True)
class Queries:
    """Query vectors, their names and, when kept, their descriptors.

    Attributes
    ----------
    vectors : ndarray of float32 of shape (n_queries, n_features)
    names : list of str
    descriptor_sets : DescriptorSets or None
        The queries' descriptors with keypoints (for spatial verification).
    report : BatchReport or None
        Images skipped or without descriptors, when made from images.
    """

    vectors: np.ndarray
    names: list[str]
    descriptor_sets: DescriptorSets | None = None
    report: BatchReport | None = None


def source_record(vectors_record: dict | None) -> dict:
    """What an index keeps of a vectors file's record: the codebook, descriptor
    and encoding settings its queries must share."""
    record = vectors_record or {}
    return {
        key: record[key]
        for key in ("codebook", "descriptor", "encoding")
        if key in record
    }


def read_queries(
    inputs: PathOrPaths,
    index: VectorIndex,
    codebook: Codebook | str | os.PathLike | None = None,
    *,
    keep_descriptors: bool = False,
    n_jobs: int | None = None,
    progress: Progress | None = None,
) -> Queries:
    """Query vectors for ``index`` from a vectors file, descriptors or images.

    Parameters
    ----------
    inputs : path-like or sequence of path-like
        A vectors ``.npy`` written by ``vlad encode`` (its names beside it) or
        hloc's global features (``.h5``); or a descriptors file (hloc's local
        features too); or image files and folders.
    index : VectorIndex
        Descriptors and images are encoded with the settings its vectors were
        made with (``index.source``).
    codebook : Codebook or path-like, optional
        Needed for descriptors and images; must be the index's.
    keep_descriptors : bool, default=False
        Keep the queries' descriptors and keypoints (spatial verification
        needs them). Without it, images are encoded a chunk at a time and
        their descriptors dropped, so memory stays bounded.
    n_jobs, progress
        As in :func:`vlad.encode_images`.

    Returns
    -------
    Queries

    Raises
    ------
    ValueError
        No codebook for images or descriptors, a codebook (given, or named by
        a vectors file's record) that is not the index's, or a vectors file
        with descriptors asked for.
    """
    paths = [inputs] if isinstance(inputs, (str, os.PathLike)) else list(inputs)
    if codebook is not None and not isinstance(codebook, Codebook):
        codebook = Codebook.load(codebook)
    if codebook is not None:
        _check_fingerprint(
            codebook.fingerprint,
            index.source,
            f"the codebook has fingerprint {codebook.fingerprint}",
        )
    if len(paths) == 1 and _holds_vectors(Path(paths[0])):
        return _vectors_file_queries(Path(paths[0]), index, keep_descriptors)
    if codebook is None:
        raise VladError(
            "queries given as images or descriptors need the codebook the index's "
            "vectors were made with"
        )
    options = encoding_options(index)
    if not keep_descriptors:
        encoded = encode_images(
            inputs,
            codebook,
            options,
            descriptor_options=_descriptor_options(index.source, inputs),
            n_jobs=n_jobs,
            progress=progress,
        )
        return Queries(encoded.vectors, encoded.names, None, encoded.report)
    sets, report = read_descriptor_sets(
        inputs,
        _descriptor_options(index.source, inputs),
        n_jobs=n_jobs,
        progress=progress,
    )
    vectors = encode(sets, codebook, options, n_jobs=n_jobs)
    return Queries(vectors, list(sets.names), sets, report)


def encoding_options(index: VectorIndex) -> EncodingOptions | None:
    """The encoding options ``index``'s vectors were made with (None when its
    source records none: the defaults)."""
    recorded = index.source.get("encoding")
    return EncodingOptions.from_record(recorded) if recorded else None


def _holds_vectors(path: Path) -> bool:
    """Whether ``path`` is a vectors file or folder, or hloc's global features."""
    if path.is_file() and is_hdf5_path(path):
        return hloc_file_kind(path) == "global"
    return (path.suffix.lower() == ".npy" and path.is_file()) or (
        path / MANIFEST_NAME
    ).is_file()


def _vectors_file_queries(
    path: Path, index: VectorIndex, keep_descriptors: bool
) -> Queries:
    if keep_descriptors:
        raise VladError(
            f"{path} holds vectors only; spatial verification needs the queries' "
            "descriptors: give their images or descriptors file instead"
        )
    vectors, names, record = load_vectors(path)
    fingerprint = ((record or {}).get("codebook") or {}).get("fingerprint")
    if fingerprint is not None:
        _check_fingerprint(
            fingerprint,
            index.source,
            f"the vectors of {path} were made with codebook {fingerprint}",
        )
    if names is None:
        names = [str(row) for row in range(vectors.shape[0])]
    return Queries(vectors, names)


def _check_fingerprint(fingerprint: str, source: dict, mismatch: str) -> None:
    """Refuse queries of another codebook than the index's (when both are known):
    their vectors would have the right length and mean nothing."""
    expected = (source.get("codebook") or {}).get("fingerprint")
    if expected is not None and fingerprint != expected:
        raise VladError(
            f"{mismatch}, but the index's vectors were made with codebook {expected}"
        )


def _descriptor_options(source: dict, inputs: PathOrPaths) -> dict | None:
    """The index's descriptor settings for images; none for descriptor files,
    which were made already."""
    if descriptor_file_in(inputs) is not None:
        return None
    record = source.get("descriptor")
    # Learned features: the weights the record's SHA-256 names, from
    # PyTorch's hub cache (queries made elsewhere come as a descriptors file).
    recorded = SiftOptions.from_record(record) or LearnedOptions.from_record(record)
    return None if recorded is None else dataclasses.asdict(recorded)


def read_asmk_queries(
    inputs: PathOrPaths,
    index: ASMKIndex,
    codebook: Codebook | str | os.PathLike | None = None,
    *,
    n_jobs: int | None = None,
    progress: Progress | None = None,
) -> tuple[DescriptorSets, BatchReport]:
    """Query descriptors for an ASMK index: read from a descriptors file, or
    made from images as the index's descriptors were (``index.source``).

    Parameters
    ----------
    inputs : path-like or sequence of path-like
        A descriptors file or folder of shards, or image files and folders.
    index : ASMKIndex
    codebook : Codebook or path-like, optional
        The index holds its own codebook; one given must be the same.
    n_jobs, progress
        As in :func:`vlad.extract_images`.

    Raises
    ------
    ValueError
        A codebook other than the index's; descriptors of another kind are
        refused by :meth:`ASMKIndex.search`.
    """
    if codebook is not None and not isinstance(codebook, Codebook):
        codebook = Codebook.load(codebook)
    if codebook is not None:
        _check_fingerprint(
            codebook.fingerprint,
            index.source,
            f"the codebook has fingerprint {codebook.fingerprint}",
        )
    return read_descriptor_sets(
        inputs,
        _descriptor_options(index.source, inputs),
        n_jobs=n_jobs,
        progress=progress,
        lazy=True,
    )
