"""Evaluating rankings against a ground truth: every query's metrics, their
means over all queries and by tag.

:func:`evaluate` takes what search returns (query name to database names,
best first: :meth:`vlad.search.SearchResults.rankings` or
:func:`vlad.search.read_rankings`) and a ground truth, and returns an
:class:`Evaluation`. The conventions of each metric are those of
:mod:`vlad.evaluation._metrics`. Which queries count:

- a query of the ground truth with no relevant image has nothing to find: it
  is counted and left out of the means (revisitop does the same);
- a query of the ground truth absent from the rankings found nothing: AP 0,
  recall 0, in the means, and listed;
- a query of the rankings absent from the ground truth is listed and left
  out;
- a database image of the ground truth that no ranking names is fine.
"""

from __future__ import annotations

import difflib
import json
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from vlad.core._files import atomic_write
from vlad.errors import VladError, VladTypeError
from vlad.evaluation._ground_truth import ground_truth_from_mapping
from vlad.evaluation._metrics import (
    relevant_ranks,
    score_ranks,
    step_average_precision_of_ranks,
)
from vlad.formats._names import printable

__all__ = ["DEFAULT_KS", "Evaluation", "QueryEvaluation", "evaluate"]

#: Cut-offs of recall@k and precision@k unless told otherwise.
DEFAULT_KS = (1, 5, 10)

FORMAT = "vlad evaluation"
FORMAT_VERSION = 1


@dataclass(frozen=True)
class QueryEvaluation:
    """How one query of the ground truth did.

    Attributes
    ----------
    query : str
    tags : tuple of str
        The query's tags in the ground truth.
    n_relevant : int
        Its relevant images; 0 leaves it out of the means.
    ranks : tuple of int
        Places (from 0, junk and repeats removed) of the relevant images its
        ranking holds.
    scores : dict of str to float
        ``"AP"``, ``"RR"``, ``"recall@k"`` and ``"precision@k"``; NaN when
        ``n_relevant`` is 0.
    in_results : bool
        False when the rankings do not name the query (it found nothing).
    """

    query: str
    tags: tuple[str, ...]
    n_relevant: int
    ranks: tuple[int, ...]
    scores: dict[str, float]
    in_results: bool

    @property
    def counted(self) -> bool:
        """Whether the query is in the means (it has relevant images)."""
        return self.n_relevant > 0

    @property
    def step_average_precision(self) -> float:
        """The query's non-interpolated average precision
        (:func:`~vlad.evaluation.step_average_precision_of_ranks`); NaN when
        ``n_relevant`` is 0."""
        return step_average_precision_of_ranks(list(self.ranks), self.n_relevant)

    def to_dict(self) -> dict:
        """The query's entry under ``"per_query"`` in :meth:`Evaluation.to_dict`."""
        return {
            "tags": list(self.tags),
            "in_results": self.in_results,
            "n_relevant": self.n_relevant,
            "n_found": len(self.ranks),
            "first_rank": self.ranks[0] + 1 if self.ranks else None,
            **{name: _json_number(value) for name, value in self.scores.items()},
        }


