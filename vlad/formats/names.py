"""Image names on disk: any file name, one per row, never shifting a row.

A file name may hold a line break, a tab or bytes that are not UTF-8 (read
with Python's ``surrogateescape``, as :func:`os.fsdecode` gives them). Folders
of vector shards store names as a JSON array: JSON escapes line breaks and
tabs, and with ASCII output an undecodable byte is written as the lone
surrogate escape ``"\\udcXX"``, which reads back as the same string, so the
original bytes come back with :func:`os.fsencode`.

Vectors ``.npy`` files keep their plain ``.names.txt`` of one name per line
(the common case, readable by any tool): it is safe because a name with a
line break is refused before anything is written, and undecodable bytes are
written back as the bytes they were.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["check_line_names", "names_from_json", "names_from_lines", "names_to_lines"]


def names_from_json(value, source: str) -> list[str]:
    """The names of a parsed JSON array, checked to be strings.

    Parameters
    ----------
    value : object
        What ``json.loads`` gave for the array.
    source : str
        Where it was read, for the error message.

    Raises
    ------
    ValueError
        Not an array of strings.

    Examples
    --------
    >>> import json
    >>> names = ["a\\nb", "c\\td", "caf\\udce9.jpg"]
    >>> names_from_json(json.loads(json.dumps(names)), "names") == names
    True
    """
    if not isinstance(value, list) or not all(isinstance(name, str) for name in value):
        raise ValueError(f"{source} is not a list of names (a JSON array of strings)")
    return value


def check_line_names(names: Sequence[str]) -> None:
    """Raise ``ValueError`` for a name that one line cannot hold.

    Examples
    --------
    >>> check_line_names(["a.jpg", "tab\\there.jpg"])
    >>> check_line_names(["two\\nlines.jpg"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: names of a vectors .npy ... got 'two\\nlines.jpg' (write a folder ...
    """
    broken = next((name for name in names if "\n" in name or "\r" in name), None)
    if broken is not None:
        raise ValueError(
            "names of a vectors .npy are one per line and must not hold line breaks; "
            f"got {broken!r} (write a folder of shards instead, an output without "
            ".npy, which stores any name)"
        )


def names_to_lines(names: Sequence[str]) -> bytes:
    """One name per line, undecodable bytes written back as they were.

    Raises
    ------
    ValueError
        A name with a line break (see :func:`check_line_names`).
    """
    check_line_names(names)
    return "".join(f"{name}\n" for name in names).encode(errors="surrogateescape")


def names_from_lines(data: bytes) -> list[str]:
    """The names of a ``.names.txt``, one per line.

    Examples
    --------
    >>> names_from_lines(b"a.jpg\\ncaf\\xe9.jpg\\n") == ["a.jpg", "caf\\udce9.jpg"]
    True
    """
    names = data.decode(errors="surrogateescape").split("\n")
    if names[-1] == "":
        names.pop()
    return names
