"""How thread-related environment variables change encoding speed.

Environment variables only take effect in a fresh process, so each setting runs
in a child process that measures ``vlad.assign``, ``aggregate auto`` and
``vlad.encode`` with no thread limit inside the process (``threads=None``);
the parent prints one Markdown table. This is what a user can set before
starting Python; the library itself never sets them.

Usage, from the root of a source checkout::

    python -m benchmarks.threads [--size single|a|b|c] [--repeats N]
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import subprocess
import sys
from pathlib import Path

import vlad
from benchmarks.measuring import Measurement, measure
from benchmarks.tables import ENCODE_ROW, FLOOR, format_seconds, markdown_table
from benchmarks.workloads import ESSAY_NORMALIZATION, WORKLOADS, make_problem

__all__ = ["OPERATIONS", "SETTINGS", "main", "measure_in_this_process"]

#: The source checkout that holds ``benchmarks/``; the children run there.
CHECKOUT = Path(__file__).resolve().parents[1]

#: Settings compared, each a set of environment variables for the child.
SETTINGS: dict[str, dict[str, str]] = {
    "no variable set": {},
    "OMP_NUM_THREADS=1": {"OMP_NUM_THREADS": "1"},
    "OPENBLAS_NUM_THREADS=1": {"OPENBLAS_NUM_THREADS": "1"},
    "OMP_WAIT_POLICY=passive": {"OMP_WAIT_POLICY": "passive"},
}
OPERATIONS = ("vlad.assign", "aggregate auto", ENCODE_ROW)


def measure_in_this_process(size: str, repeats: int) -> dict[str, list[float]]:
    """Seconds of each operation's timed calls, with no thread limit."""
    problem = make_problem(WORKLOADS[size], threads=None)
    descriptors, centers = problem.descriptors, problem.centers
    functions = {
        "vlad.assign": functools.partial(vlad.assign, descriptors, centers),
        "aggregate auto": functools.partial(
            vlad.aggregate, descriptors, problem.labels, problem.offsets, centers
        ),
        ENCODE_ROW: functools.partial(
            vlad.encode,
            problem.sets,
            centers,
            **ESSAY_NORMALIZATION,
        ),
    }
    return {
        name: measure(
            name,
            function,
            group=FLOOR,
            repeats=repeats,
            threads=None,
            memory=False,
        ).times
        for name, function in functions.items()
    }


def main(argv: list[str] | None = None) -> int:
    """Run every setting in a child process and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", choices=sorted(WORKLOADS), default="single")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    arguments = parser.parse_args(argv)
    if arguments.child:
        print(json.dumps(measure_in_this_process(arguments.size, arguments.repeats)))
        return 0
    rows = []
    for label, variables in SETTINGS.items():
        child = subprocess.run(
            [sys.executable, "-m", "benchmarks.threads", "--child"]
            + ["--size", arguments.size, "--repeats", str(arguments.repeats)],
            cwd=CHECKOUT,
            env={**os.environ, **variables},
            capture_output=True,
            text=True,
            check=True,
        )
        times = json.loads(child.stdout)
        cells = [label]
        for name in OPERATIONS:
            row = Measurement(name, FLOOR, times=times[name])
            median, minimum = format_seconds(row.median), format_seconds(row.minimum)
            cells.append(f"{median} / {minimum}")
        rows.append(cells)
    header = ["environment", *(f"{name} median / min" for name in OPERATIONS)]
    workload = WORKLOADS[arguments.size]
    print(f"### Thread settings: workload {arguments.size}: {workload.describe()}\n")
    print(markdown_table(header, rows, "l" + "r" * len(OPERATIONS)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
