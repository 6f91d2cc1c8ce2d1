"""VLAD vector files: ``vectors.npy`` beside ``vectors.names.txt`` and ``vectors.json``.

(Or a folder of shards, read by :func:`load_vectors` too: see
:mod:`vlad.formats._shards`; or hloc's global features, an ``.h5``: see
:mod:`vlad.formats._hloc`.)

``vectors.npy`` holds the ``(n_images, n_clusters * n_features)`` float32
vectors, ``vectors.names.txt`` one image name per line in row order, and
``vectors.json`` how they were made (codebook fingerprint, parameters, images
skipped or without descriptors) and the checksums of the other two, so that
three files that do not belong together (written by two runs at once, or
changed since) are refused when read.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from vlad.core._files import atomic_writes, read_numpy_file
from vlad.core._finite import largest_magnitude
from vlad.core._validation import all_finite
from vlad.errors import VladError, VladTypeError
from vlad.formats._hloc import is_hdf5_path
from vlad.formats._hloc_global import read_global_features
from vlad.formats._names import names_from_lines, names_to_lines
from vlad.formats._shards import ShardedVectors, is_shard_folder, open_shards

__all__ = [
    "NAMES_SUFFIX",
    "RECORD_SUFFIX",
    "load_vectors",
    "save_vectors",
    "vector_file_paths",
]

_FLOAT32_MAX = float(np.finfo(np.float32).max)
NAMES_SUFFIX = ".names.txt"
RECORD_SUFFIX = ".json"
#: The record's field that holds the checksums of the vectors and the names.
CHECKSUMS = "checksums"


def vector_file_paths(path: str | os.PathLike) -> tuple[Path, Path, Path]:
    """The vectors, names and record paths of a vectors file.

    Examples
    --------
    >>> import vlad.formats._vectors
    >>> [str(p) for p in vlad.formats._vectors.vector_file_paths("out/vectors.npy")]
    ['out/vectors.npy', 'out/vectors.names.txt', 'out/vectors.json']
    """
    path = Path(path)
    if path.suffix.lower() != ".npy":
        raise VladError(f"a vectors file must end in .npy; got {str(path)!r}")
    return path, path.with_suffix(NAMES_SUFFIX), path.with_suffix(RECORD_SUFFIX)


def save_vectors(
    path: str | os.PathLike,
    vectors,
    names: Sequence[str],
    record: dict,
    *,
    overwrite: bool = False,
) -> None:
    """Write vectors, their names and a JSON record atomically, together.

    All three are written to temporary files first and renamed into place
    only when every one was written (the ``.npy`` last), so a failed write
    leaves the previous files as they were. The ``.npy`` says the set is
    complete: a process killed in the instant between the moves leaves no
    ``.npy`` (an older one is removed just before), never new names beside
    old vectors.

    Parameters
    ----------
    path : path-like
        The ``.npy`` file; the others take its name (see
        :func:`vector_file_paths`).
    vectors : array-like of shape (n_images, n_dimensions)
        Written as float32.
    names : sequence of str
        One name per row.
    record : dict
        JSON-serialisable description. Written with one more field,
        ``"checksums"``: the SHA-256 of the float32 vectors' bytes (in row
        order) and of the names file, which :func:`load_vectors` checks.
    overwrite : bool, default=False
        Replace files that exist. When False, existing files are refused
        before anything is written, and files that appear while these are
        written (another process writing the same output) are never replaced:
        ``FileExistsError``, and none of the three is left.

    Raises
    ------
    ValueError
        Vectors of another shape than the names, NaN or infinite vectors, or a
        name with a line break.
    FileExistsError
        Without ``overwrite``, one of the files exists or appeared meanwhile.
    """
    vectors_path, names_path, record_path = vector_file_paths(path)
    vectors = np.asarray(vectors)
    if vectors.dtype.kind not in "fiub":
        raise VladTypeError(
            f"vectors must hold real numbers; got dtype {vectors.dtype}"
        )
    if vectors.ndim != 2 or vectors.shape[0] != len(names):
        raise VladError(
            f"vectors must have shape (n_names, n_dimensions) = ({len(names)}, ...); "
            f"got shape {vectors.shape}"
        )
    names_text = names_to_lines(names)
    if not all_finite(vectors) or largest_magnitude(vectors) > _FLOAT32_MAX:
        raise VladError(
            "vectors must be finite and within float32's range: vectors files hold "
            "float32 values, never NaN or infinite ones"
        )
    vectors = vectors.astype(np.float32, copy=False)
    checksums = {"vectors": _checksum(vectors), "names": _checksum(names_text)}
    # Serialised before any file is touched: a record that cannot be written
    # leaves all three files as they were.
    record_text = json.dumps({**record, CHECKSUMS: checksums}, indent=2) + "\n"
    files = (names_path, record_path, vectors_path)
    with atomic_writes(*files, overwrite=overwrite) as handles:
        names_file, record_file, vectors_file = handles
        names_file.write(names_text)
        record_file.write(record_text.encode())
        np.save(vectors_file, vectors)


def load_vectors(
    path: str | os.PathLike, *, mmap: bool = False
) -> tuple[np.ndarray | ShardedVectors, list[str] | None, dict | None]:
    """Read a vectors file or folder of shards, with its names and record.

    Parameters
    ----------
    path : path-like
        The ``.npy`` file (with, where they exist, its ``.names.txt`` and
        ``.json``), or a folder of shards written by ``vlad encode`` (see
        :mod:`vlad.formats._shards`), which always has names and a record, or
        hloc's global features, an ``.h5`` (see
        :func:`vlad.formats.read_global_features`; read whole).
    mmap : bool, default=False
        Map the vectors read-only instead of reading them into memory. For a
        folder, the vectors are then a :class:`ShardedVectors`: one mapped
        block per shard, concatenated only by ``np.asarray``.

    Returns
    -------
    vectors : ndarray or ShardedVectors of shape (n_images, n_dimensions)
    names : list of str or None
    record : dict or None

    Raises
    ------
    FileNotFoundError
        No such file.
    ValueError
        Not a readable 2-D ``.npy``, a names file of another length, a record
        whose ``shape``, ``n_images`` or codebook size disagrees with the
        vectors, or whose checksums disagree with the vectors or the names
        (files of two runs, or changed since; records written by vlad 0.4
        have none), an incomplete folder of shards, or an ``.h5`` that is not
        hloc's global features. With ``mmap``, checking the checksum reads
        the vectors once.
    ImportError
        An ``.h5`` without h5py installed.
    """
    if is_shard_folder(path):
        shards = open_shards(path)
        vectors = shards if mmap else np.asarray(shards)
        return vectors, shards.names, shards.record
    if is_hdf5_path(path):
        return read_global_features(path)
    vectors_path, names_path, record_path = vector_file_paths(path)
    vectors = read_numpy_file(vectors_path, "vectors file", mmap=mmap)
    if not isinstance(vectors, np.ndarray):
        raise VladError(
            f"{vectors_path} is not a vectors file: it is an .npz archive, not an "
            ".npy array"
        )
    if vectors.ndim != 2:
        raise VladError(
            f"{vectors_path} is not a vectors file: it holds an array of shape "
            f"{vectors.shape}, not (n_images, n_dimensions)"
        )
    names = None
    names_text = None
    if names_path.is_file():
        names_text = names_path.read_bytes()
        names = names_from_lines(names_text)
        if len(names) != vectors.shape[0]:
            raise VladError(
                f"{names_path} holds {len(names)} names for {vectors.shape[0]} vectors"
            )
    record = None
    if record_path.is_file():
        try:
            record = json.loads(record_path.read_text())
        except (ValueError, RecursionError) as error:  # UnicodeDecodeError too
            raise VladError(f"{record_path} is not readable JSON ({error})") from None
        if not isinstance(record, dict):
            raise VladError(
                f"{record_path} is not a vectors record: it holds a JSON "
                f"{type(record).__name__}, not an object"
            )
        _check_record(record, record_path, vectors, names_text)
    return vectors, names, record


def _checksum(content: np.ndarray | bytes) -> str:
    """``"sha256:HEX"`` of bytes, or of an array's bytes in row order."""
    if isinstance(content, np.ndarray):
        content = np.ascontiguousarray(content).reshape(-1).view(np.uint8)
    return "sha256:" + hashlib.sha256(content).hexdigest()


