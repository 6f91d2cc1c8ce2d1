"""Commands as a generated page shows them: without the folders of the machine
that ran them.

A run records its command as it was typed (``python -m
benchmarks.realviews.run /home/me/scratch/realviews --json
/home/me/scratch/run.json``), which is right for the record and means nothing
to a reader. The pages show every absolute path under one placeholder folder,
``DATA/``, standing for the folder that held the runs' files: the deepest
folder that holds them all.
"""

from __future__ import annotations

import posixpath
import shlex
from collections.abc import Sequence

__all__ = ["PLACEHOLDER", "portable_commands"]

#: The folder that stands for the one that held the runs' files.
PLACEHOLDER = "DATA"


def portable_commands(
    commands: Sequence[str], placeholder: str = PLACEHOLDER
) -> list[str]:
    """``commands`` with their absolute paths under ``placeholder``.

    Each absolute path, as a word or as the value of ``--option=PATH``, is
    written relative to the deepest folder that holds the folders of all the
    absolute paths of ``commands``, under ``placeholder``; relative paths and
    other words stay. The same path reads the same in every command.

    Parameters
    ----------
    commands : sequence of str
        Shell commands, as :func:`shlex.join` writes them.
    placeholder : str, default=PLACEHOLDER

    Returns
    -------
    list of str

    Examples
    --------
    >>> portable_commands([
    ...     "python -m benchmarks.realviews.run /x/rv/views --json=/x/rv/a.json",
    ...     "python -m benchmarks.realviews.page /x/rv/named/a.json -o page.md",
    ... ])  # doctest: +NORMALIZE_WHITESPACE
    ['python -m benchmarks.realviews.run DATA/views --json=DATA/a.json',
     'python -m benchmarks.realviews.page DATA/named/a.json -o page.md']
    """
    split = [shlex.split(command) for command in commands]
    paths = [
        found[1]
        for words in split
        for word in words
        if (found := _split_path(word)) is not None
    ]
    if not paths:
        return list(commands)
    root = posixpath.commonpath([posixpath.dirname(path) for path in paths])

    def portable(word: str) -> str:
        found = _split_path(word)
        if found is None:
            return word
        option, path = found
        return option + posixpath.join(placeholder, posixpath.relpath(path, root))

    return [shlex.join(portable(word) for word in words) for words in split]


def _split_path(word: str) -> tuple[str, str] | None:
    """``("--option=", path)`` or ``("", path)`` for a word that is an
    absolute path or ends with one (``--json=/x/y``); None for another."""
    option = ""
    if word.startswith("-") and "=" in word:
        option, word = word.split("=", 1)
        option += "="
    if posixpath.isabs(word) and posixpath.normpath(word) != "/":
        return option, posixpath.normpath(word)
    return None
