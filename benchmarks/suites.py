"""The benchmarks: one table per workload, the sweep, and the thread study.

- :func:`benchmark_workload`: every aggregator (labels given), the essay's
  four methods, :func:`vlad.assign` and :func:`vlad.encode` beside the
  aggregation and assignment floors;
- :func:`benchmark_sweep`: the aggregation time of every aggregator against
  the number of descriptors;
- :func:`benchmark_threads`: the product under each BLAS thread limit, and
  assignment and encoding with as many worker threads (``n_jobs``).

The single-image latency table is :func:`benchmarks.latency.benchmark_latency`.
"""

from __future__ import annotations

import functools
import importlib.util
from collections.abc import Sequence

import numpy as np

from benchmarks.essay import ESSAY_METHODS
from benchmarks.measuring import (
    MAX_SECONDS,
    Measurement,
    measure,
    measure_or_record,
    usable_cpus,
)
from benchmarks.tables import (
    AGGREGATE,
    AGGREGATION_FLOOR,
    ASSIGN,
    ASSIGNMENT_FLOOR,
    ENCODE,
    ENCODE_ROW,
    END_TO_END_FLOOR,
    ESSAY,
    FLOOR,
    Sweep,
    Table,
)
from benchmarks.workloads import (
    ESSAY_NORMALIZATION,
    MEMORY_LIMIT_BYTES,
    SWEEP_ROWS,
    SWEEP_SHAPE,
    Problem,
    Workload,
    make_problem,
    reference_residuals,
    skip_reason,
)
from vlad.core import assign, encode, normalize
from vlad.core.aggregators import aggregate, available_aggregators, choose_aggregator

__all__ = [
    "ACCELERATOR_ROWS",
    "COLUMNS_NOTE",
    "accelerator_encoders",
    "benchmark_sweep",
    "benchmark_threads",
    "benchmark_workload",
    "settings_note",
    "thread_counts_up_to",
]


def benchmark_workload(
    problem: Problem,
    *,
    repeats: int = 5,
    threads: int | None = 1,
    slow: bool = False,
    memory_limit: int = MEMORY_LIMIT_BYTES,
    max_seconds: float = MAX_SECONDS,
) -> Table:
    """Every method on one workload, beside the two floors.

    Rows: the aggregation and assignment floors; :func:`vlad.assign`; every
    available aggregator through :func:`vlad.aggregate` with the labels
    (aggregation alone, validation included); the essay's four methods end
    to end; :func:`vlad.encode` end to end with the essay's normalisation;
    and the accelerator encoders that are installed
    (:func:`accelerator_encoders`), on their default device, from host
    arrays.

    Parameters
    ----------
    problem : Problem
    repeats : int, default=5
    threads : int or None, default=1
        See :func:`benchmarks.measuring.limit_threads`.
    slow : bool, default=False
        Also run ``masked`` and ``loop`` where they are slow.
    memory_limit : int, default=MEMORY_LIMIT_BYTES
        See :func:`benchmarks.workloads.skip_reason`.
    max_seconds : float, default=MAX_SECONDS
        See :func:`benchmarks.measuring.time_calls`.

    Returns
    -------
    Table
    """
    workload = problem.workload
    descriptors, labels = problem.descriptors, problem.labels
    offsets, centers = problem.offsets, problem.centers
    options = {"repeats": repeats, "threads": threads, "max_seconds": max_seconds}
    residuals = reference_residuals(descriptors, labels, offsets, centers)
    vectors = normalize(residuals, **ESSAY_NORMALIZATION)
    rows = [
        measure(
            AGGREGATION_FLOOR,
            functools.partial(np.add.reduce, descriptors, axis=0),
            group=FLOOR,
            baseline=(AGGREGATION_FLOOR,),
            **options,
        ),
        measure(
            ASSIGNMENT_FLOOR,
            functools.partial(np.matmul, descriptors, centers.T),
            group=FLOOR,
            baseline=(ASSIGNMENT_FLOOR,),
            **options,
        ),
        measure(
            "vlad.assign",
            functools.partial(assign, descriptors, centers),
            group=ASSIGN,
            baseline=(ASSIGNMENT_FLOOR,),
            **options,
        ),
    ]
    for name in available_aggregators():
        row = f"aggregate {name}"
        rows.append(
            measure_or_record(
                row,
                functools.partial(
                    aggregate, descriptors, labels, offsets, centers, name
                ),
                skipped=skip_reason(
                    row, workload, slow=slow, memory_limit=memory_limit
                ),
                group=AGGREGATE,
                baseline=(AGGREGATION_FLOOR,),
                reference=residuals,
                **options,
            )
        )
    images = problem.images()
    for name, method in ESSAY_METHODS.items():
        row = f"essay {name}"
        rows.append(
            measure_or_record(
                row,
                functools.partial(method, problem.kmeans, images),
                skipped=skip_reason(
                    row, workload, slow=slow, memory_limit=memory_limit
                ),
                group=ESSAY,
                baseline=END_TO_END_FLOOR,
                reference=vectors,
                **options,
            )
        )
    rows.append(
        measure(
            ENCODE_ROW,
            functools.partial(encode, problem.sets, centers, **ESSAY_NORMALIZATION),
            group=ENCODE,
            baseline=END_TO_END_FLOOR,
            reference=vectors,
            **options,
        )
    )
    for row, encoder in accelerator_encoders(centers):
        rows.append(
            measure_or_record(
                row,
                functools.partial(encoder, problem.sets),
                skipped=None,
                group=ENCODE,
                baseline=END_TO_END_FLOOR,
                reference=vectors,
                **options,
            )
        )
    auto = choose_aggregator(descriptors.shape[0], *centers.shape)
    notes = [
        f"`aggregate auto` chose `{auto}`.",
        settings_note(threads, repeats),
        COLUMNS_NOTE,
    ]
    return Table(
        workload.name, f"Workload {workload.name}: {workload.describe()}", rows, notes
    )


