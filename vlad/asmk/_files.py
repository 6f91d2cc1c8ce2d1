"""ASMK index folders: written whole or not at all, read without unpickling.

Folders are written in format version 2, the inverted file in segments
(:mod:`vlad.asmk._segment_files`). A folder of version 1 holds
``index.json`` (format, version, kernel settings, source, and from vlad 0.5
the SHA-256 of each other file), ``names.json``, ``codebook.npz`` and the
inverted file as ``.npy`` arrays: ``word_offsets.npy`` (int64, K + 1),
``entry_images.npy`` (int32) and ``codes.npy`` (uint8 sign bits or float32
residuals); it is still read.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from vlad.asmk._index import ASMKIndex
from vlad.asmk._kernel import check_kernel_parameters, code_dtype, code_width
from vlad.asmk._segment_files import (
    SEGMENTED_VERSION,
    read_segmented_index,
    write_segmented_index,
)
from vlad.core._codebook import Codebook
from vlad.core._files import check_format_version, read_numpy_file
from vlad.errors import DamagedIndexError, VladError
from vlad.search._index_folders import (
    RECORD_NAME,
    check_checksums,
    check_finite_member,
    folder_member,
    read_folder_json,
)

__all__ = ["FORMAT", "is_asmk_index", "load_asmk_index", "save_asmk_index"]

FORMAT = "vlad asmk index"
FORMAT_VERSION = SEGMENTED_VERSION
_ARRAYS = ("word_offsets", "entry_images", "codes")
#: The files beside index.json.
_MEMBERS = ("names.json", "codebook.npz", *(f"{name}.npy" for name in _ARRAYS))


def save_asmk_index(
    index: ASMKIndex, path: str | os.PathLike, *, overwrite: bool = False
) -> None:
    """Write ``index`` to the folder ``path`` (see :meth:`ASMKIndex.save`)."""
    write_segmented_index(index, path, overwrite=overwrite)


def is_asmk_index(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a folder whose ``index.json`` says it is an ASMK index.

    Parameters
    ----------
    path : str or os.PathLike
        Any path; one that does not exist is not an ASMK index.
    """
    try:
        record = json.loads((Path(path) / "index.json").read_bytes())
    except (OSError, ValueError, RecursionError):
        return False
    return isinstance(record, dict) and record.get("format") == FORMAT


def load_asmk_index(
    path: str | os.PathLike, *, mmap: bool = False, check_entries: bool | None = None
) -> ASMKIndex:
    """Read an index folder written by :meth:`ASMKIndex.save`.

    Every file is checked against the record: its SHA-256 (recorded since
    vlad 0.5), the codebook's fingerprint, and what each holds (shapes,
    dtypes, sizes, finite residuals). The entries of a mapped index whose
    entries take more than 256 MiB (``CHECKED_MAPPED_BYTES``) are the
    exception, unless ``check_entries``: their checksums and values would
    cost a read of the whole index, which mapping it is meant to spare;
    their headers and sizes are checked.

    Parameters
    ----------
    path : path-like
    mmap : bool, default=False
        Map the inverted file read-only instead of reading it.
    check_entries : bool, optional
        Compare the checksums of the entries' files whatever their size
        (True), or never (False); by default unless mapped and larger than
        256 MiB. Folders of format version 1 are always checked whole.

    Raises
    ------
    FileNotFoundError
        No such folder.
    DamagedIndexError
        A file missing, changed since the index was written (another
        codebook, of the same shape or not), of another shape, dtype or size
        than the others, segments that disagree, a segment of another
        codebook, or NaN or infinite residuals (one line naming it).
    ValueError
        Not an ASMK index, a file that cannot be read, or an index written
        by a newer vlad.
    """
    folder = Path(path)
    if not folder.is_dir():
        if folder.exists():
            raise VladError(f"{folder} is not a vlad ASMK index: it is not a folder")
        raise FileNotFoundError(f"no such index folder: {folder}")
    record = _read_json(folder, RECORD_NAME, dict)
    if record.get("format") != FORMAT:
        raise VladError(
            f"{folder} is not a vlad ASMK index: index.json does not say so"
        )
    if check_format_version(folder, record, FORMAT, FORMAT_VERSION) > 1:
        return read_segmented_index(
            folder, record, mmap=mmap, check_entries=check_entries
        )
    # First, so that the message names the file that changed.
    check_checksums(folder, record, _MEMBERS, FORMAT)
    names = _read_json(folder, "names.json", list)
    codebook = Codebook.load(_member(folder, "codebook.npz"))
    arrays = {
        name: read_numpy_file(_member(folder, f"{name}.npy"), FORMAT, mmap=mmap)
        for name in _ARRAYS
    }
    binary = record.get("binary")
    try:
        alpha, threshold = check_kernel_parameters(
            record.get("alpha"), record.get("threshold")
        )
    except (TypeError, ValueError) as error:
        raise DamagedIndexError(
            f"{folder} is a damaged vlad ASMK index: {error}"
        ) from None
    offsets, images, codes = (arrays[name] for name in _ARRAYS)
    consistent = (
        isinstance(binary, bool)
        and isinstance(record.get("idf"), bool)
        and all(isinstance(name, str) for name in names)
        and all(isinstance(array, np.ndarray) for array in arrays.values())
        and offsets.shape == (codebook.n_clusters + 1,)
        and offsets.dtype == np.int64
        and offsets[0] == 0
        and bool(np.all(np.diff(offsets) >= 0))
        and images.ndim == 1
        and images.dtype == np.int32
        and offsets[-1] == images.shape[0]
        and (images.size == 0 or (images.min() >= 0 and images.max() < len(names)))
        and codes.dtype == code_dtype(binary)
        and codes.shape == (images.shape[0], code_width(codebook.n_features, binary))
    )
    if not consistent:
        raise DamagedIndexError(
            f"{folder} is a damaged vlad ASMK index: its files disagree"
        )
    if not binary:
        check_finite_member(codes, folder / "codes.npy", FORMAT)
    source = record.get("source")
    _check_codebook(folder, codebook, source)
    return ASMKIndex(
        codebook,
        names,
        offsets,
        images,
        codes,
        binary=binary,
        alpha=alpha,
        threshold=threshold,
        idf=record["idf"],
        source=source if isinstance(source, dict) else None,
    )


def _check_codebook(folder: Path, codebook: Codebook, source) -> None:
    """Refuse a codebook other than the one the index was built with (its
    fingerprint in the record), even of the same shape: the words would be
    another vocabulary's, and the scores wrong."""
    recorded = source.get("codebook") if isinstance(source, dict) else None
    fingerprint = recorded.get("fingerprint") if isinstance(recorded, dict) else None
    if fingerprint is not None and fingerprint != codebook.fingerprint:
        raise DamagedIndexError(
            f"{folder / 'codebook.npz'} is not the codebook the index was built "
            f"with: its fingerprint is {codebook.fingerprint}, {RECORD_NAME} "
            f"records {fingerprint}; build the index again"
        )


def _member(folder: Path, name: str) -> Path:
    return folder_member(folder, name, "vlad ASMK index")


def _read_json(folder: Path, name: str, value_type: type):
    return read_folder_json(folder, name, value_type, "vlad ASMK index")
