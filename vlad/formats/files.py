"""Safe files: atomic writes, and the one reader of ``.npy`` and ``.npz`` files.

Every file vlad reads goes through :func:`read_numpy_file`: it never unpickles
(``allow_pickle=False``), tells a file that is not NumPy's, a pickle and a
truncated file apart by their bytes before NumPy allocates anything, and says
what is wrong in one line of the same wording for every format.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import numpy as np

__all__ = [
    "atomic_write",
    "atomic_writes",
    "check_format_version",
    "read_numpy_file",
    "read_record_archive",
    "save_record_archive",
]

_NPY_MAGIC = b"\x93NUMPY"
_ZIP_MAGICS = (b"PK\x03\x04", b"PK\x05\x06")
#: Protocol 2 and later pickles start with this opcode.
_PICKLE_PROTO = b"\x80"
_UNREADABLE = (OSError, ValueError, EOFError, zipfile.BadZipFile)


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike) -> Iterator[IO[bytes]]:
    """Open a temporary file beside ``path``; rename it onto ``path`` on success.

    An interrupted or failed write leaves ``path`` untouched (either absent or
    its previous content) and removes the temporary file.
    """
    with atomic_writes(path) as (handle,):
        yield handle


@contextlib.contextmanager
def atomic_writes(*paths: str | os.PathLike) -> Iterator[list[IO[bytes]]]:
    """:func:`atomic_write` for several files written together.

    Every file is written to a temporary file beside its target first; only
    when all were written are they renamed into place, in the order given. A
    failure while writing leaves every target as it was. The files get the
    mode a newly created file gets (``0o666`` less the process's umask).
    """
    targets = [Path(path) for path in paths]
    handles: list[IO[bytes]] = []
    temporary_paths: list[Path] = []
    try:
        for target in targets:
            handle, temporary = _new_temporary_file(target)
            handles.append(handle)
            temporary_paths.append(temporary)
        yield handles
        for handle in handles:
            handle.flush()
            os.fsync(handle.fileno())
            handle.close()
    except BaseException:
        for handle in handles:
            handle.close()
        for temporary in temporary_paths:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary)
        raise
    for temporary, target in zip(temporary_paths, targets, strict=True):
        os.replace(temporary, target)


def _new_temporary_file(target: Path) -> tuple[IO[bytes], Path]:
    """A new, hidden file beside ``target``, open for writing.

    Created with mode ``0o666`` so that the operating system applies the umask,
    as it does to any new file (reading the umask would mean changing it).
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    while True:
        name = target.parent / f".{target.name}.{secrets.token_hex(4)}.tmp"
        try:
            descriptor = os.open(name, flags, 0o666)
        except FileExistsError:
            continue
        return open(descriptor, "wb"), name


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
    >>> from vlad.formats.files import read_numpy_file
    >>> path = pathlib.Path(tempfile.mkdtemp(), "a.npy")
    >>> np.save(path, np.arange(3))
    >>> read_numpy_file(path, "vectors file").tolist()
    [0, 1, 2]
    >>> _ = path.write_bytes(path.read_bytes()[:-8])
    >>> read_numpy_file(path, "vectors file")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: ...a.npy is a truncated vectors file: its header promises 24 bytes...
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no such file: {path}")
    try:
        with open(path, "rb") as handle:
            start = handle.read(len(_NPY_MAGIC))
            if start.startswith(_NPY_MAGIC):
                handle.seek(0)
                _check_npy_header(handle, path.stat().st_size, path, kind)
                return _load_npy(path, kind, mmap)
    except OSError as error:
        raise ValueError(f"{path} is not a readable {kind} ({error})") from None
    if start.startswith(_ZIP_MAGICS):
        return _load_npz(path, kind, members)
    if start.startswith(_PICKLE_PROTO):
        raise ValueError(
            f"{path} is not a {kind}: it is a Python pickle, which vlad never loads"
        )
    raise ValueError(f"{path} is not a {kind}: it is not a NumPy .npy or .npz file")


def _check_npy_header(handle: IO[bytes], size: int, path: Path, kind: str) -> None:
    """Check an ``.npy`` header against the file's size before NumPy reads it."""
    try:
        version = np.lib.format.read_magic(handle)
        if version == (1, 0):
            shape, _, dtype = np.lib.format.read_array_header_1_0(handle)
        else:
            shape, _, dtype = np.lib.format.read_array_header_2_0(handle)
    except _UNREADABLE as error:
        raise ValueError(f"{path} is a damaged {kind}: {error}") from None
    if dtype.hasobject:
        raise ValueError(
            f"{path} is not a {kind}: it holds Python objects (pickles), "
            "which vlad never loads"
        )
    expected = int(np.prod(shape, dtype=np.float64)) * dtype.itemsize
    available = size - handle.tell()
    if available < expected:
        raise ValueError(
            f"{path} is a truncated {kind}: its header promises {expected} bytes "
            f"of data but the file holds {available}"
        )


def _load_npy(path: Path, kind: str, mmap: bool) -> np.ndarray:
    try:
        return np.load(path, allow_pickle=False, mmap_mode="r" if mmap else None)
    except _UNREADABLE as error:
        raise ValueError(f"{path} is a damaged {kind}: {error}") from None


def _load_npz(
    path: Path, kind: str, members: tuple[str, ...] | None
) -> dict[str, np.ndarray]:
    try:
        archive = np.load(path, allow_pickle=False)
    except _UNREADABLE as error:
        raise ValueError(f"{path} is a truncated {kind}: {error}") from None
    with archive:
        wanted = archive.files if members is None else list(members)
        missing = [name for name in wanted if name not in archive.files]
        if missing:
            raise ValueError(f"{path} is not a {kind}: it lacks {', '.join(missing)}")
        arrays = {}
        for name in wanted:
            try:
                arrays[name] = archive[name]
            except _UNREADABLE as error:
                if "allow_pickle" in str(error):
                    raise ValueError(
                        f"{path} is not a {kind}: its {name} holds Python objects "
                        "(pickles), which vlad never loads"
                    ) from None
                raise ValueError(f"{path} is a damaged {kind}: {error}") from None
    return arrays


def save_record_archive(
    path: str | os.PathLike, metadata: dict, **arrays: np.ndarray
) -> None:
    """Atomically write ``arrays`` and a JSON ``metadata`` record to an ``.npz``."""
    record = np.array(json.dumps(metadata, sort_keys=True))
    with atomic_write(path) as handle:
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
        raise ValueError(
            f"{path} is not a {noun}: it holds a single array, not an .npz archive"
        )
    try:
        metadata = json.loads(str(arrays.pop("metadata")))
    except ValueError as error:  # json.JSONDecodeError is a ValueError
        raise ValueError(f"{path} is a damaged {noun}: {error}") from None
    found = metadata.get("format") if isinstance(metadata, dict) else None
    if found != kind:
        raise ValueError(f"{path} is not a {noun}: its metadata says format={found!r}")
    descriptor = metadata.get("descriptor", {})
    if not isinstance(descriptor, dict):
        raise ValueError(
            f"{path} is a damaged {noun}: its descriptor record is a "
            f"{type(descriptor).__name__}, not a mapping"
        )
    return arrays, metadata


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
    Traceback (most recent call last):
    ...
    ValueError: index.json was written by a newer vlad (vlad index format ...
    """
    version = record.get("format_version", 1)
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise ValueError(f"{path} is a damaged {noun}: format_version={version!r}")
    if version > supported:
        raise ValueError(
            f"{path} was written by a newer vlad ({noun} format version {version}; "
            f"this version reads up to {supported}): upgrade vlad"
        )
    return version