def _check_record(
    record: dict, path: Path, vectors: np.ndarray, names_text: bytes | None
) -> None:
    """Refuse a record that disagrees with the vectors and names beside it
    (one-line ``ValueError``)."""
    n_images, n_dimensions = vectors.shape
    claims = []
    if "shape" in record and record["shape"] != [n_images, n_dimensions]:
        claims.append(f"shape {record['shape']!r}")
    if "n_images" in record and record["n_images"] != n_images:
        claims.append(f"n_images {record['n_images']!r}")
    codebook = record.get("codebook")
    if isinstance(codebook, dict):
        size = codebook.get("n_clusters"), codebook.get("n_features")
        if all(type(value) is int for value in size) and size[0] * size[1] != (
            n_dimensions
        ):
            claims.append(f"a codebook of {size[0]} x {size[1]}")
    checksums = record.get(CHECKSUMS, {})
    if not isinstance(checksums, dict):
        claims.append(f"checksums {checksums!r}")
    else:
        if "vectors" in checksums and checksums["vectors"] != _checksum(vectors):
            claims.append("another checksum of the vectors")
        if (
            "names" in checksums
            and names_text is not None
            and checksums["names"] != _checksum(names_text)
        ):
            claims.append("another checksum of the names")
    if claims:
        raise VladError(
            f"{path} does not describe the vectors beside it: it records "
            f"{' and '.join(claims)} for {n_images} x {n_dimensions} vectors "
            "(files of two runs, or changed since); write them again"
        )
