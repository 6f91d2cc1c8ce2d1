"""Safe files: the one reader of ``.npy`` and ``.npz`` files, and record
archives (with the atomic writes of :mod:`vlad.core._writing`).

Every file vlad reads goes through :func:`read_numpy_file`: it never unpickles
(``allow_pickle=False``), tells a file that is not NumPy's, a pickle and a
truncated file apart by their bytes before NumPy allocates anything, and says
what is wrong in one line of the same wording for every format. An archive
member is checked before it is read: a header that promises more data than
the member holds, or a member that would expand a hundred times and more (a
zip bomb), is refused.
"""

from __future__ import annotations

import json
import os
import zipfile
import zlib
from pathlib import Path
from typing import IO

import numpy as np

from vlad.core._writing import atomic_write, atomic_writes, check_writable_folder
from vlad.errors import VladError

__all__ = [
    "atomic_write",
    "atomic_writes",
    "check_format_version",
    "check_writable_folder",
    "npz_member_header",
    "parse_record",
    "read_numpy_file",
    "read_record_archive",
    "save_record_archive",
]

_NPY_MAGIC = b"\x93NUMPY"
_ZIP_MAGICS = (b"PK\x03\x04", b"PK\x05\x06")
#: Protocol 2 and later pickles start with this opcode.
_PICKLE_PROTO = b"\x80"
#: What reading a damaged file raises: zipfile raises NotImplementedError for
#: an unknown compression and RuntimeError for an encrypted member, zlib its
#: own error for corrupt deflate data.
_UNREADABLE = (
    OSError,
    ValueError,
    EOFError,
    zipfile.BadZipFile,
    zlib.error,
    NotImplementedError,
    RuntimeError,
)
#: An archive member may expand at most this many times its compressed size
#: once it holds more than ``_BOMB_BYTES``: vlad's own archives are not
#: compressed, NumPy's compressed descriptors expand a few times, and a member
#: that expands a thousand times is a zip bomb (4 GB of zeros in 4 MB).
_MAX_EXPANSION, _BOMB_BYTES = 100, 64 << 20


def read_numpy_file(
    path: str | os.PathLike,
    kind: str,
    *,
    mmap: bool = False,
    members: tuple[str, ...] | None = None,
) -> np.ndarray | dict[str, np.ndarray]:
    """Read an ``.npy`` or ``.npz`` file, never unpickling.

    The format is told by the file's first bytes, not its name.

    Parameters
    ----------
    path : path-like
    kind : str
        What the file should be, for messages: ``"vlad codebook file"``,
        ``"vectors file"``...
    mmap : bool, default=False
        Map an ``.npy`` read-only instead of reading it.
    members : tuple of str, optional
        Arrays to read from an ``.npz`` (all by default); a missing one is an
        error.

    Returns
    -------
    ndarray
        For an ``.npy``.
    dict of str to ndarray
        For an ``.npz``: the arrays named by ``members``.

    Raises
    ------
    FileNotFoundError
        No such file.
    ValueError
        One line: ``"PATH is not a KIND: ..."`` (not a NumPy file, a pickle, an
        array of Python objects, an archive without a member) or ``"PATH is a
        truncated KIND: ..."``, or ``"PATH is a damaged KIND: ..."``.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> from vlad.core._files import read_numpy_file
    >>> path = pathlib.Path(tempfile.mkdtemp(), "a.npy")
    >>> np.save(path, np.arange(3))
    >>> read_numpy_file(path, "vectors file").tolist()
    [0, 1, 2]
    >>> _ = path.write_bytes(path.read_bytes()[:-8])
    >>> read_numpy_file(path, "vectors file")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    vlad.errors.VladError: ...a.npy is a truncated vectors file: its header promises...
    """
    path = Path(path)
    if not path.is_file():
        if path.exists():  # a folder, a named pipe, a device
            raise VladError(f"{path} is not a {kind}: it is not a regular file")
        raise FileNotFoundError(f"no such file: {path}")
    try:
        with open(path, "rb") as handle:
            start = handle.read(len(_NPY_MAGIC))
            if start.startswith(_NPY_MAGIC):
                handle.seek(0)
                _check_npy_header(handle, path.stat().st_size, path, kind)
                return _load_npy(path, kind, mmap)
    except OSError as error:
        raise VladError(f"{path} is not a readable {kind} ({error})") from None
    if start.startswith(_ZIP_MAGICS):
        return _load_npz(path, kind, members)
    if start.startswith(_PICKLE_PROTO):
        raise VladError(
            f"{path} is not a {kind}: it is a Python pickle, which vlad never loads"
        )
    raise VladError(f"{path} is not a {kind}: it is not a NumPy .npy or .npz file")


