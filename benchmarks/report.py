"""A whole benchmark run: the machine, every table, the targets, JSON, the plot.

:func:`run_benchmarks` runs the named workloads (``python -m benchmarks`` calls
it), prints each table as Markdown as soon as it is measured, and returns a
:class:`Report`; :func:`write_json` saves it and :meth:`Report.from_dict`
reads it back. :func:`machine_info` records the CPU, memory, library versions
and BLAS/OpenMP pools; :func:`plot_sweep` draws the sweep (matplotlib is
imported there).
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.metadata
import json
import os
import platform
from collections.abc import Callable, Sequence

from benchmarks.files import atomic_write
from benchmarks.latency import benchmark_latency
from benchmarks.measuring import MAX_SECONDS
from benchmarks.search import SEARCH_WORKLOADS, benchmark_search, make_search_problem
from benchmarks.suites import benchmark_sweep, benchmark_threads, benchmark_workload
from benchmarks.tables import (
    AGGREGATION_FLOOR,
    Sweep,
    Table,
    format_machine,
    format_sweep,
    format_table,
)
from benchmarks.targets import TargetCheck, check_targets, format_targets
from benchmarks.workloads import (
    MEMORY_LIMIT_BYTES,
    WORKLOADS,
    make_problem,
    parse_sizes,
)

__all__ = [
    "Report",
    "machine_info",
    "plot_sweep",
    "run_benchmarks",
    "write_json",
]


def machine_info() -> dict:
    """CPU, core counts, library versions and BLAS/OpenMP pools of this process.

    Returns
    -------
    dict
        JSON-serialisable.
    """
    # Load the libraries the benchmarks use, so that their pools are listed.
    import scipy.sparse  # noqa: F401
    import sklearn.cluster  # noqa: F401
    from threadpoolctl import threadpool_info

    versions = {}
    for package in ("vlad", "numpy", "scipy", "scikit-learn", "numba", "jax", "jaxlib"):
        try:
            versions[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            versions[package] = None
    pools = [
        f"{pool.get('internal_api')} {pool.get('version')} "
        f"({pool.get('threading_layer', pool.get('user_api'))}, "
        f"{pool.get('num_threads')} threads, {os.path.basename(pool['filepath'])})"
        for pool in threadpool_info()
    ]
    affinity = getattr(os, "sched_getaffinity", None)
    return {
        "cpu": _cpu_model(),
        "logical_cpus": os.cpu_count(),
        "usable_cpus": len(affinity(0)) if affinity else os.cpu_count(),
        "memory_bytes": _memory_bytes(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "versions": versions,
        "thread_pools": pools,
    }


def _memory_bytes() -> int | None:
    """Physical memory of the machine in bytes, or None where unknown."""
    with contextlib.suppress(AttributeError, ValueError, OSError):
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return None


def _cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo, or what platform knows."""
    with contextlib.suppress(OSError):
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


@dataclasses.dataclass
class Report:
    """Everything one :func:`run_benchmarks` call measured."""

    machine: dict
    settings: dict
    tables: dict[str, Table] = dataclasses.field(default_factory=dict)
    sweep: Sweep | None = None
    targets: list[TargetCheck] = dataclasses.field(default_factory=list)

    def to_dict(self) -> dict:
        """A JSON-serialisable record of the whole run."""
        return {
            "machine": self.machine,
            "settings": self.settings,
            "tables": {key: table.to_dict() for key, table in self.tables.items()},
            "sweep": None if self.sweep is None else self.sweep.to_dict(),
            "targets": [
                {**dataclasses.asdict(check), "passed": check.passed}
                for check in self.targets
            ],
        }

    @classmethod
    def from_dict(cls, record: dict) -> Report:
        """The report that :meth:`to_dict` recorded (read back from JSON)."""
        sweep = record.get("sweep")
        return cls(
            record["machine"],
            record["settings"],
            {key: Table.from_dict(table) for key, table in record["tables"].items()},
            None if sweep is None else Sweep.from_dict(sweep),
            [TargetCheck.from_dict(check) for check in record.get("targets", [])],
        )


