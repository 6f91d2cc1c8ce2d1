"""Run the vlad benchmark suite and print one Markdown table per workload.

The same as ``vlad bench``, from a source checkout::

    python benchmarks/run.py --size a --size b [--repeats N] [--threads N]
        [--slow] [--plot sweep.png] [--json results.json]

The work is done by :func:`vlad.benchmarking.run_benchmarks`.
"""

from __future__ import annotations

import sys

from vlad.cli.bench import bench

if __name__ == "__main__":
    sys.exit(bench.main(prog_name="benchmarks/run.py"))