def settings_note(threads: int | None, repeats: int) -> str:
    """The note that says how a table was measured."""
    limit = "no thread limit" if threads is None else f"{threads} thread(s)"
    return (
        f"{limit} for BLAS and OpenMP (vlad's own workers: every core); median "
        f"and min of up to {repeats} calls after a warm-up call."
    )


#: How to read the columns of a workload table.
COLUMNS_NOTE = (
    "Aggregators are timed through `vlad.aggregate`, checks included, "
    "labels given; `vlad.assign`, the essay's methods, `vlad.encode` and the "
    "accelerator encoders end to end (essay rows include "
    "`MiniBatchKMeans.predict`). x floor: median over the median of the "
    "relevant floor (assignment + aggregation for end-to-end rows). "
    "peak MiB: largest NumPy allocation during one call, output included, "
    "input not. rel. error: max |result - float64 reference| / max |reference|."
)


#: Rows of the accelerator encoders, and the extra each needs.
ACCELERATOR_ROWS = {"vlad.JaxEncoder": "jax", "vlad.TorchEncoder": "torch"}


def accelerator_encoders(centers: np.ndarray) -> list[tuple[str, object]]:
    """``(row, encoder)`` of each installed accelerator encoder, built on its
    default device with the essay's normalisation."""
    import vlad

    encoders = []
    for row, module in ACCELERATOR_ROWS.items():
        if importlib.util.find_spec(module) is not None:
            encoder_class = getattr(vlad, row.removeprefix("vlad."))
            encoders.append((row, encoder_class(centers, **ESSAY_NORMALIZATION)))
    return encoders


