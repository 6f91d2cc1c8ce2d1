"""Ground truth: each query's relevant images, junk images and tags.

The JSON file maps each query's name to its lists::

    {"q.jpg": {"relevant": ["a.jpg"], "junk": ["j.jpg"], "tags": ["crop", "easy"]}}

``relevant`` is required (it may be empty: such a query is counted but left
out of the means), ``junk`` and ``tags`` are optional. Names are the ones
``vlad search`` reports: queries by their query names, images by their
database names.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from vlad.errors import VladError

__all__ = [
    "QueryTruth",
    "ground_truth_from_mapping",
    "load_ground_truth",
    "name_list",
    "query_entries",
    "query_truth",
    "read_json_mapping",
]

_LISTS = ("relevant", "junk", "tags")


@dataclass(frozen=True)
class QueryTruth:
    """What one query should find.

    Attributes
    ----------
    relevant : tuple of str
        Database images the query should find.
    junk : tuple of str
        Images that neither count nor cost (removed from its ranking).
    tags : tuple of str
        Groups the query belongs to, for results by tag.
    """

    relevant: tuple[str, ...]
    junk: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        """The query's entry in a ground-truth JSON file."""
        return {
            "relevant": list(self.relevant),
            "junk": list(self.junk),
            "tags": list(self.tags),
        }


def name_list(value, where: str, field: str) -> tuple[str, ...]:
    """``value`` as a tuple of distinct non-empty names, or a one-line error.

    ``where`` starts the message (the file and the query).
    """
    if not isinstance(value, (list, tuple)):
        raise VladError(
            f"{where}: {field!r} must be a list of names; got "
            f"{type(value).__name__} {value!r:.60}"
        )
    seen: set[str] = set()
    for name in value:
        if not isinstance(name, str) or not name:
            raise VladError(
                f"{where}: {field!r} must hold non-empty names (strings); got {name!r}"
            )
        if name in seen:
            raise VladError(f"{where}: {field!r} names {name!r} twice")
        seen.add(name)
    return tuple(value)


def query_truth(
    relevant: tuple[str, ...],
    junk: tuple[str, ...],
    tags: tuple[str, ...],
    where: str,
) -> QueryTruth:
    """A :class:`QueryTruth`, refused when an image is both relevant and junk."""
    both = set(relevant) & set(junk)
    if both:
        raise VladError(
            f"{where}: {sorted(both)[0]!r} is both relevant and junk; it can be "
            "only one"
        )
    return QueryTruth(relevant, junk, tags)


def ground_truth_from_mapping(
    mapping: Mapping, source: str = "ground truth"
) -> dict[str, QueryTruth]:
    """Check a ground truth given as a mapping; return it as :class:`QueryTruth`.

    Parameters
    ----------
    mapping : mapping of str to QueryTruth or dict
        Query name to :class:`QueryTruth`, or to a dict with ``"relevant"``
        (required), ``"junk"`` and ``"tags"`` (optional) lists of strings.
    source : str, default="ground truth"
        What errors call the mapping (a file's path).

    Returns
    -------
    dict of str to QueryTruth
        In the mapping's order.

    Raises
    ------
    ValueError
        No query, an entry that is not a dict of those lists, an unknown key,
        an empty or repeated name within a list, or an image both relevant
        and junk. The message names ``source`` and the query.

    Examples
    --------
    >>> truth = ground_truth_from_mapping({"q.jpg": {"relevant": ["a.jpg"]}})
    >>> truth["q.jpg"]
    QueryTruth(relevant=('a.jpg',), junk=(), tags=())
    >>> ground_truth_from_mapping({"q": {"relevant": "a"}}, "gt.json")
    Traceback (most recent call last):
    ...
    vlad.errors.VladError: gt.json, query 'q': 'relevant' must be a list of names...
    """
    truth: dict[str, QueryTruth] = {}
    for query, entry, where in query_entries(mapping, source, "relevant images"):
        if isinstance(entry, QueryTruth):
            entry = entry.to_dict()
        if not isinstance(entry, Mapping):
            raise VladError(
                f'{where}: expected {{"relevant": [...], "junk": [...], "tags": '
                f"[...]}}; got {type(entry).__name__}"
            )
        unknown = sorted(str(key) for key in entry if key not in _LISTS)
        if unknown:
            hint = ""
            if {"easy", "hard"} & set(entry):
                hint = (
                    " (revisited Oxford and Paris lists need a protocol: easy, "
                    "medium or hard)"
                )
            raise VladError(
                f"{where}: unknown key {unknown[0]!r}; expected relevant, junk and "
                f"tags{hint}"
            )
        if "relevant" not in entry:
            raise VladError(f"{where}: no 'relevant' list")
        lists = [name_list(entry.get(field, []), where, field) for field in _LISTS]
        truth[query] = query_truth(*lists, where)
    return truth


def query_entries(mapping, source: str, what: str):
    """Each query name of a ground-truth mapping, its entry, and the words
    that name it in errors (``"gt.json, query 'q'"``), checked.

    Raises
    ------
    ValueError
        ``mapping`` is not a non-empty mapping (from query names to their
        ``what``), or a query name is not a non-empty string.
    """
    if not isinstance(mapping, Mapping):
        raise VladError(
            f"{source} must map query names to their {what}; got "
            f"{type(mapping).__name__}"
        )
    if not mapping:
        raise VladError(f"{source} names no query")
    for query, entry in mapping.items():
        if not isinstance(query, str) or not query:
            raise VladError(
                f"{source}: a query name must be a non-empty string; got {query!r}"
            )
        yield query, entry, f"{source}, query {query!r}"


def read_json_mapping(path: str | os.PathLike, noun: str) -> dict:
    """The JSON object of the file ``path``, or a one-line error naming it."""
    path = Path(path)
    try:
        text = path.read_bytes().decode("utf-8")
    except IsADirectoryError:
        raise VladError(f"{path} is a folder, not a {noun}") from None
    except UnicodeDecodeError as error:
        raise VladError(f"{path} is not a {noun}: not UTF-8 text ({error})") from None
    try:
        document = json.loads(text)
    except ValueError as error:
        raise VladError(f"{path} is not a {noun}: {error}") from None
    if not isinstance(document, dict):
        raise VladError(
            f"{path} is not a {noun}: expected a JSON object mapping query names "
            f"to their lists; got {type(document).__name__}"
        )
    return document


def load_ground_truth(path: str | os.PathLike) -> dict[str, QueryTruth]:
    """Read a ground-truth JSON file.

    Parameters
    ----------
    path : path-like
        ``{"query": {"relevant": [...], "junk": [...], "tags": [...]}}``;
        ``junk`` and ``tags`` may be left out.

    Returns
    -------
    dict of str to QueryTruth
        Query name to what it should find, in the file's order.

    Raises
    ------
    FileNotFoundError
        No such file.
    ValueError
        Not JSON, not an object, or an entry that is not as above (the
        message names the file and the query).

    Examples
    --------
    >>> import json, os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "ground_truth.json")
    >>> with open(path, "w") as handle:
    ...     json.dump({"q.jpg": {"relevant": ["a.jpg"], "tags": ["crop"]}}, handle)
    >>> load_ground_truth(path)
    {'q.jpg': QueryTruth(relevant=('a.jpg',), junk=(), tags=('crop',))}
    """
    document = read_json_mapping(path, "ground-truth file")
    return ground_truth_from_mapping(document, str(path))
