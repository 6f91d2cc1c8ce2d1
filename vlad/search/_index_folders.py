"""Reading the files of an index folder (exact, faiss or ASMK), each missing
or damaged file refused in one line that names the folder's kind."""

from __future__ import annotations

import json
from pathlib import Path

from vlad.errors import VladError

__all__ = ["folder_member", "read_folder_json"]


def folder_member(folder: Path, name: str, kind: str) -> Path:
    """The path of the file ``name`` that the index folder must hold.

    Raises
    ------
    ValueError
        ``"{folder} is a damaged {kind}: no {name}"``.
    """
    path = folder / name
    if not path.is_file():
        raise VladError(f"{folder} is a damaged {kind}: no {name}")
    return path


def read_folder_json(folder: Path, name: str, value_type: type, kind: str):
    """The JSON document ``name`` of the index folder, of ``value_type``.

    Raises
    ------
    ValueError
        Missing (:func:`folder_member`), not JSON, nested past Python's
        recursion limit, or another JSON type.
    """
    path = folder_member(folder, name, kind)
    try:
        value = json.loads(path.read_bytes())
    except (ValueError, RecursionError) as error:
        raise VladError(f"{path} is damaged: {error}") from None
    if not isinstance(value, value_type):
        raise VladError(f"{path} is damaged: it holds a JSON {type(value).__name__}")
    return value
