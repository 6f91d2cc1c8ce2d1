"""Ranked search results: what each query found, and reading and writing them.

Three file formats, chosen by the file's suffix:

- ``.json``: every query with its ranked names and scores, the reason when it
  has none, and how the search was made;
- ``.csv``: one row per hit, ``query,rank,name,score`` (rank from 1), as
  RFC 4180 says (CRLF line ends; fields with commas, quotes or line breaks
  quoted);
- ``.txt``: hloc-style retrieval pairs, ``query name`` per line, best first.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from vlad.core._files import atomic_write, check_format_version
from vlad.errors import VladError, VladTypeError

__all__ = [
    "RESULT_SUFFIXES",
    "QueryResult",
    "SearchResults",
    "empty_result",
    "read_rankings",
    "results_from_arrays",
]

FORMAT = "vlad search results"
FORMAT_VERSION = 1
RESULT_SUFFIXES = (".json", ".csv", ".txt")


@dataclass(frozen=True)
class QueryResult:
    """The ranked database images of one query.

    Attributes
    ----------
    query : str
        The query's name.
    names : tuple of str
        Database images, best first.
    scores : ndarray of float32 of shape (len(names),)
        Their scores (inner products, or inlier counts after spatial
        verification), best first.
    rows : ndarray of int64 of shape (len(names),)
        Their rows in the index.
    reason : str or None
        Why the query found nothing, or fewer images than asked.
    inliers : ndarray of int64 of shape (len(names),) or None
        After spatial verification: each image's inliers, -1 where it was
        not verified.
    """

    query: str
    names: tuple[str, ...]
    scores: np.ndarray
    rows: np.ndarray
    reason: str | None = None
    inliers: np.ndarray | None = None


@dataclass
class SearchResults:
    """What every query found.

    Attributes
    ----------
    queries : list of QueryResult
        In the order the queries were given.
    record : dict
        How the search was made (index, ``k``, re-ranking), JSON-serialisable.
    notes : list of str
        Things the user should know (``k`` larger than the index, ...).
    """

    queries: list[QueryResult]
    record: dict = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.queries)

    def __getitem__(self, index: int) -> QueryResult:
        return self.queries[index]

    @property
    def n_empty(self) -> int:
        """Queries that found nothing."""
        return sum(1 for result in self.queries if not result.names)

    def rankings(self) -> dict[str, list[str]]:
        """Query name to ranked database names (what evaluation takes).

        Raises
        ------
        ValueError
            Two queries share a name.
        """
        return _rankings_of(
            (result.query, list(result.names)) for result in self.queries
        )

    def to_dict(self) -> dict:
        """The ``.json`` file's content."""
        return {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            **self.record,
            "notes": list(self.notes),
            "queries": [_query_dict(result) for result in self.queries],
        }

    def write(self, path: str | os.PathLike, *, overwrite: bool = True) -> None:
        """Write atomically as ``.json``, ``.csv`` or pairs ``.txt`` (by suffix).

        Parameters
        ----------
        path : str or os.PathLike
            The file to write; its suffix chooses the format.
        overwrite : bool, default=True
            Replace a file that exists. When False, one that exists, or that
            another process writes meanwhile, is refused
            (``FileExistsError``).

        Raises
        ------
        ValueError
            Another suffix, or (for pairs) a name with whitespace or a query
            name starting with ``#``, which the pairs format cannot hold (hloc
            splits lines at whitespace, COLMAP skips lines starting with
            ``#``).
        """
        path = Path(path)
        suffix = path.suffix.lower()
        if suffix == ".json":
            text = json.dumps(self.to_dict(), indent=1) + "\n"
        elif suffix == ".csv":
            text = self._csv_text()
        elif suffix == ".txt":
            text = self._pairs_text()
        else:
            raise VladError(
                f"results are written as {', '.join(RESULT_SUFFIXES)}; "
                f"got {str(path)!r}"
            )
        with atomic_write(path, overwrite=overwrite) as handle:
            handle.write(text.encode(errors="surrogateescape"))

    def _csv_text(self) -> str:
        buffer = io.StringIO()
        # With CRLF line ends, the csv module quotes every field holding a
        # carriage return or a line feed; with "\n" alone, a name holding "\r"
        # is written bare and cannot be read back.
        writer = csv.writer(buffer, lineterminator="\r\n")
        writer.writerow(["query", "rank", "name", "score"])
        for result in self.queries:
            for rank, (name, score) in enumerate(
                zip(result.names, result.scores, strict=True), start=1
            ):
                writer.writerow([result.query, rank, name, _score(score)])
        return buffer.getvalue()

    def _pairs_text(self) -> str:
        lines = []
        for result in self.queries:
            for name in (result.query, *result.names):
                if not name or any(character.isspace() for character in name):
                    raise VladError(
                        f"a pairs file separates names by a space, and {name!r} "
                        "is empty or holds whitespace; write .json or .csv"
                    )
            if result.names and result.query.startswith("#"):
                raise VladError(
                    f"a pairs line starting with '#' is a comment to COLMAP, and "
                    f"query {result.query!r} starts with one; write .json or .csv"
                )
            lines.extend(f"{result.query} {name}\n" for name in result.names)
        return "".join(lines)


