"""The INRIA Holidays ground truth, from the images' names alone.

Holidays images are named by six digits (``100000.jpg``, ``100001.jpg``...):
the images of one scene share the first four, and the one whose last two are
``00`` is the scene's query. Every image is in the database, queries too, so
each query's own name is junk in its ranking: a query finding itself neither
counts nor costs (``holidays_map.py`` ignores it the same way). The relevant
images of a query are the other images of its scene.

References
----------
Jégou, Douze, Schmid. Hamming embedding and weak geometric consistency for
large scale image search. ECCV 2008.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

from vlad.errors import VladError, VladTypeError
from vlad.evaluation._ground_truth import QueryTruth

__all__ = ["holidays_ground_truth", "load_holidays_ground_truth"]

_HOLIDAYS_STEM = re.compile(r"[0-9]{6}")


def holidays_ground_truth(
    names: Sequence[str], source: str = "names"
) -> dict[str, QueryTruth]:
    """Each Holidays query's relevant images, from the names of all images.

    Parameters
    ----------
    names : sequence of str
        Every image of the database, queries included, as search names them
        (``"100000.jpg"`` or ``"jpg/100000.jpg"``: only the file name's stem
        is read).
    source : str, default="names"
        What errors call the names (a file's path).

    Returns
    -------
    dict of str to QueryTruth
        Query name to its scene's other images (relevant) and itself (junk),
        queries in the order of their numbers.

    Raises
    ------
    ValueError
        No names, a name whose stem is not six digits, two names with one
        stem, or a scene without a query (no name ending in ``00``).

    Examples
    --------
    >>> truth = holidays_ground_truth(
    ...     ["100000.jpg", "100001.jpg", "100002.jpg", "100100.jpg", "100101.jpg"]
    ... )
    >>> truth["100000.jpg"]
    QueryTruth(relevant=('100001.jpg', '100002.jpg'), junk=('100000.jpg',), tags=())
    >>> list(truth)
    ['100000.jpg', '100100.jpg']
    """
    if isinstance(names, (str, bytes)):
        raise VladTypeError(
            f"names must be a sequence of image names; got {names!r:.60}"
        )
    if len(names) == 0:
        raise VladError(f"{source} names no image")
    by_stem: dict[str, str] = {}
    for name in names:
        if not isinstance(name, str):
            raise VladTypeError(f"{source}: image names must be strings; got {name!r}")
        stem = PurePosixPath(name).stem
        if not _HOLIDAYS_STEM.fullmatch(stem):
            raise VladError(
                f"{source}: {name!r} is not named as INRIA Holidays images are "
                "(six digits, such as 100000.jpg)"
            )
        if stem in by_stem:
            raise VladError(f"{source}: {by_stem[stem]!r} and {name!r} share a number")
        by_stem[stem] = name
    scenes: dict[str, list[str]] = {}
    for stem in sorted(by_stem):
        scenes.setdefault(stem[:4], []).append(stem)
    truth: dict[str, QueryTruth] = {}
    for scene, stems in scenes.items():
        if stems[0] != scene + "00":
            raise VladError(
                f"{source}: scene {scene} ({by_stem[stems[0]]!r}) has no query, "
                f"an image numbered {scene}00"
            )
        query = by_stem[stems[0]]
        relevant = tuple(by_stem[stem] for stem in stems[1:])
        truth[query] = QueryTruth(relevant, junk=(query,))
    return truth


def load_holidays_ground_truth(path: str | os.PathLike) -> dict[str, QueryTruth]:
    """:func:`holidays_ground_truth` of a text file of image names, one a line.

    Such as Holidays' ``holidays_images.dat`` or the ``.names.txt`` that
    ``vlad encode`` writes beside the database's vectors. Blank lines are
    skipped.

    Parameters
    ----------
    path : str or os.PathLike
        The text file.

    Raises
    ------
    FileNotFoundError
        No such file.
    ValueError
        A name not in the Holidays convention (see
        :func:`holidays_ground_truth`), naming the file.
    """
    path = Path(path)
    try:
        text = path.read_bytes().decode(errors="surrogateescape")
    except IsADirectoryError:
        raise VladError(f"{path} is a folder, not a file of image names") from None
    names = [line.strip() for line in text.splitlines() if line.strip()]
    return holidays_ground_truth(names, str(path))
