"""Writing and reading the files of an index folder (exact, faiss or ASMK):
the record, ``index.json``, written last with the SHA-256 of every other
file, and each file checked against it when read; each missing or damaged
file refused in one line that names it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from vlad.core._validation import all_finite
from vlad.errors import DamagedIndexError

__all__ = [
    "CHECKSUMS",
    "RECORD_NAME",
    "check_checksums",
    "check_finite_member",
    "file_checksum",
    "folder_member",
    "read_folder_json",
    "write_record",
]

#: The record of an index folder.
RECORD_NAME = "index.json"
#: The record's field that holds the checksum of each other file, by name.
CHECKSUMS = "checksums"
#: Bytes read at a time to checksum a file.
_CHUNK_BYTES = 1 << 22


def folder_member(folder: Path, name: str, kind: str) -> Path:
    """The path of the file ``name`` that the index folder must hold.

    Raises
    ------
    DamagedIndexError
        ``"{folder} is a damaged {kind}: no {name}"``.
    """
    path = folder / name
    if not path.is_file():
        raise DamagedIndexError(f"{folder} is a damaged {kind}: no {name}")
    return path


def read_folder_json(folder: Path, name: str, value_type: type, kind: str):
    """The JSON document ``name`` of the index folder, of ``value_type``.

    Raises
    ------
    DamagedIndexError
        Missing (:func:`folder_member`), not JSON, nested past Python's
        recursion limit, or another JSON type.
    """
    path = folder_member(folder, name, kind)
    try:
        value = json.loads(path.read_bytes())
    except (ValueError, RecursionError) as error:
        raise DamagedIndexError(f"{path} is damaged: {error}") from None
    if not isinstance(value, value_type):
        raise DamagedIndexError(
            f"{path} is damaged: it holds a JSON {type(value).__name__}"
        )
    return value


def file_checksum(path: Path) -> str:
    """``"sha256:HEX"`` of a file's bytes, read a few megabytes at a time."""
    digest = hashlib.sha256()
    buffer = bytearray(_CHUNK_BYTES)
    view = memoryview(buffer)
    with open(path, "rb", buffering=0) as handle:
        while n_read := handle.readinto(buffer):
            digest.update(view[:n_read])
    return "sha256:" + digest.hexdigest()


def write_record(folder: Path, record: dict) -> None:
    """Write the folder's record last, with the checksum of each other file
    (:data:`CHECKSUMS`), which :func:`check_checksums` compares when read."""
    checksums = {
        path.name: file_checksum(path)
        for path in sorted(folder.iterdir())
        if path.name != RECORD_NAME
    }
    text = json.dumps({**record, CHECKSUMS: checksums}, indent=2) + "\n"
    (folder / RECORD_NAME).write_text(text)


def check_checksums(
    folder: Path, record: dict, names: Iterable[str], kind: str
) -> None:
    """Refuse a file of ``names`` whose bytes are not those whose checksum
    the record holds: changed, replaced or cut since the index was written.

    A record without checksums (written by vlad 0.4) passes: its files are
    checked by what they hold alone.

    Each file is read once more, mostly from the page cache (the reader has
    just read or mapped it): one pass of SHA-256 over the folder at every
    opening of an index, the price of knowing its files are those written.

    Raises
    ------
    DamagedIndexError
        One line naming the file.
    """
    checksums = record.get(CHECKSUMS)
    if checksums is None:
        return
    if not isinstance(checksums, dict):
        raise DamagedIndexError(
            f"{folder / RECORD_NAME} is damaged: its {CHECKSUMS} are a JSON "
            f"{type(checksums).__name__}, not an object"
        )
    for name in names:
        if name not in checksums:
            raise DamagedIndexError(
                f"{folder} is a damaged {kind}: {RECORD_NAME} records no checksum "
                f"of {name}"
            )
        if checksums[name] != file_checksum(folder_member(folder, name, kind)):
            raise DamagedIndexError(
                f"{folder / name} is not the file {RECORD_NAME} records (another "
                f"SHA-256: changed since the {kind} was written); build the "
                "index again"
            )


def check_finite_member(values: np.ndarray, path: Path, kind: str) -> None:
    """Refuse an index file whose float values are not all finite (one pass
    over them, without a temporary the size of the array).

    Raises
    ------
    DamagedIndexError
        ``"{path} is a damaged {kind} file: it holds N NaN or infinite
        values"``.
    """
    if not all_finite(values):
        bad = sum(
            int(np.count_nonzero(~np.isfinite(values[start : start + 65536])))
            for start in range(0, values.shape[0], 65536)
        )
        raise DamagedIndexError(
            f"{path} is a damaged {kind} file: it holds {bad} NaN or infinite value(s)"
        )