def _score(score) -> float:
    return round(float(score), 6)


def _query_dict(result: QueryResult) -> dict:
    hits = [
        {"name": name, "score": _score(score)}
        for name, score in zip(result.names, result.scores, strict=True)
    ]
    if result.inliers is not None:
        for hit, inliers in zip(hits, result.inliers, strict=True):
            hit["inliers"] = int(inliers)
    entry: dict = {"query": result.query, "results": hits}
    if result.reason:
        entry["reason"] = result.reason
    return entry


def _rankings_of(pairs) -> dict[str, list[str]]:
    rankings: dict[str, list[str]] = {}
    for query, names in pairs:
        if query in rankings:
            raise VladError(f"query {query!r} appears twice in the results")
        rankings[query] = names
    return rankings


def read_rankings(path: str | os.PathLike) -> dict[str, list[str]]:
    """Query name to ranked database names from a results file.

    Reads the three formats :meth:`SearchResults.write` writes: ``.json``
    (queries that found nothing included), ``.csv`` and pairs ``.txt`` (where
    a query that found nothing has no line, so is absent).

    Parameters
    ----------
    path : str or os.PathLike
        A ``.json``, ``.csv`` or pairs ``.txt`` results file.

    Raises
    ------
    FileNotFoundError
        No such file.
    ValueError
        A file that is not a results file of its suffix's format, or one
        written by a newer vlad.

    Examples
    --------
    >>> import os, tempfile
    >>> from vlad.search import read_rankings
    >>> path = os.path.join(tempfile.mkdtemp(), "pairs.txt")
    >>> with open(path, "w") as handle:
    ...     _ = handle.write("q.jpg a.jpg\\nq.jpg b.jpg\\n")
    >>> read_rankings(path)
    {'q.jpg': ['a.jpg', 'b.jpg']}
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in RESULT_SUFFIXES:
        raise VladError(
            f"{path} is not a results file: expected a name ending in "
            f"{', '.join(RESULT_SUFFIXES)}"
        )
    try:
        text = path.read_bytes().decode(errors="surrogateescape")
    except IsADirectoryError:
        raise VladError(f"{path} is a folder, not a results file") from None
    if suffix == ".json":
        return _json_rankings(path, text)
    if suffix == ".csv":
        return _csv_rankings(path, text)
    return _pairs_rankings(path, text)


def _json_rankings(path: Path, text: str) -> dict[str, list[str]]:
    noun = "vlad search results file"
    try:
        document = json.loads(text)
    except ValueError as error:
        raise VladError(f"{path} is not a {noun}: {error}") from None
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise VladError(f"{path} is not a {noun}: it does not say format={FORMAT!r}")
    check_format_version(path, document, noun, FORMAT_VERSION)
    queries = document.get("queries")
    try:
        rankings = _rankings_of(
            (_text(entry["query"]), [_text(hit["name"]) for hit in entry["results"]])
            for entry in queries
        )
        for entry in queries:
            for rank, hit in enumerate(entry["results"], start=1):
                if "score" in hit:
                    _check_score(hit["score"], path, entry["query"], rank)
    except (KeyError, TypeError) as error:
        raise VladError(f"{path} is a damaged {noun}: {error!r}") from None
    return rankings


def _check_score(
    score, path: Path, query: str, rank: int, *, parse: bool = False
) -> None:
    """Refuse a score that is not a finite number (NaN, inf, text; with
    ``parse``, a CSV field that does not read as one): no search gives one."""
    number = score
    if parse:
        try:
            number = float(score)
        except ValueError:
            number = None
    if (
        isinstance(number, bool)
        or not isinstance(number, (int, float))
        or not math.isfinite(number)
    ):
        raise VladError(
            f"{path}: the score of result {rank} of query {query!r} must be a "
            f"finite number; got {score!r}"
        )


def _text(value) -> str:
    if not isinstance(value, str):
        raise VladTypeError(f"a name is a {type(value).__name__}, not a string")
    return value


def _csv_rankings(path: Path, text: str) -> dict[str, list[str]]:
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        rows = list(reader)
    except csv.Error as error:
        raise VladError(
            f"{path}, line {reader.line_num}: not CSV as vlad writes it ({error})"
        ) from None
    if not rows or rows[0] != ["query", "rank", "name", "score"]:
        raise VladError(
            f"{path} is not a vlad results CSV: its first line must be "
            "query,rank,name,score"
        )
    hits: dict[str, list[tuple[int, str]]] = {}
    for line, row in enumerate(rows[1:], start=2):
        try:
            query, rank, name, score = row
            hits.setdefault(query, []).append((int(rank), name))
        except ValueError:
            raise VladError(
                f"{path}, line {line}: expected query,rank,name,score; got {row!r}"
            ) from None
        _check_score(score, path, query, int(rank), parse=True)
    return {query: [name for _, name in sorted(found)] for query, found in hits.items()}


def _pairs_rankings(path: Path, text: str) -> dict[str, list[str]]:
    rankings: dict[str, list[str]] = {}
    for line, content in enumerate(text.splitlines(), start=1):
        if not content.strip():
            continue
        names = content.split()
        if len(names) != 2:
            raise VladError(
                f"{path}, line {line}: a pairs file holds two names a line; got "
                f"{content!r}"
            )
        rankings.setdefault(names[0], []).append(names[1])
    return rankings


def results_from_arrays(
    query_names: Sequence[str],
    names: Sequence[str] | np.ndarray,
    scores: np.ndarray,
    rows: np.ndarray,
) -> list[QueryResult]:
    """One :class:`QueryResult` per row of ``(scores, rows)``; row -1 ends a list.

    ``names`` is every image's name, as a sequence or (faster, for callers
    that search often) an object array.
    """
    if not isinstance(names, np.ndarray):
        names = np.array(names, dtype=object)
    scores = scores.astype(np.float32, copy=False)
    # One gather for every query: looking names up one at a time cost more
    # than faiss's search of the same rows.
    found = names[np.maximum(rows, 0)].tolist()
    results = []
    for query, query_scores, query_rows, hits, complete in zip(
        query_names, scores, rows, found, (rows >= 0).all(axis=1), strict=True
    ):
        if not complete:
            kept = query_rows >= 0
            query_scores, query_rows = query_scores[kept], query_rows[kept]
            hits = itertools.compress(hits, kept)
        results.append(QueryResult(query, tuple(hits), query_scores, query_rows))
    return results


def empty_result(query: str, reason: str) -> QueryResult:
    """A query that found nothing, and why."""
    return QueryResult(
        query,
        (),
        np.zeros(0, dtype=np.float32),
        np.zeros(0, dtype=np.int64),
        reason,
    )
