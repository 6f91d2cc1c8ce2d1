"""Run the vlad benchmark suite and print one Markdown table per workload.

Usage::

    python benchmarks/run.py --size a|b|c|sweep|single|all [--repeats N]
        [--threads N] [--slow] [--plot sweep.png] [--json results.json]

The work is done by :func:`vlad.benchmarking.run_benchmarks`; this script only
parses the command line and writes the optional JSON file.
"""

from __future__ import annotations

import argparse
import sys

from vlad import benchmarking


def parse_arguments(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, checked."""
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument(
        "--size",
        choices=[*benchmarking.SIZES, "all"],
        action="append",
        help="workload(s) to run; repeat the option for several (default: all)",
    )
    parser.add_argument(
        "--repeats", type=int, default=5, help="timed calls per measurement"
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="BLAS/OpenMP/numba thread limit inside the harness; 0 for no limit",
    )
    parser.add_argument(
        "--slow",
        action="store_true",
        help="also run the 'masked' and 'loop' aggregators where they are slow",
    )
    parser.add_argument(
        "--max-seconds",
        type=float,
        default=benchmarking.MAX_SECONDS,
        help="stop repeating a measurement (after 3 calls) once it took this long",
    )
    parser.add_argument(
        "--plot", default="sweep.png", help="PNG of the sweep (when it runs)"
    )
    parser.add_argument("--json", help="also write every result to this JSON file")
    arguments = parser.parse_args(argv)
    if arguments.repeats < 1:
        parser.error(f"--repeats must be at least 1; got {arguments.repeats}")
    if arguments.threads < 0:
        parser.error(f"--threads must be 0 or more; got {arguments.threads}")
    return arguments


def main(argv: list[str] | None = None) -> int:
    """Run the benchmarks the command line asks for."""
    arguments = parse_arguments(argv)
    report = benchmarking.run_benchmarks(
        arguments.size or "all",
        repeats=arguments.repeats,
        threads=arguments.threads or None,
        slow=arguments.slow,
        max_seconds=arguments.max_seconds,
        plot=arguments.plot,
        echo=lambda text: print(text, flush=True),
    )
    if arguments.json:
        benchmarking.write_json(report, arguments.json)
        print(f"Results written to {arguments.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
