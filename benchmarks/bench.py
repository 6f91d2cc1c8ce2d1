"""``python -m benchmarks``: the benchmark tables on this machine.

Run from the root of a source checkout (the harness is not installed with
vlad)::

    python -m benchmarks --size a --size b [--repeats N] [--threads N]
        [--slow] [--plot sweep.png] [--json results.json]

The work is done by :func:`benchmarks.report.run_benchmarks`.
"""

from __future__ import annotations

from pathlib import Path

import click

from benchmarks.measuring import MAX_SECONDS
from benchmarks.report import run_benchmarks, write_json
from benchmarks.workloads import SEARCH_SIZES, SIZES

__all__ = ["bench", "main"]

#: The errors that end the command with one line instead of a traceback: bad
#: input and what the system refuses (a file, memory, a missing extra).
USER_ERRORS = (ValueError, OSError, ImportError, MemoryError)


def check_outputs(paths: list[Path], overwrite: bool) -> None:
    """Refuse, before any work, outputs that exist (without ``--overwrite``)
    or whose folder does not exist."""
    for path in paths:
        if not path.parent.is_dir():
            raise click.ClickException(f"the folder of {path} does not exist")
        if path.is_dir():
            raise click.ClickException(f"{path} is a folder, not a file name")
        if path.exists() and not overwrite:
            raise click.ClickException(
                f"{path} already exists; pass --overwrite to replace it"
            )


@click.command(
    "bench", short_help="Time the aggregators, encode and search on this machine."
)
@click.option(
    "--size",
    "sizes",
    type=click.Choice([*SIZES, *SEARCH_SIZES, "all"]),
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
    default=MAX_SECONDS,
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
@click.option(
    "--overwrite", is_flag=True, help="Replace output files that already exist."
)
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
    (1e4 to 4e6 descriptors). "all" runs these, in about 10 minutes on two
    cores and 6 GB of memory. search (2,000 queries against 100,000 vectors
    of 8,192 floats: exact search, the exact index and a faiss IVF-PQ index
    against the bare product; about 15 minutes and 8 GB) and search-small (a
    tenth of the database) run only when named. Run it from the root of a
    source checkout.

    \b
    Example:
        python -m benchmarks --size a --size single
    """
    check_outputs([path for path in (plot, json_path) if path is not None], overwrite)
    try:
        report = run_benchmarks(
            list(sizes),
            repeats=repeats,
            threads=threads or None,
            slow=slow,
            max_seconds=max_seconds,
            plot=plot,
            echo=click.echo,
        )
        if json_path is not None:
            write_json(report, json_path)
            click.echo(f"Results written to {json_path}", err=True)
    except USER_ERRORS as error:
        message = str(error) or type(error).__name__
        raise click.ClickException(" ".join(message.split())) from None


def main() -> None:
    """Run the benchmarks under the name ``python -m benchmarks``."""
    bench.main(prog_name="python -m benchmarks")
