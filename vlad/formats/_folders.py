"""Folders written whole or not at all."""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from vlad.core._signals import deferred_signals
from vlad.core._writing import REPLACE_HINT, writer_gone

__all__ = ["move_into_place", "remove_stale_folders", "replace_folder"]

#: A hidden folder's tail: the writer's process id, mkdtemp's random part,
#: and what it holds (a new folder being written, an old one set aside).
_FOLDER_TAIL = re.compile(r"\.([0-9]+)\.[a-z0-9_]{8}\.(partial|old)")


@contextlib.contextmanager
def replace_folder(
    path: str | os.PathLike, *, overwrite: bool = False
) -> Iterator[Path]:
    """Fill a new folder that takes ``path``'s place only when the block ends well.

    The block writes into a hidden folder beside ``path``
    (``.NAME.PID.XXXXXXXX.partial``); on success it is renamed to ``path``,
    and on any error (SIGTERM and Ctrl-C included, as exceptions) it is
    removed, and ``path`` is as it was. Without ``overwrite`` the rename
    never replaces anything: a folder that another process put at ``path``
    while the block ran (two runs writing the same index) stays, whole, and
    this call removes its own folder and raises ``FileExistsError``. An
    existing ``path`` is replaced only with ``overwrite``: where the system
    can (Linux's ``renameat2`` with ``RENAME_EXCHANGE``), the two folders
    swap names in one step, so that ``path`` always holds a whole folder,
    the old or the new; elsewhere the old one is moved aside
    (``.NAME.PID.XXXXXXXX.old``) and the new one renamed in, and an
    exception between the two moves the old one back. The old one is then
    removed.

    Hidden folders that a killed process left (SIGKILL, a power cut) are
    removed by the next call for the same ``path``: see
    :func:`remove_stale_folders`.

    Raises
    ------
    FileExistsError
        ``path`` exists and ``overwrite`` is False (checked before the block),
        or appeared while the block ran.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from vlad.formats._folders import replace_folder
    >>> target = Path(tempfile.mkdtemp()) / "index"
    >>> with replace_folder(target) as folder:
    ...     _ = (folder / "a.txt").write_text("a")
    >>> sorted(p.name for p in target.iterdir())
    ['a.txt']
    """
    path = Path(path)
    if path.exists() and not overwrite:
        raise FileExistsError(f"{path} exists; {REPLACE_HINT}")
    if path.exists() and not path.is_dir():
        raise FileExistsError(f"{path} exists and is not a folder")
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_folders(path)
    temporary = _hidden_folder(path, "partial")
    try:
        yield temporary
        if not _rename_new(temporary, path):
            if not overwrite:
                raise FileExistsError(
                    f"{path} appeared while it was being written (another process "
                    "writing the same output?); it was not replaced: pass "
                    "overwrite to replace it"
                )
            _swap_in(temporary, path)
    except BaseException:
        # Only this call's folder: whatever took the path stays as it is.
        shutil.rmtree(temporary, ignore_errors=True)
        raise


def move_into_place(folder: Path, path: Path, *, overwrite: bool = False) -> None:
    """Rename the whole folder ``folder`` to ``path``, as :func:`replace_folder`
    renames what its block wrote: never replacing a folder that appeared
    at ``path`` meanwhile without ``overwrite``, swapping in one step with it.

    Raises
    ------
    FileExistsError
        ``path`` appeared and ``overwrite`` is False; ``folder`` stays.
    """
    if _rename_new(folder, path):
        return
    if not overwrite:
        raise FileExistsError(
            f"{path} appeared while it was being written (another process "
            "writing the same output?); it was not replaced: pass overwrite to "
            "replace it"
        )
    _swap_in(folder, path)


def _hidden_folder(path: Path, kind: str) -> Path:
    prefix = f".{path.name}.{os.getpid()}."
    return Path(tempfile.mkdtemp(prefix=prefix, suffix=f".{kind}", dir=path.parent))