def benchmark_sweep(
    rows: Sequence[int] = SWEEP_ROWS,
    *,
    n_descriptors: int = SWEEP_SHAPE["n_descriptors"],
    n_features: int = SWEEP_SHAPE["n_features"],
    n_clusters: int = SWEEP_SHAPE["n_clusters"],
    repeats: int = 5,
    threads: int | None = 1,
    slow: bool = False,
    max_seconds: float = MAX_SECONDS,
) -> Sweep:
    """Time the aggregation floor and every aggregator at each N in ``rows``.

    The data of the largest N is built once (float32, SIFT-like) and each point
    uses its first ``N // n_descriptors`` images. Peak memory is not traced.

    Parameters
    ----------
    rows : sequence of int, default=SWEEP_ROWS
    n_descriptors, n_features, n_clusters : int
        L, F and K.
    repeats, threads, slow, max_seconds
        As in :func:`benchmark_workload`.

    Returns
    -------
    Sweep
    """
    n_images = [max(1, n_rows // n_descriptors) for n_rows in rows]
    largest = make_problem(
        Workload("sweep", max(n_images), n_descriptors, n_features, n_clusters),
        threads=threads,
    )
    options = {
        "repeats": repeats,
        "threads": threads,
        "max_seconds": max_seconds,
        "memory": False,
    }
    names = [AGGREGATION_FLOOR, *available_aggregators()]
    measurements: dict[str, list[Measurement]] = {name: [] for name in names}
    for count in n_images:
        problem = largest.head(count)
        arguments = (problem.descriptors, problem.labels, problem.offsets)
        measurements[AGGREGATION_FLOOR].append(
            measure(
                AGGREGATION_FLOOR,
                functools.partial(np.add.reduce, problem.descriptors, axis=0),
                group=FLOOR,
                **options,
            )
        )
        for name in names[1:]:
            measurements[name].append(
                measure_or_record(
                    name,
                    functools.partial(aggregate, *arguments, problem.centers, name),
                    skipped=skip_reason(
                        f"aggregate {name}",
                        problem.workload,
                        slow=slow,
                        memory_limit=MEMORY_LIMIT_BYTES,
                    ),
                    group=AGGREGATE,
                    **options,
                )
            )
    shape = f"F={n_features}, K={n_clusters}, L={n_descriptors} per image"
    notes = [
        f"{shape}, float32 SIFT-like; median ns per descriptor of "
        "`vlad.aggregate` (checks included). `auto` runs the aggregator it "
        "chooses, so auto / best is its dispatch overhead plus timing noise.",
        settings_note(threads, repeats),
    ]
    rows = [count * n_descriptors for count in n_images]
    return Sweep(rows, measurements, shape, notes)


def thread_counts_up_to(cores: int) -> tuple[int, ...]:
    """1, 2, 4, ... up to ``cores``, and ``cores`` itself."""
    counts = [1 << power for power in range(cores.bit_length()) if 1 << power < cores]
    return (*counts, cores)


def benchmark_threads(
    problem: Problem,
    *,
    thread_counts: Sequence[int] | None = None,
    repeats: int = 5,
    max_seconds: float = MAX_SECONDS,
) -> Table:
    """Time the product under each BLAS thread limit, and assignment and
    encoding with as many worker threads.

    ``n_jobs`` is the whole thread count of a vlad call (each worker keeps
    BLAS to one thread), so ``vlad.assign`` and ``vlad.encode`` run with
    ``n_jobs`` = each thread count, beside the BLAS product with as many
    threads. Each row is compared with the same operation's first row.

    Parameters
    ----------
    problem : Problem
    thread_counts : sequence of int, optional
        Default: 1, 2, 4, ... up to every available core.
    repeats, max_seconds
        As in :func:`benchmark_workload`.

    Returns
    -------
    Table
    """
    if thread_counts is None:
        thread_counts = thread_counts_up_to(usable_cpus())
    descriptors, centers = problem.descriptors, problem.centers
    product = functools.partial(np.matmul, descriptors, centers.T)

    def assigned(n_jobs: int):
        return functools.partial(assign, descriptors, centers, n_jobs=n_jobs)

    def encoded(n_jobs: int):
        return functools.partial(
            encode, problem.sets, centers, n_jobs=n_jobs, **ESSAY_NORMALIZATION
        )

    def blas(count: int) -> str:
        return f"BLAS {count} thread{'s' if count > 1 else ''}"

    plan = [
        *((ASSIGNMENT_FLOOR, blas(n), n, product) for n in thread_counts),
        *(("vlad.assign", f"n_jobs={n}", n, assigned(n)) for n in thread_counts),
        *((ENCODE_ROW, f"n_jobs={n}", n, encoded(n)) for n in thread_counts),
    ]
    first: dict[str, str] = {}
    rows = []
    for operation, variant, count, function in plan:
        name = f"{operation} [{variant}]"
        first.setdefault(operation, name)
        rows.append(
            measure(
                name,
                function,
                group=FLOOR,
                baseline=(first[operation],),
                repeats=repeats,
                threads=count,
                memory=False,
                max_seconds=max_seconds,
            )
        )
    notes = [
        "The product's BLAS limited inside the process with threadpoolctl; "
        "`vlad.assign` and `vlad.encode` run `n_jobs` worker threads with one "
        f"BLAS thread each. Median and min of up to {repeats} calls.",
    ]
    return Table(
        f"threads {problem.workload.name}",
        f"BLAS threads and n_jobs: workload {problem.workload.name}",
        rows,
        notes,
        ratio_label="x first row",
    )