def _check_npy_header(handle: IO[bytes], size: int, path: Path, kind: str) -> None:
    """Check an ``.npy`` header against the file's size before NumPy reads it."""
    try:
        version = np.lib.format.read_magic(handle)
        if version == (1, 0):
            shape, _, dtype = np.lib.format.read_array_header_1_0(handle)
        else:
            shape, _, dtype = np.lib.format.read_array_header_2_0(handle)
    except _UNREADABLE as error:
        raise VladError(f"{path} is a damaged {kind}: {error}") from None
    if dtype.hasobject:
        raise VladError(
            f"{path} is not a {kind}: it holds Python objects (pickles), "
            "which vlad never loads"
        )
    expected = int(np.prod(shape, dtype=np.float64)) * dtype.itemsize
    available = size - handle.tell()
    if available < expected:
        raise VladError(
            f"{path} is a truncated {kind}: its header promises {expected} bytes "
            f"of data but the file holds {available}"
        )


def _load_npy(path: Path, kind: str, mmap: bool) -> np.ndarray:
    try:
        return np.load(path, allow_pickle=False, mmap_mode="r" if mmap else None)
    except _UNREADABLE as error:
        raise VladError(f"{path} is a damaged {kind}: {error}") from None


def _load_npz(
    path: Path, kind: str, members: tuple[str, ...] | None
) -> dict[str, np.ndarray]:
    try:
        archive = np.load(path, allow_pickle=False)
    except _UNREADABLE as error:
        raise VladError(f"{path} is a truncated {kind}: {error}") from None
    with archive:
        wanted = archive.files if members is None else list(members)
        missing = [name for name in wanted if name not in archive.files]
        if missing:
            raise VladError(f"{path} is not a {kind}: it lacks {', '.join(missing)}")
        arrays = {}
        for name in wanted:
            try:
                _check_npz_member(archive.zip, name, path, kind)
                arrays[name] = archive[name]
            except _UNREADABLE as error:
                if "allow_pickle" in str(error):
                    raise VladError(
                        f"{path} is not a {kind}: its {name} holds Python objects "
                        "(pickles), which vlad never loads"
                    ) from None
                if str(error).startswith(str(path)):
                    raise
                raise VladError(f"{path} is a damaged {kind}: {error}") from None
    return arrays


def npz_member_header(
    path: str | os.PathLike, kind: str, name: str
) -> tuple[tuple[int, ...], np.dtype]:
    """The shape and dtype of an ``.npz`` member, from its header alone
    (checked as :func:`read_numpy_file` checks it, nothing else read).

    Raises
    ------
    ValueError
        As :func:`read_numpy_file`: not an archive, no such member, a damaged
        or lying header.
    """
    path = Path(path)
    try:
        with zipfile.ZipFile(path) as archive:
            header = _check_npz_member(archive, name, path, kind, to_read=False)
    except _UNREADABLE as error:
        if str(error).startswith(str(path)):
            raise
        raise VladError(f"{path} is not a readable {kind}: {error}") from None
    if header is None:
        raise VladError(f"{path} is not a {kind}: it lacks {name}")
    return header


def _check_npz_member(
    archive: zipfile.ZipFile, name: str, path: Path, kind: str, *, to_read=True
) -> tuple[tuple[int, ...], np.dtype] | None:
    """Check an ``.npz`` member's size and header before NumPy allocates what
    the header promises: a header that promises more data than the member
    holds is refused, and so is a zip bomb when the member is ``to_read``.
    Returns its shape and dtype (None for a member that is not an array)."""
    if f"{name}.npy" not in archive.namelist():
        return None  # not an array: NumPy returns its bytes as they are
    info = archive.getinfo(f"{name}.npy")
    expansion = info.file_size / max(info.compress_size, 1)
    if to_read and info.file_size > _BOMB_BYTES and expansion > _MAX_EXPANSION:
        raise VladError(
            f"{path} is not a {kind}: its {name} expands {expansion:.0f} times, "
            f"from {info.compress_size} to {info.file_size} bytes (a zip bomb?); "
            f"vlad reads members that expand at most {_MAX_EXPANSION} times"
        )
    with archive.open(info) as member:
        version = np.lib.format.read_magic(member)
        if version == (1, 0):
            shape, _, dtype = np.lib.format.read_array_header_1_0(member)
        else:
            shape, _, dtype = np.lib.format.read_array_header_2_0(member)
        available = info.file_size - member.tell()
    if dtype.hasobject:
        raise VladError(
            f"{path} is not a {kind}: its {name} holds Python objects (pickles), "
            "which vlad never loads"
        )
    expected = int(np.prod(shape, dtype=np.float64)) * dtype.itemsize
    if available < expected:
        raise VladError(
            f"{path} is a damaged {kind}: the header of its {name} promises "
            f"{expected} bytes of data but it holds {available}"
        )
    return tuple(shape), dtype