@dataclass
class Evaluation:
    """Every query's metrics, and their means overall and by tag.

    Attributes
    ----------
    ks : tuple of int
        Cut-offs of recall@k and precision@k.
    queries : list of QueryEvaluation
        The ground truth's queries, in its order.
    unknown_queries : list of str
        Queries of the rankings that the ground truth does not name (left out).
    notes : list of str
        What the user should know: missing, unknown and empty queries,
        rankings that repeat a name.
    record : dict
        Where the rankings and the ground truth came from, JSON-serialisable.
    """

    ks: tuple[int, ...]
    queries: list[QueryEvaluation]
    unknown_queries: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    record: dict = field(default_factory=dict)

    @property
    def metric_names(self) -> list[str]:
        """``"mAP"``, ``"MRR"``, then ``"recall@k"`` and ``"precision@k"``."""
        names = ["mAP", "MRR"]
        names += [f"recall@{k}" for k in self.ks]
        names += [f"precision@{k}" for k in self.ks]
        return names

    @property
    def missing_queries(self) -> list[str]:
        """Queries of the ground truth that the rankings do not name."""
        return [query.query for query in self.queries if not query.in_results]

    @property
    def queries_without_relevant(self) -> list[str]:
        """Queries of the ground truth with no relevant image (left out)."""
        return [query.query for query in self.queries if not query.counted]

    @property
    def tags(self) -> list[str]:
        """Every tag of the ground truth's queries, sorted."""
        return sorted({tag for query in self.queries for tag in query.tags})

    @property
    def mean(self) -> dict:
        """:meth:`summary` of every query."""
        return self.summary(self.queries)

    @property
    def by_tag(self) -> dict[str, dict]:
        """:meth:`summary` of the queries of each tag, tags sorted."""
        return {
            tag: self.summary(query for query in self.queries if tag in query.tags)
            for tag in self.tags
        }

    @property
    def step_map(self) -> dict:
        """The mean non-interpolated average precision of the counted queries
        (:attr:`QueryEvaluation.step_average_precision`), beside
        :attr:`mean`'s ``"mAP"`` (the trapezoid rule): ``"mean"``, over every
        query, and ``"by_tag"``, tag to the mean over its queries, tags
        sorted; NaN where no query counts.

        Examples
        --------
        >>> from vlad.evaluation import evaluate
        >>> truth = {"q": {"relevant": ["a", "b"], "tags": ["day"]}}
        >>> evaluation = evaluate({"q": ["a", "x", "b"]}, truth)
        >>> evaluation.step_map
        {'mean': 0.8333333333333333, 'by_tag': {'day': 0.8333333333333333}}
        >>> evaluation.mean["mAP"]  # the trapezoid rule
        0.7916666666666666
        """

        def mean(queries: Iterable[QueryEvaluation]) -> float:
            values = [
                query.step_average_precision for query in queries if query.counted
            ]
            return math.fsum(values) / len(values) if values else math.nan

        return {
            "mean": mean(self.queries),
            "by_tag": {
                tag: mean(query for query in self.queries if tag in query.tags)
                for tag in self.tags
            },
        }

    def summary(self, queries: Iterable[QueryEvaluation]) -> dict:
        """Counts and mean metrics of some queries.

        Parameters
        ----------
        queries : iterable of QueryEvaluation
            Some of :attr:`queries`.

        Returns
        -------
        dict
            ``n_queries`` (those in the means: with relevant images),
            ``n_missing`` (of those, absent from the rankings),
            ``n_without_relevant`` (left out), then each of
            :attr:`metric_names`: the mean over the counted queries, NaN
            when none counts.
        """
        queries = list(queries)
        counted = [query for query in queries if query.counted]
        summary: dict = {
            "n_queries": len(counted),
            "n_missing": sum(1 for query in counted if not query.in_results),
            "n_without_relevant": len(queries) - len(counted),
        }
        for name in self.metric_names:
            key = {"mAP": "AP", "MRR": "RR"}.get(name, name)
            values = [query.scores[key] for query in counted]
            summary[name] = math.fsum(values) / len(values) if values else math.nan
        return summary

    def to_dict(self) -> dict:
        """Everything, JSON-serialisable (NaN as None): what ``--json`` writes."""
        return {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            **self.record,
            "ks": list(self.ks),
            "n_queries": len(self.queries),
            "mean": _json_summary(self.mean),
            "by_tag": {
                tag: _json_summary(values) for tag, values in self.by_tag.items()
            },
            "missing_queries": self.missing_queries,
            "unknown_queries": list(self.unknown_queries),
            "queries_without_relevant": self.queries_without_relevant,
            "notes": list(self.notes),
            "per_query": {query.query: query.to_dict() for query in self.queries},
        }

    def write(self, path: str | os.PathLike, *, overwrite: bool = True) -> None:
        """Write :meth:`to_dict` as JSON, atomically.

        Parameters
        ----------
        path : str or os.PathLike
            The file to write.
        overwrite : bool, default=True
            Replace a file that exists. When False, one that exists, or that
            another process writes meanwhile, is refused
            (``FileExistsError``).
        """
        # ASCII JSON: names that are not UTF-8 (surrogate escapes) stay
        # readable back as the same strings.
        text = json.dumps(self.to_dict(), indent=1) + "\n"
        with atomic_write(path, overwrite=overwrite) as handle:
            handle.write(text.encode("ascii"))

    def format_table(self, per_query: bool = False) -> str:
        """A text table of the means, overall then by tag, in percent.

        With ``per_query``, a second table gives each query's AP, the place
        (from 1) of its first relevant image, and the relevant images found.
        Control characters in names and tags are escaped (``\\x1b``, see
        :func:`vlad.formats._names.printable`): a table for a terminal.

        Parameters
        ----------
        per_query : bool, default=False
            Add the table of each query.
        """
        metrics = self.metric_names
        headers = ["queries", *(_short(name) for name in metrics)]
        rows = [("all", self.mean)]
        rows += [(printable(tag), values) for tag, values in self.by_tag.items()]
        width = max(len(label) for label, _ in rows)
        lines = [
            " ".join([" " * width, *(f"{header:>7}" for header in headers)]),
        ]
        for label, values in rows:
            cells = [f"{values['n_queries']:>7}"]
            cells += [f"{_percent(values[name]):>7}" for name in metrics]
            lines.append(" ".join([f"{label:<{width}}", *cells]))
        if per_query:
            lines.append("")
            lines.extend(self._query_lines())
        return "\n".join(lines)

    def _query_lines(self) -> list[str]:
        shown = [printable(query.query) for query in self.queries]
        width = max(len("query"), *map(len, shown))
        lines = [f"{'query':<{width}}      AP   first  found  tags"]
        for name, query in zip(shown, self.queries, strict=True):
            first = str(query.ranks[0] + 1) if query.ranks else "-"
            found = f"{len(query.ranks)}/{query.n_relevant}"
            note = "" if query.in_results else " (not in the results)"
            lines.append(
                f"{name:<{width}} {_percent(query.scores['AP']):>7} "
                f"{first:>7} {found:>6}  {printable(' '.join(query.tags))}{note}"
            )
        return lines


