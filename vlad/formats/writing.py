"""Files written whole or not at all: atomic writes of one or several files.

A file is written to a temporary file beside its target and moved into place
only when complete. On Linux the temporary file has no name until then
(``O_TMPFILE``), so that nothing is left behind even when the process is
killed; elsewhere it is a hidden file removed on any error the process sees.
Without ``overwrite``, a target that appears while the files are written is
never replaced.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import IO

__all__ = ["atomic_write", "atomic_writes", "check_writable_folder"]


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
