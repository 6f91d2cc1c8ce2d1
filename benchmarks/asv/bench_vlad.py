"""asv benchmarks: floors, aggregators, the essay's methods and encode.

Each class builds its data in ``setup``
(:func:`benchmarks.workloads.make_problem`, seeded
``np.random.default_rng(0)``), each ``time_*``/``peakmem_*`` method does one
operation, and BLAS/OpenMP run on one thread (as in ``python -m benchmarks``).
Workloads ``b`` and ``c`` (hundreds of MiB) run only with
``VLAD_BENCH_HUGE=1``. Run with ``asv run --python=same`` from ``benchmarks/``
(where ``asv.conf.json`` points asv at this folder, ``benchmarks/asv/``).
"""

import contextlib
import functools
import os

import numpy as np

import vlad
from benchmarks.essay import ESSAY_METHODS
from benchmarks.measuring import limit_threads
from benchmarks.workloads import (
    ESSAY_NORMALIZATION,
    MEMORY_LIMIT_BYTES,
    WORKLOADS,
    make_problem,
    skip_reason,
)

__all__ = ["Aggregate", "Encode", "Essay", "Floors"]

HUGE = os.environ.get("VLAD_BENCH_HUGE") == "1"
WORKLOAD_NAMES = ["single", "a", *(["b", "c"] if HUGE else [])]


class _Benchmark:
    """Builds the workload's problem and holds one thread while measuring."""

    timeout = 600

    def setup(self, workload, *_):
        self.problem = make_problem(WORKLOADS[workload])
        self._limits = contextlib.ExitStack()
        self._limits.enter_context(limit_threads(1))

    def teardown(self, *_):
        self._limits.close()

    def skip_if_slow(self, row):
        """Raise asv's skip (NotImplementedError) where the runner skips ``row``."""
        reason = skip_reason(
            row, self.problem.workload, memory_limit=MEMORY_LIMIT_BYTES
        )
        if reason is not None:
            raise NotImplementedError(reason)


class Floors(_Benchmark):
    params = [WORKLOAD_NAMES]
    param_names = ["workload"]

    def time_aggregation_floor(self, workload):
        np.add.reduce(self.problem.descriptors, axis=0)

    def time_assignment_floor(self, workload):
        self.problem.descriptors @ self.problem.centers.T


class Aggregate(_Benchmark):
    params = [WORKLOAD_NAMES, vlad.available_aggregators()]
    param_names = ["workload", "aggregator"]

    def setup(self, workload, aggregator):
        super().setup(workload)
        self.skip_if_slow(f"aggregate {aggregator}")
        problem = self.problem
        self.aggregate = functools.partial(
            vlad.aggregate,
            problem.descriptors,
            problem.labels,
            problem.offsets,
            problem.centers,
            aggregator,
        )
        self.aggregate()  # compiles numba and JAX kernels

    def time_aggregate(self, workload, aggregator):
        self.aggregate()

    def peakmem_aggregate(self, workload, aggregator):
        self.aggregate()


class Essay(_Benchmark):
    params = [WORKLOAD_NAMES, list(ESSAY_METHODS)]
    param_names = ["workload", "method"]

    def setup(self, workload, method):
        super().setup(workload)
        self.skip_if_slow(f"essay {method}")
        self.encode = functools.partial(
            ESSAY_METHODS[method],
            self.problem.kmeans,
            self.problem.images(),
        )

    def time_essay(self, workload, method):
        self.encode()


class Encode(_Benchmark):
    params = [WORKLOAD_NAMES]
    param_names = ["workload"]

    def setup(self, workload):
        super().setup(workload)
        self.encode = functools.partial(
            vlad.encode,
            self.problem.sets,
            self.problem.centers,
            **ESSAY_NORMALIZATION,
        )
        self.encode()

    def time_encode(self, workload):
        self.encode()

    def peakmem_encode(self, workload):
        self.encode()
