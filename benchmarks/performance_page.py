"""The JSON written by ``python -m benchmarks --json`` as a Markdown page.

Usage, from the root of a source checkout::

    python -m benchmarks.performance_page results.json docs/performance.md

The page has a heading, the command that produced the results, the machine
they were measured on (as :func:`benchmarks.report.machine_info` recorded
it), every table of the run in the run's order (printed by the harness's own
:func:`~benchmarks.tables.format_table`, :func:`~benchmarks.tables.format_sweep`
and :func:`~benchmarks.targets.targets_table`), and a summary of which
aggregator wins where, and why, computed from those tables.
"""

from __future__ import annotations

import argparse
import inspect
import json
import re
import sys
from pathlib import Path

from benchmarks.report import Report, run_benchmarks
from benchmarks.tables import (
    AGGREGATE,
    AGGREGATION_FLOOR,
    ASSIGNMENT_FLOOR,
    ENCODE_ROW,
    END_TO_END_FLOOR,
    Table,
    format_ratio,
    format_sweep,
    format_table,
)
from benchmarks.targets import targets_table
from benchmarks.workloads import GIB

__all__ = [
    "WHY",
    "command_line",
    "machine_section",
    "main",
    "render_page",
    "winners_section",
]

#: Why each aggregator costs what it does: how it works, not what a run measured.
WHY = {
    "numba": (
        "one compiled pass over the descriptors, each image's (K, F) float64 "
        "accumulator in cache, images split over the cores"
    ),
    "sparse": (
        "scipy's CSC product is a compiled scatter too, but it runs on float64 "
        "copies of the rows, on one thread"
    ),
    "loop": (
        "each of its T x K masked sums is a vectorised pass, so its Python "
        "overhead is paid per image and centre, not per descriptor"
    ),
    "ragged-cumsum": "the sort costs far more than the sums it sets up",
    "ufunc-at": (
        "`np.add.at` adds one row at a time, and takes NumPy's slow path when it "
        "adds float32 rows into float64 sums"
    ),
    "jax": (
        "on a CPU, JAX copies every chunk of rows into its own buffers and its "
        "scatter-add is a serial loop; it is meant for accelerators"
    ),
    "torch": (
        "`index_add_` of float32 residuals, formed in a temporary, with "
        "PyTorch's own threads; it is there for models on a GPU"
    ),
    "masked": "it forms all N x K x F residuals",
}


def command_line(settings: dict, json_name: str = "results.json") -> str:
    """The ``python -m benchmarks`` command that makes a run with these settings."""
    defaults = {
        name: parameter.default
        for name, parameter in inspect.signature(run_benchmarks).parameters.items()
    }
    words = ["python", "-m", "benchmarks"]
    for size in settings["sizes"]:
        words += ["--size", size]
    if settings.get("repeats", defaults["repeats"]) != defaults["repeats"]:
        words += ["--repeats", str(settings["repeats"])]
    if settings.get("threads", defaults["threads"]) != defaults["threads"]:
        words += ["--threads", str(settings["threads"] or 0)]
    if settings.get("slow"):
        words.append("--slow")
    seconds = settings.get("max_seconds", defaults["max_seconds"])
    if seconds != defaults["max_seconds"]:
        words += ["--max-seconds", f"{seconds:g}"]
    return " ".join([*words, "--json", json_name])


def machine_section(info: dict) -> str:
    """The machine as a Markdown list, from :func:`~benchmarks.report.machine_info`."""
    cores = f"{info['logical_cpus']} logical CPUs, {info['usable_cpus']} usable"
    memory = info.get("memory_bytes")
    versions = ", ".join(
        f"{package} {version}"
        for package, version in info["versions"].items()
        if version
    )
    pools = "; ".join(info["thread_pools"]) or "none found"
    lines = [
        f"- CPU: {info['cpu']} ({cores})",
        *([f"- memory: {memory / GIB:.1f} GiB"] if memory else []),
        f"- {info['platform']}, Python {info['python']}",
        f"- {versions}",
        f"- BLAS and OpenMP thread pools: {pools}",
    ]
    return "## Machine\n\n" + "\n".join(lines) + "\n"


def _workload_tables(report: Report) -> dict[str, Table]:
    """The tables with aggregators beside the aggregation floor, by size."""
    return {
        key: table
        for key, table in report.tables.items()
        if any(row.name == AGGREGATION_FLOOR for row in table.rows)
        and any(row.group == AGGREGATE for row in table.rows)
    }


def _ratios(tables: dict[str, Table]) -> dict[str, list[tuple[float, str]]]:
    """Each aggregator's median over the aggregation floor, per table it ran in."""
    ratios: dict[str, list[tuple[float, str]]] = {}
    for key, table in tables.items():
        for row in table.rows:
            name = row.name.removeprefix("aggregate ")
            if row.group != AGGREGATE or name == "auto":
                continue
            ratio = table.ratio(row)
            ratios.setdefault(name, [])
            if ratio is not None:
                ratios[name].append((ratio, key))
    return ratios


def _span(values: list[tuple[float, str]]) -> str:
    """``0.95x (b)`` or ``0.95x (b) to 1.10x (a)``."""
    low, high = min(values), max(values)
    first = f"{format_ratio(low[0])}x ({low[1]})"
    return first if low == high else f"{first} to {format_ratio(high[0])}x ({high[1]})"


