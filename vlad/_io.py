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
    target = Path(path)
    handle = tempfile.NamedTemporaryFile(
        dir=target.parent or ".", prefix=f".{target.name}.", suffix=".tmp", delete=False
    )
    try:
        with handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(handle.name, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(handle.name)
        raise


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
    try:
        with np.load(path, allow_pickle=False) as archive:
            names = set(archive.files)
            missing = [name for name in ("metadata", *required) if name not in names]
            if missing:
                raise ValueError(
                    f"{path} is not a vlad {kind} file: it lacks {', '.join(missing)}"
                )
            arrays = {name: archive[name] for name in required}
            metadata = json.loads(str(archive["metadata"]))
    except (OSError, zipfile.BadZipFile, EOFError, json.JSONDecodeError) as error:
        raise ValueError(
            f"{path} is not a readable vlad {kind} file ({error})"
        ) from None
    except ValueError as error:
        if "is not a vlad" in str(error):
            raise
        raise ValueError(
            f"{path} is not a readable vlad {kind} file ({error})"
        ) from None
    found = metadata.get("format") if isinstance(metadata, dict) else None
    if found != kind:
        raise ValueError(
            f"{path} is not a vlad {kind} file (its metadata says format={found!r})"
        )
    return arrays, metadata
