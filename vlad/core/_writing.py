"""Files written whole or not at all: atomic writes of one or several files.

A file is written to a temporary file beside its target and moved into place
only when complete. On Linux the temporary file has no name until then
(``O_TMPFILE``), so that nothing is left behind even when the process is
killed while writing; elsewhere it is a hidden file removed on any error the
process sees. A hidden name (``.NAME.PID.XXXXXXXX.tmp``) also stands for an
unnamed file for the instant between its link and the rename that replaces
a target; it carries the writer's process id, so that what a killed
process left is recognised and removed by the next write to the same target
(see :func:`remove_stale_temporaries`). Without ``overwrite``, a target that
appears while the files are written is never replaced.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from vlad.core._signals import deferred_signals

__all__ = [
    "atomic_write",
    "atomic_writes",
    "REPLACE_HINT",
    "check_writable_folder",
    "remove_stale_temporaries",
    "remove_stale_temporaries_in",
    "writer_gone",
]

#: What a refusal to replace an output says, in the library's words and the
#: command line's.
REPLACE_HINT = "pass overwrite=True (--overwrite) to replace it"
#: A hidden temporary name's tail: the writer's process id, a random token.
_TEMPORARY_TAIL = re.compile(r"\.([0-9]+)\.[0-9a-f]{8}\.tmp\Z")
#: A temporary file this old is stale whoever wrote it (a process id may have
#: been given to another process since): a day, in seconds.
STALE_AFTER = 24 * 3600


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
    *paths: str | os.PathLike, overwrite: bool = True, remove_stale: bool = True
) -> Iterator[list[IO[bytes]]]:
    """:func:`atomic_write` for several files written together.

    Every file is written to a temporary file beside its target first; only
    when all were written are they moved into place, in the order given, the
    last one last (when replacing, the old last one is moved aside first: a
    process killed among the moves leaves no last file, never a mixed set).
    A failure while writing or moving, or a signal raised as an exception
    before the last move, leaves every target as it was: the old files are
    kept aside until the new ones are all in place, and put back otherwise.
    The files get the mode a newly created file gets (``0o666`` less the
    process's umask).

    Where the system allows (Linux), the temporary files have no name until
    they are complete, so nothing is left behind even when the process is
    killed (SIGKILL) while writing or the disk fills up; elsewhere they are
    hidden files (``.NAME.PID.XXXXXXXX.tmp``) removed on any error the process
    sees (SIGTERM and Ctrl-C included, as exceptions). Replacing a target
    links a complete file to such a hidden name for the instant before the
    rename, and the old files of several set aside have such names until the
    new ones are in; a process killed there leaves them, and the next call
    writing the same target removes them (:func:`remove_stale_temporaries`).

    Parameters
    ----------
    *paths : path-like
    overwrite : bool, default=True
        Replace files that exist. When False, a target that exists is refused
        before anything is written, and one that appears while the files are
        written (another process writing the same output) is never replaced:
        the targets already moved into place by this call are removed again.
    remove_stale : bool, default=True
        First remove the targets' temporary files that killed processes left
        (:func:`remove_stale_temporaries`, a listing of the folder per
        target). False for callers that write many files into one folder and
        remove them once for all (:func:`remove_stale_temporaries_in`).

    Raises
    ------
    FileExistsError
        ``overwrite`` is False and a target exists, or appeared meanwhile.
    """
    targets = [Path(path) for path in paths]
    for target in targets if remove_stale else ():
        remove_stale_temporaries(target)
    if not overwrite:
        for target in targets:
            if os.path.lexists(target):
                raise FileExistsError(f"{target} exists; {REPLACE_HINT}")
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
    """Move finished temporary files onto their targets, in order; on any
    failure put every target back as it was, and without ``overwrite`` refuse
    a target that appeared meanwhile.

    With several files, the last one's presence says the set is complete: when
    it is replaced, the old one is moved aside first, so that a process killed
    among the moves leaves the set incomplete (no last file), never new files
    beside an old last file. Each other old file is moved aside just before
    its replacement moves in. An error or a signal (raised as an exception:
    Ctrl-C, SIGTERM under the ``vlad`` command) before the last move puts the
    old files back; signals wait meanwhile (:func:`deferred_signals`), so that
    putting back is never cut short. The old files go once all moved in.
    """
    moves = _Moves(aside=overwrite and len(targets) > 1)
    with deferred_signals() as signals:
        try:
            moves.set_aside(targets[-1])
            for temporary, target in zip(temporaries, targets, strict=True):
                signals.raise_received()
                moves.set_aside(target)
                _publish_one(temporary, target, overwrite)
                moves.published.append(target)
        except BaseException:
            moves.undo(targets)
            raise
        moves.forget()


def _publish_one(temporary: _TemporaryFile, target: Path, overwrite: bool) -> None:
    """:meth:`_TemporaryFile.publish`, its errors named after the target."""
    try:
        temporary.publish(target, overwrite)
    except FileExistsError:
        raise FileExistsError(
            f"{target} appeared while it was being written (another process "
            f"writing the same output?); it was not replaced: {REPLACE_HINT}"
        ) from None
    except OSError as error:  # named after the target, not the temporary
        raise type(error)(error.errno, error.strerror, str(target)) from None


class _Moves:
    """The moves of :func:`_publish`, to undo on failure: the old files set
    aside (with ``aside``), under hidden names that
    :func:`remove_stale_temporaries` removes if the process is killed, and
    the targets published."""

    def __init__(self, *, aside: bool):
        self.aside = aside
        self.old: dict[Path, Path] = {}
        self.published: list[Path] = []

    def set_aside(self, target: Path) -> None:
        """Move the file at ``target`` to a hidden name (not a folder, which
        the publication then refuses; nothing when there is none)."""
        if not self.aside or target in self.old:
            return
        try:
            if stat.S_ISDIR(os.lstat(target).st_mode):
                return
        except FileNotFoundError:
            return
        hidden = _hidden_name(target)
        os.rename(target, hidden)
        self.old[target] = hidden

    def undo(self, targets: list[Path]) -> None:
        """Put each target back as it was, the last one last (the set is
        whole again only when every file is back)."""
        for target in targets:
            hidden = self.old.pop(target, None)
            with contextlib.suppress(OSError):
                if hidden is not None:
                    os.replace(hidden, target)
                elif target in self.published:
                    os.unlink(target)

    def forget(self) -> None:
        """Remove the old files set aside."""
        for hidden in self.old.values():
            with contextlib.suppress(OSError):
                os.unlink(hidden)
        self.old.clear()


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
        file has it (``FileExistsError`` otherwise). Any other failure is an
        error, and leaves no temporary name (:meth:`discard` removes it)."""
        if self.name is None and self._link_unnamed(target, overwrite):
            return
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

    def _link_unnamed(self, target: Path, overwrite: bool) -> bool:
        """Link the unnamed file through ``/proc/self/fd``: to ``target``
        without ``overwrite`` (True: done), else to a hidden name, recorded
        before it exists, that :meth:`publish` renames onto ``target``
        (``link()`` never replaces). Where linking through ``/proc`` is
        refused, the file is copied to a hidden one instead."""
        descriptor = str(self.handle.fileno())
        folder = os.open("/proc/self/fd", os.O_RDONLY | os.O_DIRECTORY)
        try:
            # src_dir_fd makes os.link call linkat(), which follows the link.
            link = dict(src_dir_fd=folder, follow_symlinks=True)
            if not overwrite:
                os.link(descriptor, target, **link)
                return True
            self.name = _hidden_name(target)
            os.link(descriptor, self.name, **link)
            return False
        except FileExistsError:
            if overwrite:  # the hidden name, taken meanwhile: not ours
                self.name = None
            raise
        except OSError:
            self.name = None
        finally:
            os.close(folder)
        self._name_a_copy(target)
        return False

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
    """A hidden name beside ``target`` that no file has now, holding this
    process's id (see :func:`remove_stale_temporaries`)."""
    while True:
        token = secrets.token_hex(4)
        name = target.parent / f".{target.name}.{os.getpid()}.{token}.tmp"
        if not os.path.lexists(name):
            return name


def remove_stale_temporaries(target: str | os.PathLike) -> list[Path]:
    """Remove the hidden temporary files of writes of ``target`` whose writer
    is gone (see :func:`writer_gone`): the process named in the file's name
    no longer exists (on this machine), or the file is older than a day.

    They are left only by a process killed (SIGKILL, a power cut) while
    writing where files cannot be unnamed, or in the instant between linking
    a complete file and renaming it onto ``target``. Files of a live writer
    are kept. Anything that cannot be removed is left, silently.

    Returns
    -------
    list of Path
        The files removed.
    """
    target = Path(target)
    return _remove_stale(target.parent, f".{target.name}.")


def remove_stale_temporaries_in(folder: str | os.PathLike) -> list[Path]:
    """:func:`remove_stale_temporaries` for every target in ``folder``."""
    return _remove_stale(Path(folder), ".")


def _remove_stale(folder: Path, prefix: str) -> list[Path]:
    """Remove the stale temporary files of ``folder`` whose name starts with
    ``prefix`` and ends with the tail :func:`_hidden_name` gives."""
    try:
        names = [name for name in os.listdir(folder) if name.startswith(prefix)]
    except OSError:
        return []
    removed = []
    for name in names:
        match = _TEMPORARY_TAIL.search(name, len(prefix) - 1)
        if match is None or (prefix != "." and match.start() != len(prefix) - 1):
            continue
        path = folder / name
        try:
            if writer_gone(int(match.group(1)), path):
                os.unlink(path)
                removed.append(path)
        except OSError:
            continue
    return removed


def writer_gone(pid: int | None, path: Path) -> bool:
    """Whether the temporary ``path`` of the process ``pid`` (None: unknown)
    is stale: that process no longer exists on this machine, or the path was
    last changed more than :data:`STALE_AFTER` seconds ago (a process id may
    be given to another process since).

    Raises
    ------
    OSError
        ``path`` cannot be examined (it was removed meanwhile).
    """
    if pid is not None and not _process_exists(pid):
        return True
    return time.time() - os.lstat(path).st_mtime > STALE_AFTER


def _process_exists(pid: int) -> bool:
    """Whether a process ``pid`` exists (True where that cannot be told)."""
    if pid == os.getpid():
        return True
    if os.name == "nt":  # os.kill(pid, 0) would send Ctrl-C there
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (OSError, OverflowError):  # another user's (EPERM), or no such id
        return True
    return True


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