def _short(name: str) -> str:
    """A table header: ``recall@10`` as ``R@10``, ``precision@5`` as ``P@5``."""
    return name.replace("recall@", "R@").replace("precision@", "P@")


def _percent(value: float) -> str:
    return "-" if math.isnan(value) else f"{100 * value:.2f}"


def _json_number(value: float) -> float | None:
    return None if math.isnan(value) else value


def _json_summary(summary: dict) -> dict:
    return {
        name: _json_number(value) if isinstance(value, float) else value
        for name, value in summary.items()
    }


def _check_ks(ks: Iterable[int]) -> tuple[int, ...]:
    if isinstance(ks, (str, bytes)) or not isinstance(ks, Iterable):
        raise VladTypeError(f"ks must be a sequence of ints; got {ks!r}")
    ks = list(ks)
    for k in ks:
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise VladError(f"ks must hold ints of at least 1; got {k!r} in {ks!r}")
    return tuple(sorted(set(ks)))


def _check_rankings(rankings: Mapping) -> None:
    if not isinstance(rankings, Mapping):
        raise VladTypeError(
            "rankings must map query names to database names, best first; got "
            f"{type(rankings).__name__}"
        )
    for query, ranking in rankings.items():
        if not isinstance(query, str):
            raise VladTypeError(f"rankings: query names must be strings; got {query!r}")
        if isinstance(ranking, (str, bytes)) or not isinstance(ranking, Sequence):
            raise VladTypeError(
                f"rankings[{query!r}] must be a list of database names, best first; "
                f"got {type(ranking).__name__}"
            )
        if not all(issubclass(kind, str) for kind in set(map(type, ranking))):
            name = next(name for name in ranking if not isinstance(name, str))
            raise VladTypeError(
                f"rankings[{query!r}] must hold names (strings); got {name!r}"
            )


def _some(names: Sequence[str]) -> str:
    """The first three of ``names``, for a note."""
    shown = ", ".join(repr(name) for name in names[:3])
    return shown + (", ..." if len(names) > 3 else "")


def _closest(names: Sequence[str], candidates: Sequence[str]) -> str:
    """The first three of ``names``, each with the closest of ``candidates``
    (the same name under a folder, or difflib's closest), for a note on names
    that match none of them."""
    shown = []
    for name in names[:3]:
        # Names relative to another folder differ by a leading folder.
        close = [
            other
            for other in candidates
            if other.endswith("/" + name) or name.endswith("/" + other)
        ][:1] or difflib.get_close_matches(name, candidates, n=1, cutoff=0.6)
        shown.append(f"{name!r}" + (f" (closest: {close[0]!r})" if close else ""))
    return ", ".join(shown) + (", ..." if len(names) > 3 else "")


