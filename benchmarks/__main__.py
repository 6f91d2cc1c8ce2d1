"""``python -m benchmarks``: run the benchmarks and print one table per workload.

The same command as ``vlad bench``, from the root of a source checkout::

    python -m benchmarks --size a --size b [--repeats N] [--threads N]
        [--slow] [--plot sweep.png] [--json results.json]

The work is done by :func:`benchmarks.report.run_benchmarks`.
"""

from __future__ import annotations

import sys

from vlad.cli.bench import bench

__all__ = ["main"]


def main() -> None:
    """Run ``vlad bench`` under the name ``python -m benchmarks``."""
    bench.main(prog_name="python -m benchmarks")


if __name__ == "__main__":
    sys.exit(main())
