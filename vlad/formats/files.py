"""Safe file input and output: atomic writes and pickle-free ``.npz`` reads."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import numpy as np


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
    failure while writing leaves every target as it was.
    """
    targets = [Path(path) for path in paths]
    handles = []
    try:
        for target in targets:
            handles.append(
                tempfile.NamedTemporaryFile(
                    dir=target.parent, prefix=f".{target.name}.", suffix=".tmp",
                    delete=False,
                )
            )  # fmt: skip
        yield handles
        for handle in handles:
            handle.flush()
            os.fsync(handle.fileno())
            handle.close()
            # Temporary files are private (0600); give the result the usual mode.
            os.chmod(handle.name, 0o666 & ~_umask())
    except BaseException:
        for handle in handles:
            handle.close()
            with contextlib.suppress(FileNotFoundError):
                os.unlink(handle.name)
        raise
    for handle, target in zip(handles, targets, strict=True):
        os.replace(handle.name, target)


def _umask() -> int:
    """The process's file-creation mask (reading it means setting it back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def save_npz(path: str | os.PathLike, metadata: dict, **arrays: np.ndarray) -> None:
    """Atomically write ``arrays`` and a JSON ``metadata`` record to an ``.npz``."""
    record = np.array(json.dumps(metadata, sort_keys=True))
    with atomic_write(path) as handle:
        np.savez(handle, metadata=record, **arrays)


def load_npz(
    path: str | os.PathLike, kind: str, required: tuple[str, ...]
) -> tuple[dict[str, np.ndarray], dict]:
    """Read a ``.npz`` written by :func:`save_npz` without ever unpickling.

    Parameters
    ----------
    path : path-like
        File to read.
    kind : str
        What the file should hold ("codebook", "descriptor sets"), for messages
        and for the ``format`` field of its metadata.
    required : tuple of str
        Array names the file must contain besides ``metadata``.

    Returns
    -------
    arrays : dict of str to ndarray
    metadata : dict

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    ValueError
        If the file is not a readable ``.npz`` of that kind.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no such file: {path}")
    unreadable = (OSError, ValueError, EOFError, zipfile.BadZipFile)
    try:
        archive = np.load(path, allow_pickle=False)
    except unreadable as error:
        raise ValueError(
            f"{path} is not a readable vlad {kind} file ({error})"
        ) from None
    if not isinstance(archive, np.lib.npyio.NpzFile):
        raise ValueError(
            f"{path} is not a vlad {kind} file: it holds a single array, "
            "not an .npz archive"
        )
    with archive:
        missing = [name for name in ("metadata", *required) if name not in archive]
        if missing:
            raise ValueError(
                f"{path} is not a vlad {kind} file: it lacks {', '.join(missing)}"
            )
        try:
            arrays = {name: archive[name] for name in required}
            metadata = json.loads(str(archive["metadata"]))
        except unreadable as error:  # json.JSONDecodeError is a ValueError
            raise ValueError(
                f"{path} is not a readable vlad {kind} file ({error})"
            ) from None
    found = metadata.get("format") if isinstance(metadata, dict) else None
    if found != kind:
        raise ValueError(
            f"{path} is not a vlad {kind} file (its metadata says format={found!r})"
        )
    return arrays, metadata
