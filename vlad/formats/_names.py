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

import re
from collections.abc import Sequence

from vlad.errors import VladError

__all__ = [
    "check_line_names",
    "names_from_json",
    "names_from_lines",
    "names_to_lines",
    "printable",
]

#: Characters that would act on a terminal rather than show: C0 and C1
#: controls (escape sequences start with them) and the surrogates that stand
#: for undecodable bytes of file names.
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
#: The same, less the undecodable bytes that are no control in any encoding
#: (``0xa0`` to ``0xff``: a Latin-1 name's letters).
_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udc9f\udd00-\udfff]")


def printable(text: str, *, keep_undecodable: bool = False) -> str:
    r"""``text`` with control characters and undecodable bytes escaped
    (``\x1b``), so that a file name or a file's record cannot drive the
    terminal, nor break a line or a column of a table.

    Parameters
    ----------
    text : str
    keep_undecodable : bool, default=False
        Keep the surrogate escapes of undecodable bytes ``0xa0`` to ``0xff``
        (for a caller that writes the text as the file system's bytes, with
        :func:`os.fsencode`, so that a Latin-1 name prints as itself); bytes
        ``0x80`` to ``0x9f`` are escaped anyway, being controls to a terminal
        that reads 8-bit bytes.

    Examples
    --------
    >>> from vlad.formats._names import printable
    >>> printable("photo\x1b[2J.jpg")
    'photo\\x1b[2J.jpg'
    >>> name = "caf\udce9\t.jpg"
    >>> printable(name), printable(name, keep_undecodable=True)
    ('caf\\xe9\\x09.jpg', 'caf\udce9\\x09.jpg')
    """
    return (_CONTROLS if keep_undecodable else _UNPRINTABLE).sub(_escaped, text)


def _escaped(match: re.Match) -> str:
    code = ord(match.group())
    if 0xDC80 <= code <= 0xDCFF:  # an undecodable byte (surrogateescape)
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


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
        raise VladError(f"{source} is not a list of names (a JSON array of strings)")
    return value


def check_line_names(names: Sequence[str]) -> None:
    """Raise ``ValueError`` for a name that one line cannot hold.

    Examples
    --------
    >>> check_line_names(["a.jpg", "tab\\there.jpg"])
    >>> check_line_names(["two\\nlines.jpg"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    vlad.errors.VladError: names of a vectors .npy ... got 'two\\nlines.jpg' ...
    """
    broken = next((name for name in names if "\n" in name or "\r" in name), None)
    if broken is not None:
        raise VladError(
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
