"""The results: tables of measurements, the sweep, and their Markdown.

A :class:`Table` holds the rows (:class:`~benchmarks.measuring.Measurement`)
of one benchmark and the ratios between them: each row's median over its
baseline's (a floor, the sum of two floors, the bare kernels) and the
essay's fastest median over an end-to-end row's. A :class:`Sweep` holds the
aggregation time against the number of descriptors. Both convert to and from
JSON-serialisable records. The ``format_*`` functions print them as Markdown,
as ``python -m benchmarks`` and the performance page show them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from benchmarks.measuring import Measurement
from benchmarks.workloads import MIB

__all__ = [
    "AGGREGATE",
    "AGGREGATION_FLOOR",
    "ASSIGN",
    "ASSIGNMENT_FLOOR",
    "ENCODE",
    "ENCODE_ROW",
    "END_TO_END_FLOOR",
    "ESSAY",
    "FLOOR",
    "KERNEL",
    "Sweep",
    "Table",
    "format_machine",
    "format_mib",
    "format_ratio",
    "format_seconds",
    "format_sweep",
    "format_table",
    "markdown_table",
]
# Row groups, and the names of the rows other rows are compared with.
FLOOR, ASSIGN, AGGREGATE, ESSAY, ENCODE, KERNEL = (
    "floor",
    "assign",
    "aggregate",
    "essay",
    "encode",
    "kernel",
)
AGGREGATION_FLOOR = "aggregation floor: np.add.reduce(X, axis=0)"
ASSIGNMENT_FLOOR = "assignment floor: X @ centers.T"
END_TO_END_FLOOR = (ASSIGNMENT_FLOOR, AGGREGATION_FLOOR)
ENCODE_ROW = "vlad.encode"


@dataclasses.dataclass
class Table:
    """The rows of one benchmark, with the ratios between them.

    Parameters
    ----------
    key : str
        Short name (``"b"``, ``"single latency"``).
    title : str
    rows : list of Measurement
    notes : list of str
        Lines printed under the table.
    ratio_label : str
        Header of the column that divides each median by its baseline's.
    values : dict of str to float
        Other quantities the benchmark measured (a row's Recall@1, ...), by
        name, for the targets.
    """

    key: str
    title: str
    rows: list[Measurement]
    notes: list[str] = dataclasses.field(default_factory=list)
    ratio_label: str = "x floor"
    values: dict[str, float] = dataclasses.field(default_factory=dict)

    def row(self, name: str) -> Measurement:
        """The row called ``name``."""
        for measurement in self.rows:
            if measurement.name == name:
                return measurement
        raise KeyError(f"no row {name!r} in table {self.key!r}")

    def baseline_seconds(self, measurement: Measurement) -> float | None:
        """Sum of the medians of ``measurement``'s baseline rows."""
        medians = [self.row(name).median for name in measurement.baseline]
        if not medians or None in medians:
            return None
        return float(sum(medians))

    def ratio(self, measurement: Measurement) -> float | None:
        """``measurement``'s median divided by its baseline's."""
        baseline = self.baseline_seconds(measurement)
        if measurement.median is None or not baseline:
            return None
        return measurement.median / baseline

    def essay_best(self) -> Measurement | None:
        """The essay method with the smallest median, if any ran."""
        ran = [m for m in self.rows if m.group == ESSAY and m.times]
        return min(ran, key=lambda m: m.median) if ran else None

    def speedup(self, measurement: Measurement) -> float | None:
        """The essay's fastest median over ``measurement``'s (end-to-end rows)."""
        best = self.essay_best()
        if best is None or measurement.group not in (ESSAY, ENCODE):
            return None
        if measurement.median is None:
            return None
        return best.median / measurement.median

    def to_dict(self) -> dict:
        """A JSON-serialisable record, ratios included."""
        rows = []
        for measurement in self.rows:
            record = measurement.to_dict()
            record.update(
                ratio=self.ratio(measurement), speedup=self.speedup(measurement)
            )
            rows.append(record)
        return {
            "key": self.key,
            "title": self.title,
            "ratio_label": self.ratio_label,
            "notes": self.notes,
            "rows": rows,
            "values": self.values,
        }

    @classmethod
    def from_dict(cls, record: dict) -> Table:
        """The table that :meth:`to_dict` recorded (read back from JSON)."""
        return cls(
            record["key"],
            record["title"],
            [Measurement.from_dict(row) for row in record["rows"]],
            list(record["notes"]),
            record["ratio_label"],
            dict(record.get("values", {})),
        )


@dataclasses.dataclass
class Sweep:
    """Aggregation time against the number of descriptors N.

    Parameters
    ----------
    rows : list of int
        N at each point.
    measurements : dict of str to list of Measurement
        Per method (the aggregation floor and each aggregator), one
        measurement per point.
    shape : str
        F, K and L of every point.
    notes : list of str
    """

    rows: list[int]
    measurements: dict[str, list[Measurement]]
    shape: str
    notes: list[str] = dataclasses.field(default_factory=list)

    def ns_per_descriptor(self, name: str) -> list[float | None]:
        """Median nanoseconds per descriptor of method ``name`` at each point."""
        return [
            None if m.median is None else m.median / n_rows * 1e9
            for m, n_rows in zip(self.measurements[name], self.rows, strict=True)
        ]

    def auto_over_best(self) -> list[float | None]:
        """At each point, ``auto``'s median over the best other aggregator's."""
        ratios: list[float | None] = []
        for point in range(len(self.rows)):
            auto = self.measurements.get("auto", [None] * len(self.rows))[point]
            others = [
                m[point].median
                for name, m in self.measurements.items()
                if name not in ("auto", AGGREGATION_FLOOR) and m[point].times
            ]
            if auto is None or auto.median is None or not others:
                ratios.append(None)
            else:
                ratios.append(auto.median / min(others))
        return ratios

    def to_dict(self) -> dict:
        """A JSON-serialisable record."""
        return {
            "rows": self.rows,
            "shape": self.shape,
            "notes": self.notes,
            "ns_per_descriptor": {
                name: self.ns_per_descriptor(name) for name in self.measurements
            },
            "auto_over_best": self.auto_over_best(),
            "measurements": {
                name: [m.to_dict() for m in points]
                for name, points in self.measurements.items()
            },
        }

    @classmethod
    def from_dict(cls, record: dict) -> Sweep:
        """The sweep that :meth:`to_dict` recorded (read back from JSON)."""
        measurements = {
            name: [Measurement.from_dict(point) for point in points]
            for name, points in record["measurements"].items()
        }
        return cls(
            list(record["rows"]), measurements, record["shape"], list(record["notes"])
        )


def format_seconds(seconds: float | None) -> str:
    """A duration with three significant digits and a unit (s, ms, us)."""
    if seconds is None:
        return ""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def format_ratio(ratio: float | None) -> str:
    """A ratio with two decimals below 10, three significant digits below 1000."""
    if ratio is None:
        return ""
    return (
        f"{ratio:.2f}"
        if ratio < 10
        else f"{ratio:.3g}"
        if ratio < 1000
        else f"{ratio:.0f}"
    )


def format_mib(size: int | None) -> str:
    """A size in bytes as MiB with one decimal ("" for None)."""
    return "" if size is None else f"{size / MIB:.1f}"


def markdown_table(
    header: Sequence[str], rows: Sequence[Sequence[str]], align: str
) -> str:
    """A Markdown table; ``align`` has one ``l`` or ``r`` per column."""
    widths = [
        max(len(header[column]), *(len(row[column]) for row in rows))
        for column in range(len(header))
    ]

    def line(cells):
        padded = (
            cell.ljust(width) if side == "l" else cell.rjust(width)
            for cell, width, side in zip(cells, widths, align, strict=True)
        )
        return "| " + " | ".join(padded) + " |"

    rule = (
        "|"
        + "|".join(
            "-" * (width + 1) + ":" if side == "r" else "-" * (width + 2)
            for width, side in zip(widths, align, strict=True)
        )
        + "|"
    )
    return "\n".join([line(header), rule, *(line(row) for row in rows)])


def format_table(table: Table) -> str:
    """A table as Markdown: heading, one line per row, then its notes.

    Columns no row fills (peak memory of a table measured without it, the
    essay comparison of a table without essay rows) are left out.
    """
    header = (
        "method",
        "median",
        "min",
        table.ratio_label,
        "speed-up vs essay best",
        "peak MiB",
        "rel. error",
    )
    rows, reasons = [], []
    for m in table.rows:
        if m.skipped is not None:
            status = m.skipped.split(": ", 1)[0]
            rows.append((m.name, status, "", "", "", "", ""))
            reasons.append(f"{m.name}: {m.skipped}.")
            continue
        speedup = table.speedup(m)
        rows.append(
            (
                m.name,
                format_seconds(m.median),
                format_seconds(m.minimum),
                format_ratio(table.ratio(m)),
                "" if speedup is None else f"{format_ratio(speedup)}x",
                format_mib(m.peak_bytes),
                "" if m.error is None else f"{m.error:.1e}",
            )
        )
    kept = [
        column
        for column in range(len(header))
        if column < 3 or any(row[column] for row in rows)
    ]
    markdown = markdown_table(
        [header[column] for column in kept],
        [[row[column] for column in kept] for row in rows],
        "l" + "r" * (len(kept) - 1),
    )
    notes = "\n".join(f"- {note}" for note in [*reasons, *table.notes])
    return f"### {table.title}\n\n{markdown}\n\n{notes}\n"


def format_sweep(sweep: Sweep) -> str:
    """The sweep as Markdown: ns per descriptor, one column per N."""
    header = ("method", *(f"N={n:,}" for n in sweep.rows))
    rows = []
    for name, points in sweep.measurements.items():
        cells = [
            ("slow" if m.skipped.startswith("skipped") else "failed")
            if m.skipped
            else f"{value:.3g}"
            for m, value in zip(points, sweep.ns_per_descriptor(name), strict=True)
        ]
        rows.append((name, *cells))
    rows.append(("auto / best", *(format_ratio(r) for r in sweep.auto_over_best())))
    notes = "\n".join(f"- {note}" for note in sweep.notes)
    table = markdown_table(header, rows, "l" + "r" * len(sweep.rows))
    return f"### Sweep: ns per descriptor against N\n\n{table}\n\n{notes}\n"


def format_machine(info: dict) -> str:
    """The machine as a Markdown list."""
    versions = ", ".join(
        f"{package} {version}"
        for package, version in info["versions"].items()
        if version
    )
    pools = "; ".join(info["thread_pools"]) or "none found"
    return (
        "### Machine\n\n"
        f"- CPU: {info['cpu']} ({info['logical_cpus']} logical CPUs, "
        f"{info['usable_cpus']} usable)\n"
        f"- {info['platform']}, Python {info['python']}\n"
        f"- {versions}\n"
        f"- thread pools: {pools}\n"
    )
