"""Atomic outputs of the benchmarks: a file or a folder appears whole, or not
at all.

The benchmarks use only vlad's public names; these two helpers are theirs,
not the library's (vlad writes its own outputs atomically, but writing files is
not what it offers its users).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

__all__ = ["atomic_write", "replace_folder"]


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike) -> Iterator[BinaryIO]:
    """A binary file that takes ``path``'s place only when the block ends
    well; on any error it is removed and ``path`` is as it was.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp(), "results.json")
    >>> with atomic_write(path) as handle:
    ...     _ = handle.write(b"{}")
    >>> path.read_text()
    '{}'
    """
    path = Path(path)
    handle = tempfile.NamedTemporaryFile(
        dir=path.parent, prefix=f".{path.name}.", suffix=".partial", delete=False
    )
    try:
        with handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(handle.name, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(handle.name)
        raise


@contextlib.contextmanager
def replace_folder(
    path: str | os.PathLike, *, overwrite: bool = False
) -> Iterator[Path]:
    """A new folder, filled by the block, that takes ``path``'s place only
    when the block ends well; on any error it is removed and ``path`` is as it
    was.

    Raises
    ------
    FileExistsError
        ``path`` exists and ``overwrite`` is False (checked before the block
        and again before the rename).
    """
    path = Path(path)
    if path.exists() and not overwrite:
        raise FileExistsError(f"{path} exists; pass --overwrite to replace it")
    partial = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}."))
    try:
        yield partial
        if path.exists():
            if not overwrite:
                raise FileExistsError(f"{path} appeared meanwhile; it is kept")
            old = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}.old."))
            os.replace(path, old / path.name)
            os.replace(partial, path)
            shutil.rmtree(old)
        else:
            os.replace(partial, path)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