def _plural(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def evaluate(
    rankings: Mapping[str, Sequence[str]],
    ground_truth: Mapping,
    ks: Iterable[int] = DEFAULT_KS,
) -> Evaluation:
    """Score rankings against a ground truth.

    Parameters
    ----------
    rankings : mapping of str to sequence of str
        Query name to database image names, best first (rankings may be
        truncated; ties are in their given order).
    ground_truth : mapping of str to QueryTruth or dict
        As :func:`~vlad.evaluation.load_ground_truth`,
        :func:`~vlad.evaluation.load_revisited_ground_truth` or
        :func:`~vlad.evaluation.holidays_ground_truth` return it, or query
        name to ``{"relevant": [...], "junk": [...], "tags": [...]}``.
    ks : iterable of int, default=(1, 5, 10)
        Cut-offs of recall@k and precision@k (sorted, repeats dropped).

    Returns
    -------
    Evaluation

    Raises
    ------
    ValueError
        A malformed ground truth, a bad ``k``, or rankings that name none of
        the ground truth's queries.
    TypeError
        Rankings that are not a mapping of names to lists of names.

    Examples
    --------
    >>> from vlad.evaluation import evaluate
    >>> rankings = {"q1": ["a", "x", "b"], "q2": ["y", "c"], "extra": ["a"]}
    >>> truth = {
    ...     "q1": {"relevant": ["a", "b"], "tags": ["day"]},
    ...     "q2": {"relevant": ["c"], "junk": ["y"], "tags": ["night"]},
    ...     "q3": {"relevant": ["d"], "tags": ["night"]},
    ... }
    >>> evaluation = evaluate(rankings, truth, ks=[1, 2])
    >>> round(evaluation.mean["mAP"], 4), evaluation.mean["recall@1"]
    (0.5972, 0.6666666666666666)
    >>> evaluation.missing_queries, evaluation.unknown_queries
    (['q3'], ['extra'])
    >>> print(evaluation.format_table())
          queries     mAP     MRR     R@1     R@2     P@1     P@2
    all         3   59.72   66.67   66.67   66.67   66.67   33.33
    day         1   79.17  100.00  100.00  100.00  100.00   50.00
    night       2   50.00   50.00   50.00   50.00   50.00   25.00
    """
    ks = _check_ks(ks)
    truth = ground_truth_from_mapping(ground_truth, "ground_truth")
    _check_rankings(rankings)
    if not any(query in rankings for query in truth):
        raise VladError(
            f"the rankings name none of the "
            f"{_plural(len(truth), 'query', 'queries')} of the ground truth "
            f"(such as {_closest(list(truth)[:1], list(rankings))}); they name "
            + (
                f"{len(rankings)}, such as {next(iter(rankings))!r}"
                if rankings
                else "none"
            )
            + ": are names relative to the same folders?"
        )
    queries = []
    repeating = []
    for query, expected in truth.items():
        ranking = rankings.get(query, ())
        ranks = relevant_ranks(ranking, expected.relevant, expected.junk)
        scores = score_ranks(ranks, len(expected.relevant), ks)
        queries.append(
            QueryEvaluation(
                query,
                expected.tags,
                len(expected.relevant),
                tuple(ranks),
                scores,
                query in rankings,
            )
        )
        if len(set(ranking)) < len(ranking):
            repeating.append(query)
    unknown = [query for query in rankings if query not in truth]
    evaluation = Evaluation(ks, queries, unknown)
    evaluation.notes = _notes(evaluation, repeating, rankings, truth)
    return evaluation


def _notes(
    evaluation: Evaluation, repeating: list[str], rankings: Mapping, truth: Mapping
) -> list[str]:
    notes = []
    # A missing query without relevant images is left out like any other
    # query without them: the note on those names it.
    missing = [
        query.query
        for query in evaluation.queries
        if query.counted and not query.in_results
    ]
    if missing:
        notes.append(
            f"{_plural(len(missing), 'query', 'queries')} of the ground truth "
            f"{'is' if len(missing) == 1 else 'are'} not in the results and "
            f"{'counts' if len(missing) == 1 else 'count'} as finding nothing "
            f"(a pairs file has no line for a query that found nothing): "
            f"{_closest(missing, evaluation.unknown_queries)}"
        )
    ranked = {name for ranking in rankings.values() for name in ranking}
    relevant = list(
        dict.fromkeys(name for expected in truth.values() for name in expected.relevant)
    )
    if ranked and relevant and ranked.isdisjoint(relevant):
        notes.append(
            f"none of the {len(relevant)} relevant images of the ground truth is in "
            "any ranking: are names relative to the same folders? "
            f"{_closest(relevant, sorted(ranked))}"
        )
    unknown = evaluation.unknown_queries
    if unknown:
        notes.append(
            f"{_plural(len(unknown), 'query', 'queries')} of the results "
            f"{'is' if len(unknown) == 1 else 'are'} not in the ground truth and "
            f"left out: {_some(unknown)}"
        )
    empty = evaluation.queries_without_relevant
    if empty:
        notes.append(
            f"{_plural(len(empty), 'query has', 'queries have')} no relevant image "
            f"and {'is' if len(empty) == 1 else 'are'} left out of the means: "
            f"{_some(empty)}"
        )
    if repeating:
        notes.append(
            f"{_plural(len(repeating), 'ranking names', 'rankings name')} an image "
            f"more than once; only its first place counts: {_some(repeating)}"
        )
    return notes