def run_benchmarks(
    sizes: str | Sequence[str] = "all",
    *,
    repeats: int = 5,
    threads: int | None = 1,
    slow: bool = False,
    memory_limit: int = MEMORY_LIMIT_BYTES,
    max_seconds: float = MAX_SECONDS,
    plot: str | os.PathLike | None = None,
    echo: Callable[[str], None] = print,
) -> Report:
    """Run the named workloads and print each table as soon as it is measured.

    ``single`` adds the latency table, ``b`` the thread study (1 and 2
    threads), ``sweep`` the sweep (and its plot when ``plot`` is given); the
    targets that the run measured come last.

    Parameters
    ----------
    sizes : str or sequence of str, default="all"
        Names from :data:`benchmarks.workloads.SIZES`, or ``"all"``.
    repeats, threads, slow, memory_limit, max_seconds
        As in :func:`benchmarks.suites.benchmark_workload`.
    plot : path-like, optional
        Where to write the sweep's PNG.
    echo : callable, default=print
        Receives each Markdown block.

    Returns
    -------
    Report
    """
    names = parse_sizes(sizes)
    if plot is not None and "sweep" in names:
        _matplotlib_figure()  # fail now, not after the sweep has run
    options = {"repeats": repeats, "threads": threads, "max_seconds": max_seconds}
    report = Report(
        machine_info(),
        {
            "sizes": names,
            "repeats": repeats,
            "threads": threads,
            "slow": slow,
            "memory_limit": memory_limit,
            "max_seconds": max_seconds,
        },
    )
    echo(format_machine(report.machine))
    for name in names:
        if name == "sweep":
            report.sweep = benchmark_sweep(slow=slow, **options)
            echo(format_sweep(report.sweep))
            if plot is not None:
                plot_sweep(report.sweep, plot)
                echo(f"Sweep plot written to {plot}\n")
            continue
        if name in SEARCH_WORKLOADS:
            search_problem = make_search_problem(SEARCH_WORKLOADS[name])
            echo(f"Built the {name} vectors; timing ...\n")
            table = benchmark_search(search_problem, **options)
            report.tables[name] = table
            echo(format_table(table))
            del search_problem
            continue
        problem = make_problem(WORKLOADS[name], threads=threads)
        table = benchmark_workload(
            problem, slow=slow, memory_limit=memory_limit, **options
        )
        report.tables[name] = table
        echo(format_table(table))
        if name == "single":
            latency = benchmark_latency(problem, **options)
            report.tables[latency.key] = latency
            echo(format_table(latency))
        if name == "b":
            study = benchmark_threads(problem, repeats=repeats, max_seconds=max_seconds)
            report.tables[study.key] = study
            echo(format_table(study))
        del problem
    report.targets = check_targets(report.tables, report.sweep)
    echo(format_targets(report.targets))
    return report


def write_json(report: Report, path: str | os.PathLike) -> None:
    """Write ``report.to_dict()`` to ``path`` as JSON, atomically."""
    text = json.dumps(report.to_dict(), indent=1, allow_nan=False)
    with atomic_write(path) as handle:
        handle.write(text.encode("utf-8"))


def _matplotlib_figure():
    """matplotlib's ``Figure`` class, or an ImportError saying how to install it."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise ImportError(
            "plotting the sweep requires matplotlib; install it with: "
            "pip install -e '.[bench]'"
        ) from None
    return Figure


def plot_sweep(sweep: Sweep, path: str | os.PathLike) -> None:
    """Write the sweep as a PNG: ns per descriptor against N, log-log.

    Requires matplotlib (``pip install -e '.[bench]'``); uses its object API,
    so no global backend is set.
    """
    Figure = _matplotlib_figure()
    figure = Figure(figsize=(8, 5), layout="constrained")
    axes = figure.subplots()
    for name in sweep.measurements:
        values = sweep.ns_per_descriptor(name)
        points = [(n, v) for n, v in zip(sweep.rows, values, strict=True) if v]
        if not points:
            continue
        floor = name == AGGREGATION_FLOOR
        axes.plot(
            *zip(*points, strict=True),
            linestyle="--" if floor else "-",
            color="black" if floor else None,
            marker=None if floor else "o",
            label="floor: np.add.reduce" if floor else name,
        )
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlabel(f"N, descriptors ({sweep.shape})")
    axes.set_ylabel("ns per descriptor (median)")
    axes.set_title("VLAD aggregation cost against N")
    axes.grid(True, which="both", alpha=0.3)
    axes.legend(fontsize="small", loc="center left", bbox_to_anchor=(1.01, 0.5))
    with atomic_write(path) as handle:
        figure.savefig(handle, format="png", dpi=120)
