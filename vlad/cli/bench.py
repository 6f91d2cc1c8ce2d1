"""``vlad bench``: the benchmark tables on this machine.

The benchmark harness is the ``benchmarks`` package of a source checkout, beside
``vlad/``; it is not installed with vlad. The command's options are defined
here without it, so that loading the command line imports none of it;
:func:`load_harness` imports it when the command runs.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType

import click

from vlad.cli.options import overwrite_option
from vlad.cli.reporting import check_outputs, library_errors

__all__ = ["MISSING_HARNESS", "bench", "load_harness", "source_checkout"]

#: What ``--size`` accepts: ``benchmarks.workloads.SIZES``, its
#: ``SEARCH_SIZES`` and ``all``.
SIZE_CHOICES = ("a", "single", "b", "c", "sweep", "search-small", "search", "all")
#: The default ``--max-seconds``: ``benchmarks.measuring.MAX_SECONDS``.
MAX_SECONDS = 20.0

MISSING_HARNESS = (
    "vlad bench runs the benchmark harness of a source checkout (benchmarks/ "
    "beside vlad/); clone the repository and install it with pip install -e ."
)


def source_checkout() -> Path:
    """The folder that holds the ``vlad`` package: a source checkout's root when
    vlad was installed with ``pip install -e .``, site-packages otherwise."""
    return Path(__file__).resolve().parents[2]


def load_harness(checkout: str | Path | None = None) -> ModuleType:
    """Import the benchmark harness of the source checkout beside ``vlad/``.

    Parameters
    ----------
    checkout : path-like, optional
        The folder that holds ``benchmarks/``; by default
        :func:`source_checkout`. It is put first on ``sys.path`` unless it is
        there already.

    Returns
    -------
    module
        ``benchmarks.report``, whose ``run_benchmarks`` and ``write_json`` the
        command calls.

    Raises
    ------
    click.ClickException
        There is no ``benchmarks/`` package in ``checkout`` (vlad installed
        from a wheel), or ``import benchmarks`` finds another package.
    """
    root = (source_checkout() if checkout is None else Path(checkout)).resolve()
    folder = root / "benchmarks"
    if not (folder / "__init__.py").is_file():
        raise click.ClickException(MISSING_HARNESS)
    if not any(Path(entry or ".").resolve() == root for entry in sys.path):
        sys.path.insert(0, str(root))
    package = importlib.import_module("benchmarks")
    found = Path(package.__file__ or ".").resolve().parent
    if found != folder:
        raise click.ClickException(
            f"vlad bench needs the benchmark harness in {folder}, but "
            f"'import benchmarks' found {found}; run it from another folder."
        )
    return importlib.import_module("benchmarks.report")


@click.command(short_help="Time the aggregators, encode and search on this machine.")
@click.option(
    "--size",
    "sizes",
    type=click.Choice(SIZE_CHOICES),
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
    (1e4 to 4e6 descriptors). "all" runs these, in about 10 minutes on two
    cores and 6 GB of memory. search (2,000 queries against 100,000 vectors
    of 8,192 floats: exact search, the exact index and a faiss IVF-PQ index
    against the bare product; about 15 minutes and 8 GB) and search-small (a
    tenth of the database) run only when named. Needs a source checkout
    (benchmarks/ beside vlad/).

    \b
    Example:
        vlad bench --size a --size single
    """
    check_outputs([path for path in (plot, json_path) if path is not None], overwrite)
    harness = load_harness()
    with library_errors():
        report = harness.run_benchmarks(
            list(sizes),
            repeats=repeats,
            threads=threads or None,
            slow=slow,
            max_seconds=max_seconds,
            plot=plot,
            echo=click.echo,
        )
        if json_path is not None:
            harness.write_json(report, json_path)
            click.echo(f"Results written to {json_path}", err=True)
