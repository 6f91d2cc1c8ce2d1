"""The benchmark harness of vlad: every aggregator against its floors and the essay.

Part of the source checkout, not of the installed ``vlad`` package. Run it
from the repository root with ``python -m benchmarks`` (:mod:`benchmarks.bench`).

Modules, in the order they build on each other:

- :mod:`benchmarks.measuring`: timing, peak allocation, thread limits, one
  row of a table (:class:`~benchmarks.measuring.Measurement`);
- :mod:`benchmarks.workloads`: the named workloads, their data and the
  float64 references;
- :mod:`benchmarks.essay`: the essay's four encoders, as published;
- :mod:`benchmarks.tables`: tables, the sweep, and their Markdown;
- :mod:`benchmarks.suites` and :mod:`benchmarks.latency`: the benchmarks
  that fill the tables;
- :mod:`benchmarks.targets`: the performance targets;
- :mod:`benchmarks.report`: a whole run, its JSON and the sweep plot;
- :mod:`benchmarks.performance_page`: a run's JSON as a Markdown page;
- :mod:`benchmarks.threads`: thread environment variables, one child process
  each;
- ``benchmarks/asv/``: the same workloads as an asv suite.

Importing this package imports none of its modules.
"""

__all__ = [
    "essay",
    "latency",
    "measuring",
    "performance_page",
    "report",
    "suites",
    "tables",
    "targets",
    "threads",
    "workloads",
]
