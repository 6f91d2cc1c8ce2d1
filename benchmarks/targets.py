"""The performance targets, checked against what a run measured.

:func:`check_targets` turns the tables of a run into :class:`TargetCheck`
records (the aggregator and ``vlad.encode`` against their floors, the
speed-up over the essay, single-image latency, memory beyond the output, the
sweep, float32 accuracy); :func:`format_targets` prints them as Markdown.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from benchmarks.search import EXACT_INDEX, SEARCH_WORKLOADS, compressed_label
from benchmarks.tables import (
    AGGREGATE,
    ENCODE_ROW,
    Sweep,
    Table,
    format_mib,
    format_ratio,
    format_seconds,
    markdown_table,
)
from benchmarks.workloads import MIB, WORKLOADS

__all__ = ["TargetCheck", "check_targets", "format_targets", "targets_table"]


@dataclasses.dataclass(frozen=True)
class TargetCheck:
    """One of the performance targets, as measured.

    Parameters
    ----------
    number : int
        The target's number (1-7).
    target : str
        What is required.
    measured : str
        The measured quantities behind the ratio.
    ratio : float or None
        The quantity compared with ``limit``; None when not measured.
    limit : float
    at_least : bool, default=False
        Whether ``ratio`` must be at least (instead of at most) ``limit``.
    """

    number: int
    target: str
    measured: str
    ratio: float | None
    limit: float
    at_least: bool = False

    @property
    def passed(self) -> bool | None:
        """Whether the target is met; None when not measured."""
        if self.ratio is None:
            return None
        return self.ratio >= self.limit if self.at_least else self.ratio <= self.limit

    @classmethod
    def from_dict(cls, record: dict) -> TargetCheck:
        """The check recorded as JSON by :meth:`benchmarks.report.Report.to_dict`."""
        fields = {field.name for field in dataclasses.fields(cls)}
        return cls(**{key: value for key, value in record.items() if key in fields})


def check_targets(
    tables: dict[str, Table],
    sweep: Sweep | None = None,
    *,
    memory_budget: int = 256 * MIB,
) -> list[TargetCheck]:
    """The performance targets 1-7 that ``tables`` and ``sweep`` measured.

    Parameters
    ----------
    tables : dict of str to Table
        By key: ``"a"``, ``"b"``, ``"c"``, ``"single latency"``; missing ones
        are left out.
    sweep : Sweep, optional
    memory_budget : int, default=256 MiB
        Allowed peak allocation beyond the output (target 5).

    Returns
    -------
    list of TargetCheck
    """
    checks: list[TargetCheck] = []
    for key, limit in (("b", 1.3), ("c", 1.6)):
        if key in tables:
            checks.append(
                _ratio_check(
                    1, tables[key], "aggregate auto", limit, "aggregation floor"
                )
            )
    for key in ("b", "c"):
        if key in tables:
            checks.append(
                _ratio_check(
                    2, tables[key], ENCODE_ROW, 1.3, "assignment + aggregation floors"
                )
            )
    for key in ("a", "b"):
        if key in tables:
            table = tables[key]
            encoded, best = table.row(ENCODE_ROW), table.essay_best()
            measured = (
                "essay not run"
                if best is None
                else (
                    f"{best.name} {format_seconds(best.median)} / encode "
                    f"{format_seconds(encoded.median)}"
                )
            )
            checks.append(
                TargetCheck(
                    3,
                    f"{key}: encode >= 5x faster than the essay's fastest",
                    measured,
                    table.speedup(encoded),
                    5.0,
                    at_least=True,
                )
            )
    if "single latency" in tables:
        checks.append(
            _ratio_check(
                4,
                tables["single latency"],
                "vlad.encode([x], codebook)",
                2.0,
                "bare NumPy kernels",
            )
        )
    if "b" in tables:
        for name in (ENCODE_ROW, "aggregate masked", "aggregate ragged-cumsum"):
            row = tables["b"].row(name)
            output = row.output_bytes
            extra = None if row.peak_bytes is None else row.peak_bytes - output
            checks.append(
                TargetCheck(
                    5,
                    f"b: {name} holds <= {memory_budget / MIB:.0f} MiB beyond "
                    "input and output",
                    row.skipped
                    or (
                        f"{format_mib(extra)} MiB beyond a "
                        f"{format_mib(output)} MiB output"
                    ),
                    None if extra is None else extra / memory_budget,
                    1.0,
                )
            )
    if sweep is not None and "auto" in sweep.measurements:
        ratios = [r for r in sweep.auto_over_best() if r is not None]
        checks.append(
            TargetCheck(
                6,
                "sweep: auto within 10% of the best aggregator at every N",
                "auto / best per N: "
                + ", ".join(
                    f"N={n:,}: {r:.2f}"
                    for n, r in zip(sweep.rows, sweep.auto_over_best(), strict=True)
                    if r is not None
                ),
                max(ratios) if ratios else None,
                1.1,
            )
        )
    for key, table in tables.items():
        errors = [
            (m.error, m.name)
            for m in table.rows
            if m.group == AGGREGATE and m.error is not None
        ]
        if key in WORKLOADS and WORKLOADS[key].dtype == "float32" and errors:
            error, name = max(errors)
            checks.append(
                TargetCheck(
                    7,
                    f"{key}: every aggregator's float32 relative error <= 1e-5",
                    f"worst: {name} {error:.1e}",
                    error / 1e-5,
                    1.0,
                )
            )
    for key in SEARCH_WORKLOADS:
        if key in tables:
            checks += _search_checks(tables[key], SEARCH_WORKLOADS[key])
    return checks


def _search_checks(table: Table, workload) -> list[TargetCheck]:
    """Targets 8-10: exact search near the bare product; the compressed index
    10x faster than exact search, and as good at Recall@1 within 2 points."""
    compressed = compressed_label(workload)
    checks = [_ratio_check(8, table, EXACT_INDEX, 1.3, "the bare product Q @ D.T")]
    exact, fast = table.row(EXACT_INDEX), table.row(compressed)
    speedup = exact.median / fast.median if exact.median and fast.median else None
    checks.append(
        TargetCheck(
            9,
            f"{table.key}: the faiss IVF-PQ index >= 10x faster than exact search",
            fast.skipped
            or f"{format_seconds(exact.median)} / {format_seconds(fast.median)}",
            speedup,
            10.0,
            at_least=True,
        )
    )
    exact_recall = table.values.get(f"recall@1 {EXACT_INDEX}")
    fast_recall = table.values.get(f"recall@1 {compressed}")
    loss = (
        None
        if exact_recall is None or fast_recall is None
        else 100 * (exact_recall - fast_recall)
    )
    checks.append(
        TargetCheck(
            10,
            f"{table.key}: its Recall@1 within 2 points of exact search's",
            "not measured"
            if loss is None
            else f"{100 * fast_recall:.2f} against {100 * exact_recall:.2f}",
            loss,
            2.0,
        )
    )
    return checks


def _ratio_check(
    number: int, table: Table, name: str, limit: float, baseline: str
) -> TargetCheck:
    row = table.row(name)
    reference = table.baseline_seconds(row)
    return TargetCheck(
        number,
        f"{table.key}: {name} <= {limit}x {baseline}",
        row.skipped or f"{format_seconds(row.median)} / {format_seconds(reference)}",
        table.ratio(row),
        limit,
    )


def targets_table(checks: Sequence[TargetCheck]) -> str:
    """The targets as a Markdown table: target, measured, ratio, pass/fail."""
    header = ("#", "target", "measured", "ratio", "limit", "result")
    rows = [
        (
            str(check.number),
            check.target,
            check.measured,
            format_ratio(check.ratio),
            (">= " if check.at_least else "<= ") + f"{check.limit:g}",
            {True: "pass", False: "FAIL", None: "not measured"}[check.passed],
        )
        for check in checks
    ]
    return markdown_table(header, rows, "rllrrl")


def format_targets(checks: Sequence[TargetCheck]) -> str:
    """The targets as Markdown: a heading and :func:`targets_table`."""
    return f"### Targets\n\n{targets_table(checks)}\n"
