"""Safe files: atomic writes, and the one reader of ``.npy`` and ``.npz`` files.

Every file vlad reads goes through :func:`read_numpy_file`: it never unpickles
(``allow_pickle=False``), tells a file that is not NumPy's, a pickle and a
truncated file apart by their bytes before NumPy allocates anything, and says
what is wrong in one line of the same wording for every format.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import secrets
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import numpy as np

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


@contextlib.contextmanager
def atomic_write(
    path: str | os.PathLike, *, overwrite: bool = True
) -> Iterator[IO[bytes]]:
    """Open a temporary file beside ``path``; move it to ``path`` on success.

    An interrupted or failed write leaves ``path`` untouched (either absent or
    its previous content) and no temporary file (see :func:`atomic_writes`).
    """
    with atomic_writes(path, overwrite=overwrite) as (handle,):
        yield handle


@contextlib.contextmanager
def atomic_writes(
    *paths: str | os.PathLike, overwrite: bool = True
) -> Iterator[list[IO[bytes]]]:
    """:func:`atomic_write` for several files written together.

    Every file is written to a temporary file beside its target first; only
    when all were written are they moved into place, in the order given, the
    last one last (when replacing, the old last one is removed just before:
    a process killed among the moves leaves no last file, never a mixed set).
    A failure while writing leaves every target as it was. The files get the
    mode a newly created file gets (``0o666`` less the process's umask).

    Where the system allows (Linux), the temporary files have no name until
    they are complete, so nothing is left behind even when the process is
    killed (SIGKILL) or the disk fills up; elsewhere they are hidden files
    (``.NAME.XXXXXXXX.tmp``) removed on any error the process sees.

    Parameters
    ----------
    *paths : path-like
    overwrite : bool, default=True
        Replace files that exist. When False, a target that exists is refused
        before anything is written, and one that appears while the files are
        written (another process writing the same output) is never replaced:
        the targets already moved into place by this call are removed again.

    Raises
    ------
    FileExistsError
        ``overwrite`` is False and a target exists, or appeared meanwhile.
    """
    targets = [Path(path) for path in paths]
    if not overwrite:
        for target in targets:
            if os.path.lexists(target):
                raise FileExistsError(f"{target} exists; pass overwrite to replace it")
    temporaries: list[_TemporaryFile] = []
    try:
        for target in targets:
            temporaries.append(_TemporaryFile(target))
        yield [temporary.handle for temporary in temporaries]
        for temporary in temporaries:
            temporary.finish()
        _publish(temporaries, targets, overwrite)
    except OSError as error:
        if type(error) is OSError and error.errno is None:  # NumPy short write
            raise _why_not_written(error, temporaries, targets) from None
        raise
    finally:
        for temporary in temporaries:
            temporary.discard()


def _why_not_written(
    error: OSError, temporaries: list[_TemporaryFile], targets: list[Path]
) -> OSError:
    """A one-line error naming the file and the system's reason for a failed
    write (a full disk, a file size limit), found by writing one more byte."""
    for temporary, target in zip(temporaries, targets, strict=False):
        descriptor = temporary.handle.fileno()
        try:
            os.pwrite(descriptor, b"\0", os.fstat(descriptor).st_size)
        except OSError as reason:
            return type(reason)(f"cannot write {target}: {reason.strerror or reason}")
    return OSError(f"cannot write {targets[-1]}: {error}")


def _publish(
    temporaries: list[_TemporaryFile], targets: list[Path], overwrite: bool
) -> None:
    """Move finished temporary files onto their targets, in order; without
    ``overwrite``, undo and refuse when a target appeared meanwhile.

    With several files, the last one's presence says the set is complete: when
    it is replaced, the old one is removed first, so that a process killed
    between two moves leaves the set incomplete (no last file), never new
    files beside an old last file.
    """
    if overwrite and len(targets) > 1:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(targets[-1])
    published: list[Path] = []
    for temporary, target in zip(temporaries, targets, strict=True):
        try:
            temporary.publish(target, overwrite)
        except FileExistsError:
            for path in published:
                with contextlib.suppress(OSError):
                    os.unlink(path)
            raise FileExistsError(
                f"{target} appeared while it was being written (another process "
                "writing the same output?); it was not replaced: pass overwrite to "
                "replace it"
            ) from None
        published.append(target)


class _TemporaryFile:
    """A file being written beside its target: unnamed (``O_TMPFILE``) where
    the system allows, else hidden."""

    def __init__(self, target: Path):
        self.name: Path | None = None
        descriptor = _unnamed_file(target.parent)
        if descriptor is None:
            descriptor, self.name = _hidden_file(target)
        self.handle: IO[bytes] = open(descriptor, "wb")

    def finish(self) -> None:
        """Write everything to the disk (the handle stays open until
        :meth:`publish`, which needs it)."""
        self.handle.flush()
        os.fsync(self.handle.fileno())

    def publish(self, target: Path, overwrite: bool) -> None:
        """Give the file ``target``'s name; without ``overwrite``, only if no
        file has it (``FileExistsError`` otherwise)."""
        if self.name is None:
            try:
                self._link_unnamed(target, overwrite)
                return
            except FileExistsError:
                raise
            except OSError:  # linking through /proc refused: name a copy
                self._name_a_copy(target)
        if overwrite:
            os.replace(self.name, target)
            self.name = None
            return
        try:
            os.link(self.name, target)
        except FileExistsError:
            raise
        except OSError:  # a file system without hard links: check, then rename
            if os.path.lexists(target):
                raise FileExistsError(target) from None
            os.replace(self.name, target)
            self.name = None

    def _link_unnamed(self, target: Path, overwrite: bool) -> None:
        """Link the unnamed file to ``target`` through ``/proc/self/fd``
        (``link()`` never replaces: to overwrite, link a hidden name and
        rename it)."""
        descriptor = str(self.handle.fileno())
        folder = os.open("/proc/self/fd", os.O_RDONLY | os.O_DIRECTORY)
        try:
            # src_dir_fd makes os.link call linkat(), which follows the link.
            link = dict(src_dir_fd=folder, follow_symlinks=True)
            if not overwrite:
                os.link(descriptor, target, **link)
                return
            hidden = _hidden_name(target)
            os.link(descriptor, hidden, **link)
        finally:
            os.close(folder)
        os.replace(hidden, target)

    def _name_a_copy(self, target: Path) -> None:
        """Copy the unnamed file into a hidden one, which then stands for it."""
        source = self.handle.fileno()
        descriptor, self.name = _hidden_file(target)
        with open(descriptor, "wb") as copy:
            offset, size = 0, os.fstat(source).st_size
            while offset < size:
                chunk = os.pread(source, min(size - offset, 1 << 24), offset)
                copy.write(chunk)
                offset += len(chunk)
            copy.flush()
            os.fsync(copy.fileno())

    def discard(self) -> None:
        """Close the file and remove its temporary name, if any, whatever
        fails (a full disk fails the close's flush again)."""
        with contextlib.suppress(OSError):
            self.handle.close()
        if self.name is not None:
            with contextlib.suppress(OSError):
                os.unlink(self.name)
            self.name = None


def _unnamed_file(folder: Path) -> int | None:
    """A new file without a name in ``folder`` (Linux's ``O_TMPFILE``), or
    None where that is not possible (no ``/proc`` to link it through, another
    system, a file system without it)."""
    flags = getattr(os, "O_TMPFILE", 0)
    if not flags or not os.path.isdir("/proc/self/fd"):
        return None
    try:
        return os.open(folder, flags | os.O_RDWR, 0o666)
    except OSError as error:
        # Kernels and file systems without O_TMPFILE say so in one of these.
        if error.errno in (errno.EOPNOTSUPP, errno.EINVAL, errno.EISDIR):
            return None
        raise


def _hidden_name(target: Path) -> Path:
    """A hidden name beside ``target`` that no file has now."""
    while True:
        name = target.parent / f".{target.name}.{secrets.token_hex(4)}.tmp"
        if not os.path.lexists(name):
            return name


def _hidden_file(target: Path) -> tuple[int, Path]:
    """A new, hidden file beside ``target``, open for writing.

    Created with mode ``0o666`` so that the operating system applies the umask,
    as it does to any new file (reading the umask would mean changing it).
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    while True:
        name = _hidden_name(target)
        try:
            return os.open(name, flags, 0o666), name
        except FileExistsError:
            continue


def check_writable_folder(folder: str | os.PathLike) -> None:
    """Raise ``OSError`` (one line) unless a file can be created in ``folder``:
    checked by creating one (and removing it), as permissions do not tell
    the whole story (read-only file systems, access lists, root).

    Raises
    ------
    PermissionError, OSError
        The folder does not exist, or no file can be written in it.
    """
    folder = Path(folder)
    try:
        descriptor = _unnamed_file(folder)
        if descriptor is None:
            descriptor, name = _hidden_file(folder / "probe")
            os.unlink(name)
        os.close(descriptor)
    except OSError as error:
        raise type(error)(
            f"cannot write in {folder}: {error.strerror or error}"
        ) from None


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
                _check_npz_member(archive.zip, name, path, kind)
                arrays[name] = archive[name]
            except _UNREADABLE as error:
                if "allow_pickle" in str(error):
                    raise ValueError(
                        f"{path} is not a {kind}: its {name} holds Python objects "
                        "(pickles), which vlad never loads"
                    ) from None
                if str(error).startswith(str(path)):
                    raise
                raise ValueError(f"{path} is a damaged {kind}: {error}") from None
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
        raise ValueError(f"{path} is not a readable {kind}: {error}") from None
    if header is None:
        raise ValueError(f"{path} is not a {kind}: it lacks {name}")
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
        raise ValueError(
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
        raise ValueError(
            f"{path} is not a {kind}: its {name} holds Python objects (pickles), "
            "which vlad never loads"
        )
    expected = int(np.prod(shape, dtype=np.float64)) * dtype.itemsize
    if available < expected:
        raise ValueError(
            f"{path} is a damaged {kind}: the header of its {name} promises "
            f"{expected} bytes of data but it holds {available}"
        )
    return tuple(shape), dtype


def save_record_archive(
    path: str | os.PathLike,
    metadata: dict,
    *,
    overwrite: bool = True,
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
        raise ValueError(
            f"{path} is not a {noun}: it holds a single array, not an .npz archive"
        )
    metadata = parse_record(arrays.pop("metadata"), path, noun)
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


def parse_record(record: np.ndarray, path: str | os.PathLike, noun: str):
    """The JSON value a record archive's ``metadata`` member holds.

    Raises
    ------
    ValueError
        Not one JSON string (bytes, numbers, an array of strings), or not
        JSON, or nested too deep to read.
    """
    if record.ndim != 0 or record.dtype.kind != "U":
        raise ValueError(
            f"{path} is a damaged {noun}: its metadata is not one JSON string but "
            f"an array of shape {record.shape} and dtype {record.dtype}"
        )
    try:
        return json.loads(str(record))
    except (ValueError, RecursionError) as error:  # JSONDecodeError: ValueError
        raise ValueError(f"{path} is a damaged {noun}: {error}") from None


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
    ValueError: index.json was written by a newer vlad (vlad index format version 3; ...
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
