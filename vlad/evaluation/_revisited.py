"""The revisited Oxford and Paris protocol (ROxford5k, RParis6k): easy, medium
and hard setups from each query's ``easy``, ``hard`` and ``junk`` lists.

The JSON file holds revisitop's ground-truth entries keyed by query name, with
image names in place of indices::

    {"all_souls_000013.jpg": {"easy": [...], "hard": [...], "junk": [...],
                              "bbx": [136.5, 34.1, 648.5, 955.7]}}

``bbx`` (the query's box) is accepted and not used: crop the queries before
searching, as the protocol does. ``tags`` may be given as in
:func:`~vlad.evaluation.load_ground_truth`. The setups are revisitop's
(``example_evaluate.py``):

- easy: relevant = easy; junk = junk + hard;
- medium: relevant = easy + hard; junk = junk;
- hard: relevant = hard; junk = junk + easy.

A query with nothing relevant in a setup (no hard images, for the hard one)
is left out of that setup's means, as revisitop leaves it out.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from vlad.errors import VladError
from vlad.evaluation._ground_truth import (
    QueryTruth,
    name_list,
    query_entries,
    query_truth,
    read_json_mapping,
)

__all__ = [
    "REVISITED_PROTOCOLS",
    "load_revisited_ground_truth",
    "revisited_ground_truth",
]

#: The setups of the revisited protocol, easiest first.
REVISITED_PROTOCOLS = ("easy", "medium", "hard")

_KEYS = ("easy", "hard", "junk", "bbx", "tags")


def revisited_ground_truth(
    mapping: Mapping, protocol: str, source: str = "ground truth"
) -> dict[str, QueryTruth]:
    """One setup of the revisited protocol, from each query's easy, hard and
    junk lists.

    Parameters
    ----------
    mapping : mapping of str to dict
        Query name to ``{"easy": [...], "hard": [...], "junk": [...]}``
        (``"bbx"`` and ``"tags"`` optional).
    protocol : {"easy", "medium", "hard"}
    source : str, default="ground truth"
        What errors call the mapping (a file's path).

    Returns
    -------
    dict of str to QueryTruth
        In the mapping's order.

    Raises
    ------
    ValueError
        An unknown protocol, no query, a missing or unknown key, a list that
        is not of distinct names, or an image in two of the three lists. The
        message names ``source`` and the query.

    Examples
    --------
    >>> lists = {"q.jpg": {"easy": ["e.jpg"], "hard": ["h.jpg"], "junk": ["j.jpg"]}}
    >>> for protocol in REVISITED_PROTOCOLS:
    ...     truth = revisited_ground_truth(lists, protocol)["q.jpg"]
    ...     print(protocol, truth.relevant, truth.junk)
    easy ('e.jpg',) ('j.jpg', 'h.jpg')
    medium ('e.jpg', 'h.jpg') ('j.jpg',)
    hard ('h.jpg',) ('j.jpg', 'e.jpg')
    """
    _check_protocol(protocol)
    truth: dict[str, QueryTruth] = {}
    lists = "easy, hard and junk lists"
    for query, entry, where in query_entries(mapping, source, lists):
        easy, hard, junk, tags = _lists(entry, where)
        if protocol == "easy":
            relevant, ignored = easy, junk + hard
        elif protocol == "medium":
            relevant, ignored = easy + hard, junk
        else:
            relevant, ignored = hard, junk + easy
        truth[query] = query_truth(relevant, ignored, tags, where)
    return truth


def _check_protocol(protocol: str) -> None:
    if protocol not in REVISITED_PROTOCOLS:
        choices = ", ".join(REVISITED_PROTOCOLS)
        raise VladError(f"protocol must be one of {choices}; got {protocol!r}")


def _lists(entry, where: str) -> tuple[tuple[str, ...], ...]:
    """The easy, hard, junk and tags lists of one entry, checked."""
    if not isinstance(entry, Mapping):
        raise VladError(
            f'{where}: expected {{"easy": [...], "hard": [...], "junk": [...]}}; '
            f"got {type(entry).__name__}"
        )
    unknown = sorted(str(key) for key in entry if key not in _KEYS)
    if unknown:
        raise VladError(
            f"{where}: unknown key {unknown[0]!r}; expected easy, hard and junk "
            "(bbx and tags optional)"
        )
    missing = [key for key in ("easy", "hard", "junk") if key not in entry]
    if missing:
        raise VladError(f"{where}: no {missing[0]!r} list")
    lists = {key: name_list(entry[key], where, key) for key in ("easy", "hard", "junk")}
    seen: dict[str, str] = {}
    for key, names in lists.items():
        for name in names:
            if name in seen:
                raise VladError(
                    f"{where}: {name!r} is in both {seen[name]!r} and {key!r}"
                )
            seen[name] = key
    tags = name_list(entry.get("tags", []), where, "tags")
    return lists["easy"], lists["hard"], lists["junk"], tags


def load_revisited_ground_truth(
    path: str | os.PathLike, protocol: str
) -> dict[str, QueryTruth]:
    """Read a revisited Oxford/Paris ground truth and make one of its setups.

    Parameters
    ----------
    path : path-like
        JSON: query name to ``{"easy", "hard", "junk"}`` lists of image names
        (see the module's documentation, and docs/evaluation.md for turning
        revisitop's ``gnd_roxford5k.pkl`` into it).
    protocol : {"easy", "medium", "hard"}

    Returns
    -------
    dict of str to QueryTruth

    Raises
    ------
    FileNotFoundError
        No such file.
    ValueError
        An unknown protocol, or a file that is not as above (the message
        names the file and the query).
    """
    _check_protocol(protocol)
    document = read_json_mapping(path, "revisited ground-truth file")
    return revisited_ground_truth(document, protocol, str(path))