def _listing(words: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"


def winners_section(report: Report) -> str:
    """Which aggregator wins where, and why, from the run's workload tables."""
    tables = _workload_tables(report)
    if not tables:
        return ""
    ratios = _ratios(tables)
    ranked = sorted(
        (name for name in ratios if ratios[name]), key=lambda n: min(ratios[n])
    )
    lines = [
        "## Which aggregator wins where, and why",
        "",
        "Each aggregator timed alone (labels given), as a multiple of the "
        "aggregation floor (one streaming pass, `np.add.reduce`) in the "
        "workload tables above, fastest first:",
        "",
    ]
    for name in ranked:
        why = f": {WHY[name]}" if name in WHY else ""
        lines.append(f"- **{name}** {_span(ratios[name])}{why}.")
    for name in sorted(name for name in ratios if not ratios[name]):
        lines.append(f"- **{name}** was skipped at every workload here.")
    chosen: dict[str, list[str]] = {}
    for key, table in tables.items():
        match = re.search(r"`aggregate auto` chose `([^`]+)`", " ".join(table.notes))
        if match:
            chosen.setdefault(match.group(1), []).append(key)
    if chosen:
        where = "; ".join(f"{name} at {_listing(at)}" for name, at in chosen.items())
        lines += ["", f"`auto` chose {where}."]
    lines += _end_to_end(tables)
    return "\n".join(lines) + "\n"


def _end_to_end(tables: dict[str, Table]) -> list[str]:
    """Sentences on ``vlad.encode`` against the essay and the floors."""
    speedups: list[str] = []
    floors: list[str] = []
    optvec: list[str] = []
    product: list[tuple[float, str]] = []
    for key, table in tables.items():
        names = {row.name for row in table.rows}
        if ENCODE_ROW not in names or not set(END_TO_END_FLOOR) <= names:
            continue
        encoded, best = table.row(ENCODE_ROW), table.essay_best()
        speedup = table.speedup(encoded)
        if best is not None and speedup is not None:
            name = best.name.removeprefix("essay ")
            speedups.append(f"{format_ratio(speedup)}x at {key} ({name})")
        if table.ratio(encoded) is not None:
            floors.append(f"{format_ratio(table.ratio(encoded))}x at {key}")
        assignment = table.row(ASSIGNMENT_FLOOR).median
        aggregation = table.row(AGGREGATION_FLOOR).median
        if assignment and aggregation:
            product.append((assignment / aggregation, key))
        if "essay optvec" in names:
            error = table.row("essay optvec").error
            if error is not None and error > 1e-3:
                optvec.append(f"{error:.1e} at {key}")
    lines = []
    if speedups:
        lines.append(
            "End to end, `vlad.encode` is faster than the essay's fastest method "
            f"by {_listing(speedups)}."
        )
    if floors:
        lines.append(
            "Against the sum of the assignment and aggregation floors it takes "
            f"{_listing(floors)}."
        )
    if product:
        ratio, key = max(product)
        lines.append(
            "Assignment is most of the work: the product `X @ centers.T` alone "
            f"takes {format_ratio(ratio)}x the aggregation floor at {key}. "
            "`vlad.encode` fuses it with the argmin and the residual sums, one "
            "cache-sized chunk at a time in each worker, rather than making "
            "three passes."
        )
    if optvec:
        lines.append(
            "The essay's `optvec` keeps a running sum in the descriptors' dtype, "
            f"which loses digits over many rows (relative error {_listing(optvec)})."
        )
    return ["", " ".join(lines)] if lines else []


def render_page(
    record: dict, json_name: str = "results.json", title: str = "Performance"
) -> str:
    """The Markdown page of a run, from the JSON record of
    :func:`~benchmarks.report.write_json`."""
    report = Report.from_dict(record)
    parts = [
        f"# {title}\n\n"
        "Every figure on this page comes from one run, from the root of a source "
        "checkout, of\n\n"
        f"```bash\n{command_line(report.settings, json_name)}\n```\n\n"
        "on the machine below. Timings vary from run to run; compare rows of one "
        "run.\n",
        machine_section(report.machine),
        "## Tables\n",
        *(format_table(table) for table in report.tables.values()),
    ]
    if report.sweep is not None:
        parts.append(format_sweep(report.sweep))
    if report.targets:
        parts.append(f"### Targets\n\n{targets_table(report.targets)}\n")
    why = winners_section(report)
    if why:
        parts.append(why)
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    """Read the JSON, write the page."""
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.performance_page",
        description=__doc__.split("\n\n")[0],
    )
    parser.add_argument(
        "results", type=Path, help="JSON of python -m benchmarks --json"
    )
    parser.add_argument("page", type=Path, help="Markdown file to write")
    parser.add_argument("--title", default="Performance", help="the page's heading")
    arguments = parser.parse_args(argv)
    record = json.loads(arguments.results.read_text(encoding="utf-8"))
    text = render_page(record, arguments.results.name, arguments.title)
    arguments.page.parent.mkdir(parents=True, exist_ok=True)
    arguments.page.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