def save_record_archive(
    path: str | os.PathLike,
    metadata: dict,
    *,
    overwrite: bool = False,
    **arrays: np.ndarray,
) -> None:
    """Atomically write ``arrays`` and a JSON ``metadata`` record to an ``.npz``
    (an existing file is replaced only with ``overwrite``; see
    :func:`atomic_writes`)."""
    record = np.array(json.dumps(metadata, sort_keys=True))
    with atomic_write(path, overwrite=overwrite) as handle:
        np.savez(handle, metadata=record, **arrays)


def read_record_archive(
    path: str | os.PathLike, kind: str, required: tuple[str, ...]
) -> tuple[dict[str, np.ndarray], dict]:
    """Read an ``.npz`` written by :func:`save_record_archive`.

    Parameters
    ----------
    path : path-like
    kind : str
        The ``format`` its record must name: ``"codebook"``, ``"descriptor
        sets"``.
    required : tuple of str
        Array names the file must hold besides ``metadata``.

    Returns
    -------
    arrays : dict of str to ndarray
    metadata : dict

    Raises
    ------
    FileNotFoundError
        No such file.
    ValueError
        As :func:`read_numpy_file`, or a record that is not JSON, names another
        format or holds a ``descriptor`` record that is not a mapping.
    """
    noun = f"vlad {kind} file"
    arrays = read_numpy_file(path, noun, members=("metadata", *required))
    if not isinstance(arrays, dict):
        raise VladError(
            f"{path} is not a {noun}: it holds a single array, not an .npz archive"
        )
    metadata = parse_record(arrays.pop("metadata"), path, noun)
    found = metadata.get("format") if isinstance(metadata, dict) else None
    if found != kind:
        raise VladError(f"{path} is not a {noun}: its metadata says format={found!r}")
    descriptor = metadata.get("descriptor", {})
    if not isinstance(descriptor, dict):
        raise VladError(
            f"{path} is a damaged {noun}: its descriptor record is a "
            f"{type(descriptor).__name__}, not a mapping"
        )
    return arrays, metadata


def parse_record(record: np.ndarray, path: str | os.PathLike, noun: str):
    """The JSON value a record archive's ``metadata`` member holds.

    Raises
    ------
    ValueError
        Not one JSON string (bytes, numbers, an array of strings), or not
        JSON, or nested too deep to read.
    """
    if record.ndim != 0 or record.dtype.kind != "U":
        raise VladError(
            f"{path} is a damaged {noun}: its metadata is not one JSON string but "
            f"an array of shape {record.shape} and dtype {record.dtype}"
        )
    try:
        return json.loads(str(record))
    except (ValueError, RecursionError) as error:  # JSONDecodeError: ValueError
        raise VladError(f"{path} is a damaged {noun}: {error}") from None


def check_format_version(
    path: str | os.PathLike, record: dict, noun: str, supported: int
) -> int:
    """The ``format_version`` of a file's record, refused if newer than this
    vlad reads (a file written by a later release).

    Examples
    --------
    >>> check_format_version("index.json", {"format_version": 1}, "vlad index", 1)
    1
    >>> check_format_version("index.json", {"format_version": 3}, "vlad index", 1)
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    vlad.errors.VladError: index.json was written by a newer vlad (vlad index format...
    """
    version = record.get("format_version", 1)
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise VladError(f"{path} is a damaged {noun}: format_version={version!r}")
    if version > supported:
        raise VladError(
            f"{path} was written by a newer vlad ({noun} format version {version}; "
            f"this version reads up to {supported}): upgrade vlad"
        )
    return version