def _rename_new(new: Path, path: Path) -> bool:
    """Rename the folder ``new`` to ``path`` only if nothing is there: True
    when done, False when ``path`` exists (and is left as it is).

    In one step where the system can (Linux's ``renameat2`` with
    ``RENAME_NOREPLACE``), so that another process that takes ``path`` at
    the same instant is never replaced. Elsewhere ``os.rename``, which never
    replaces a file, a link or a folder that holds anything (such as
    another run's index), after a look that leaves only an empty folder
    made in the instant between to be replaced.
    """
    done = _renameat2(new, path, _RENAME_NOREPLACE)
    if done is not None:
        return done
    if os.path.lexists(path):
        return False
    try:
        os.rename(new, path)
    except OSError as error:
        if error.errno in (errno.EEXIST, errno.ENOTEMPTY, errno.ENOTDIR) or (
            os.path.lexists(path)  # Windows says so in its own words
        ):
            return False
        raise
    return True


def _swap_in(new: Path, path: Path) -> None:
    """Put the folder ``new`` at ``path`` and remove the folder that was there.

    Swapped in one step where the system can (then ``new`` names the old
    folder until it is removed); else moved aside and back on any exception
    (a caught signal) before the new one is in place.
    """
    if _exchange(new, path):
        _remove(new)
        return
    aside = _hidden_folder(path, "old")
    old = aside / path.name
    # Signals wait (raised between the moves, or after), so that putting the
    # old folder back is never cut short.
    with deferred_signals() as signals:
        try:
            os.replace(path, old)
            signals.raise_received()
            os.replace(new, path)
        except BaseException:
            # Whatever the moment: the old folder goes back if it was moved.
            if os.path.lexists(old) and not os.path.lexists(path):
                os.replace(old, path)
            shutil.rmtree(aside, ignore_errors=True)
            raise
    shutil.rmtree(aside, ignore_errors=True)


def _remove(path: Path) -> None:
    """Remove a folder, or the link to a folder that stood at the target."""
    if path.is_symlink():
        with contextlib.suppress(OSError):
            path.unlink()
    else:
        shutil.rmtree(path, ignore_errors=True)


#: renameat2's flags that refuse to replace a name and that swap two names,
#: and the "current folder" descriptor.
_RENAME_NOREPLACE, _RENAME_EXCHANGE, _AT_FDCWD = 1, 2, -100


def _exchange(first: Path, second: Path) -> bool:
    """Swap the names of ``first`` and ``second`` atomically (Linux's
    ``renameat2(RENAME_EXCHANGE)``); False where the system or the file
    system cannot, True when done.

    Raises
    ------
    OSError
        The swap is possible but failed (permissions, another file system).
    """
    return _renameat2(first, second, _RENAME_EXCHANGE) is True


def _renameat2(source: Path, target: Path, flags: int) -> bool | None:
    """Linux's ``renameat2(source, target, flags)``: True when done, False
    when ``target`` exists (``RENAME_NOREPLACE``), None where the system or
    the file system has no such call or flag.

    Raises
    ------
    OSError
        Any other failure (permissions, another file system).
    """
    if not sys.platform.startswith("linux"):
        return None
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):  # a C library without it (glibc < 2.28)
        return None
    renameat2.argtypes = [
        ctypes.c_int,
        ctypes.c_char_p,
        ctypes.c_int,
        ctypes.c_char_p,
        ctypes.c_uint,
    ]
    result = renameat2(
        _AT_FDCWD, os.fsencode(source), _AT_FDCWD, os.fsencode(target), flags
    )
    if result == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
        return None
    if code == errno.EEXIST and flags == _RENAME_NOREPLACE:
        return False
    raise OSError(code, os.strerror(code), str(target))


def remove_stale_folders(path: str | os.PathLike) -> list[Path]:
    """Remove the hidden folders (``.partial``, ``.old``) of replacements of
    ``path`` whose process is gone (see :func:`vlad.core._writing.writer_gone`);
    those of a live process are kept.

    Returns
    -------
    list of Path
        The folders removed.
    """
    path = Path(path)
    prefix = f".{path.name}."
    try:
        names = [name for name in os.listdir(path.parent) if name.startswith(prefix)]
    except OSError:
        return []
    removed = []
    for name in names:
        match = _FOLDER_TAIL.fullmatch(name, len(prefix) - 1)
        folder = path.parent / name
        try:
            if match is None or not writer_gone(int(match.group(1)), folder):
                continue
        except OSError:
            continue
        _remove(folder)
        removed.append(folder)
    return removed
