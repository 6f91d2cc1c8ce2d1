"""``vlad bench``: the benchmark tables on this machine."""

from __future__ import annotations

from pathlib import Path

import click

from vlad import benchmarking
from vlad.cli.options import overwrite_option
from vlad.cli.reporting import check_outputs, library_errors


@click.command(short_help="Time every aggregator and encode on this machine.")
@click.option(
    "--size",
    "sizes",
    type=click.Choice([*benchmarking.SIZES, "all"]),
    multiple=True,
    default=["all"],
    show_default=True,
    help="Workload(s) to run; repeat the option for several.",
)
@click.option(
    "--repeats",
    type=click.IntRange(min=1),
    default=5,
    show_default=True,
    help="Timed calls per measurement (median and minimum are reported).",
)
@click.option(
    "--threads",
    type=click.IntRange(min=0),
    default=1,
    show_default=True,
    help="BLAS/OpenMP thread limit while timing; 0 for no limit.",
)
@click.option("--slow", is_flag=True, help="Also time 'masked' and 'loop' where slow.")
@click.option(
    "--max-seconds",
    type=click.FloatRange(min=0, min_open=True),
    default=benchmarking.MAX_SECONDS,
    show_default=True,
    help="Stop repeating a measurement (after 3 calls) once it took this long.",
)
@click.option(
    "--plot",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write the sweep's plot (PNG; needs matplotlib) to this file.",
)
@click.option(
    "--json",
    "json_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also write every result to this JSON file.",
)
@overwrite_option
def bench(
    sizes: tuple[str, ...],
    repeats: int,
    threads: int,
    slow: bool,
    max_seconds: float,
    plot: Path | None,
    json_path: Path | None,
    overwrite: bool,
) -> None:
    """Print one Markdown table per workload: every aggregator, the essay's
    four methods, vlad.encode, the memory and arithmetic floors, ratios and
    peak memory; then the performance targets.

    \b
    Workloads: a (the essay's: 256 x 128 x 64, K=16), b (1000 x 1000 x 128,
    K=64), c (200 x 2000 x 128, K=256), single (one image, latency), sweep
    (1e4 to 4e6 descriptors). "all" takes about 10 minutes on two cores and
    about 6 GB of memory.

    \b
    Example:
        vlad bench --size a --size single
    """
    check_outputs([path for path in (plot, json_path) if path is not None], overwrite)
    with library_errors():
        report = benchmarking.run_benchmarks(
            list(sizes),
            repeats=repeats,
            threads=threads or None,
            slow=slow,
            max_seconds=max_seconds,
            plot=plot,
            echo=click.echo,
        )
        if json_path is not None:
            benchmarking.write_json(report, json_path)
            click.echo(f"Results written to {json_path}", err=True)
