"""Folders written whole or not at all."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

__all__ = ["replace_folder"]


@contextlib.contextmanager
def replace_folder(
    path: str | os.PathLike, *, overwrite: bool = False
) -> Iterator[Path]:
    """Fill a new folder that takes ``path``'s place only when the block ends well.

    The block writes into a hidden temporary folder beside ``path``; on
    success it is renamed to ``path``, and on any error (or an interrupted
    process) it is removed or left hidden, and ``path`` is as it was. An
    existing ``path`` is replaced only with ``overwrite``: it is moved aside,
    the new folder renamed into place, and the old one removed.

    Raises
    ------
    FileExistsError
        ``path`` exists and ``overwrite`` is False (checked before the block).

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from vlad.formats.folders import replace_folder
    >>> target = Path(tempfile.mkdtemp()) / "index"
    >>> with replace_folder(target) as folder:
    ...     _ = (folder / "a.txt").write_text("a")
    >>> sorted(p.name for p in target.iterdir())
    ['a.txt']
    """
    path = Path(path)
    if path.exists() and not overwrite:
        raise FileExistsError(f"{path} exists; pass overwrite to replace it")
    if path.exists() and not path.is_dir():
        raise FileExistsError(f"{path} exists and is not a folder")
    parent = path.parent
    parent.mkdir(parents=True, exist_ok=True)
    temporary = Path(
        tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".partial", dir=parent)
    )
    try:
        yield temporary
        if path.exists():
            aside = Path(
                tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".old", dir=parent)
            )
            os.replace(path, aside / path.name)
            os.replace(temporary, path)
            shutil.rmtree(aside, ignore_errors=True)
        else:
            os.replace(temporary, path)
    except BaseException:
        shutil.rmtree(temporary, ignore_errors=True)
        raise
