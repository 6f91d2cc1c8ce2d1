"""Benchmarks of the VLAD pipeline against its floors and the essay it comes from.

The measuring instrument behind ``benchmarks/run.py`` and ``vlad bench``:

- the workloads (:data:`WORKLOADS`, :data:`SWEEP_ROWS`) and their data, built
  once per workload from ``np.random.default_rng(seed)`` (:func:`make_problem`);
- the essay's four encoders, reproduced faithfully, k-means prediction
  included (:data:`ESSAY_METHODS`);
- a harness that times one operation after a warm-up call, several repeats
  under a thread limit, and records the peak of what it allocates
  (:func:`measure`);
- the tables: one per workload (:func:`benchmark_workload`), the single-image
  latency against bare NumPy kernels (:func:`benchmark_latency`), the sweep
  over the number of descriptors (:func:`benchmark_sweep`), BLAS/OpenMP thread
  counts (:func:`benchmark_threads`) and the targets (:func:`check_targets`),
  all run by :func:`run_benchmarks` and printed as Markdown.

Importing this module needs the runtime dependencies only; threadpoolctl
(installed with scikit-learn) and matplotlib are imported where they are used.

References
----------
.. [1] V. Feinberg. "Scatter Reduction (Numpy Gems, Part 5)". 2021.
   https://vladfeinberg.com/2021/09/15/scatter-reduction.html
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import gc
import importlib.metadata
import importlib.util
import json
import os
import platform
import time
import tracemalloc
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from vlad.core.aggregators import AGGREGATORS, available_aggregators, choose_aggregator
from vlad.core.aggregators.segments import image_of_rows
from vlad.core.assignment import assign
from vlad.core.descriptors import DescriptorSets
from vlad.core.encoding import encode
from vlad.core.normalization import normalize
from vlad.datasets import make_descriptor_sets
from vlad.essay import ESSAY_METHODS
from vlad.formats.files import atomic_write

MIB = 1 << 20
GIB = 1 << 30

#: Normalisation shared by every end-to-end method: the essay's signed square
#: root followed by a global L2 norm.
ESSAY_NORMALIZATION = {"power": 0.5, "intra": False, "l2": True}

#: ``masked`` forms every residual ``x - c_k``: ``N * K * F`` of them, about 4 ns
#: each on a 2-core EPYC, so above this it is skipped unless asked for.
MASKED_MAX_ELEMENTS = 1 << 28
#: ``loop`` runs ``T * K`` masked sums in Python, about 10 us each.
LOOP_MAX_ITERATIONS = 1 << 18
#: The essay's ``naivec`` is skipped when its ``(T, L, K, F)`` temporary is larger.
MEMORY_LIMIT_BYTES = 2 * GIB
#: A measurement stops repeating once its timed calls have taken this long
#: (after at least ``MIN_REPEATS`` calls).
MAX_SECONDS = 20.0
MIN_REPEATS = 3
#: Fast operations repeat beyond ``repeats`` until their calls have taken this
#: long (as timeit's autorange does), up to ``MAX_REPEATS`` calls: a median of
#: five sub-millisecond calls is mostly scheduler noise on a shared machine.
MIN_SECONDS = 0.25
MAX_REPEATS = 1000

# Row groups, and the names of the rows other rows are compared with.
FLOOR, ASSIGN, AGGREGATE, ESSAY, ENCODE, KERNEL = (
    "floor",
    "assign",
    "aggregate",
    "essay",
    "encode",
    "kernel",
)
AGGREGATION_FLOOR = "aggregation floor: np.add.reduce(X, axis=0)"
ASSIGNMENT_FLOOR = "assignment floor: X @ centers.T"
END_TO_END_FLOOR = (ASSIGNMENT_FLOOR, AGGREGATION_FLOOR)
ENCODE_ROW = "vlad.encode"


# --------------------------------------------------------------------------
# Workloads and their data
# --------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Workload:
    """Shape and kind of one benchmark input.

    Parameters
    ----------
    name : str
    n_images : int
        T, the number of images.
    n_descriptors : int
        L, descriptors per image.
    n_features : int
        F, the descriptor dimension.
    n_clusters : int
        K, the number of centres.
    dtype : {"float32", "float64"}, default="float32"
    kind : {"sift", "gaussian"}, default="sift"
        As in :func:`vlad.datasets.make_descriptor_sets`.
    """

    name: str
    n_images: int
    n_descriptors: int
    n_features: int
    n_clusters: int
    dtype: str = "float32"
    kind: str = "sift"

    @property
    def n_rows(self) -> int:
        """N = T * L, the number of descriptors."""
        return self.n_images * self.n_descriptors

    @property
    def itemsize(self) -> int:
        """Bytes per descriptor value."""
        return np.dtype(self.dtype).itemsize

    def describe(self) -> str:
        """One line: the shape, the dtype and the size of the descriptors."""
        size = self.n_rows * self.n_features * self.itemsize / MIB
        return (
            f"T={self.n_images}, L={self.n_descriptors}, F={self.n_features}, "
            f"K={self.n_clusters}, {self.dtype} {self.kind} "
            f"(N={self.n_rows:,} descriptors, {size:,.1f} MiB)"
        )


#: The named workloads of issue 5. ``a`` is the essay's own (Gaussian data, as
#: its ``np.random.randn``).
WORKLOADS: dict[str, Workload] = {
    "a": Workload("a", 256, 128, 64, 16, dtype="float64", kind="gaussian"),
    "b": Workload("b", 1000, 1000, 128, 64),
    "c": Workload("c", 200, 2000, 128, 256),
    "single": Workload("single", 1, 500, 128, 64),
}
#: Numbers of descriptors N of the sweep, at ``SWEEP_SHAPE``.
SWEEP_ROWS = (10_000, 30_000, 100_000, 300_000, 1_000_000, 4_000_000)
#: Descriptors per image, features and centres of the sweep.
SWEEP_SHAPE = {"n_descriptors": 1000, "n_features": 128, "n_clusters": 64}
#: What ``--size`` accepts; ``all`` runs them in this order.
SIZES = ("a", "single", "b", "c", "sweep")


@dataclasses.dataclass(frozen=True)
class Problem:
    """A workload's data: descriptor sets, a fitted k-means and the labels.

    ``kmeans`` is a fitted :class:`sklearn.cluster.MiniBatchKMeans` (the
    essay's methods call its ``predict``); its centres are the codebook of
    every method, and ``labels`` are :func:`vlad.assign`'s for them.
    """

    workload: Workload
    sets: DescriptorSets
    kmeans: Any
    labels: np.ndarray

    @property
    def descriptors(self) -> np.ndarray:
        """All descriptors, shape (N, F)."""
        return self.sets.descriptors

    @property
    def offsets(self) -> np.ndarray:
        """Image boundaries, shape (T + 1,)."""
        return self.sets.offsets

    @property
    def centers(self) -> np.ndarray:
        """The k-means centres, shape (K, F), in the descriptors' dtype."""
        return self.kmeans.cluster_centers_

    def images(self) -> np.ndarray:
        """The descriptors as the essay takes them, a (T, L, F) view."""
        workload = self.workload
        return self.descriptors.reshape(
            workload.n_images, workload.n_descriptors, workload.n_features
        )

    def head(self, n_images: int) -> Problem:
        """The first ``n_images`` images, as views of this problem's arrays."""
        stop = int(self.offsets[n_images])
        workload = dataclasses.replace(
            self.workload,
            name=f"{self.workload.name}[:{n_images}]",
            n_images=n_images,
        )
        sets = DescriptorSets(
            self.descriptors[:stop], self.offsets[: n_images + 1], names=range(n_images)
        )
        return Problem(workload, sets, self.kmeans, self.labels[:stop])


def make_problem(
    workload: Workload,
    *,
    seed: int = 0,
    sample: int = 20_000,
    threads: int | None = 1,
) -> Problem:
    """Build a workload's descriptors, fit the essay's k-means and assign labels.

    Parameters
    ----------
    workload : Workload
    seed : int, default=0
        Seeds the descriptors (:func:`vlad.datasets.make_descriptor_sets`),
        the k-means sample and k-means itself.
    sample : int, default=20_000
        k-means is fitted on at most this many descriptors; fitting is not
        timed, so only the centres it gives matter.
    threads : int or None, default=1
        Thread limit while fitting (see :func:`limit_threads`). scikit-learn
        fixes the number of OpenMP threads ``predict`` uses when it fits, so
        this is also the essay methods' thread count: pass the limit the
        measurements run under.

    Returns
    -------
    Problem
    """
    from sklearn.cluster import MiniBatchKMeans

    sets = make_descriptor_sets(
        workload.n_images,
        workload.n_descriptors,
        workload.n_features,
        kind=workload.kind,
        dtype=np.dtype(workload.dtype),
        seed=seed,
    )
    descriptors = sets.descriptors
    rng = np.random.default_rng(seed)
    n_rows = descriptors.shape[0]
    rows = np.sort(rng.choice(n_rows, size=min(n_rows, sample), replace=False))
    kmeans = MiniBatchKMeans(n_clusters=workload.n_clusters, random_state=seed)
    with limit_threads(threads):
        kmeans.fit(descriptors[rows])
    labels = assign(descriptors, kmeans.cluster_centers_)
    return Problem(workload, sets, kmeans, labels)


def naivec_temporary_bytes(workload: Workload) -> int:
    """Size of ``naivec``'s (T, L, K, F) residual temporary (it makes two)."""
    return (
        workload.n_rows * workload.n_clusters * workload.n_features * workload.itemsize
    )


def skip_reason(
    name: str, workload: Workload, *, slow: bool = False, memory_limit: int
) -> str | None:
    """Why the aggregator or essay method ``name`` is not run at ``workload``.

    Parameters
    ----------
    name : str
        ``"aggregate <aggregator>"`` or ``"essay <method>"``.
    workload : Workload
    slow : bool, default=False
        Run ``masked`` and ``loop`` however long they take.
    memory_limit : int
        Largest (T, L, K, F) temporary ``naivec`` may make, in bytes.

    Returns
    -------
    str or None
        The reason, as the table shows it, or None to run it.
    """
    n_elements = workload.n_rows * workload.n_clusters * workload.n_features
    n_iterations = workload.n_images * workload.n_clusters
    if name == "essay naivec" and naivec_temporary_bytes(workload) > memory_limit:
        return (
            f"skipped (memory): its (T, L, K, F) temporary needs "
            f"{naivec_temporary_bytes(workload) / GIB:.1f} GiB "
            f"> {memory_limit / GIB:.1f} GiB"
        )
    if slow:
        return None
    if name == "aggregate masked" and n_elements > MASKED_MAX_ELEMENTS:
        return f"skipped (slow): N*K*F = {n_elements:.1e} residuals"
    if name == "aggregate loop" and n_iterations > LOOP_MAX_ITERATIONS:
        return f"skipped (slow): T*K = {n_iterations:,} Python iterations"
    return None


# --------------------------------------------------------------------------
# References: what every result is compared with
# --------------------------------------------------------------------------


def reference_residuals(
    descriptors: np.ndarray, labels: np.ndarray, offsets: np.ndarray, centers
) -> np.ndarray:
    """Residual sums in float64, independently of the aggregators.

    One ``np.bincount`` per feature, which accumulates in float64.

    Parameters
    ----------
    descriptors : ndarray of shape (n_descriptors, n_features)
    labels : ndarray of int of shape (n_descriptors,)
    offsets : ndarray of int of shape (n_images + 1,)
    centers : ndarray of shape (n_clusters, n_features)

    Returns
    -------
    residuals : ndarray of float64 of shape (n_images, n_clusters, n_features)
    """
    n_images = offsets.shape[0] - 1
    n_clusters, n_features = centers.shape
    n_segments = n_images * n_clusters
    segments = image_of_rows(offsets) * n_clusters + labels
    sums = np.empty((n_segments, n_features), dtype=np.float64)
    for feature in range(n_features):
        sums[:, feature] = np.bincount(
            segments, weights=descriptors[:, feature], minlength=n_segments
        )
    counts = np.bincount(segments, minlength=n_segments)
    residuals = sums.reshape(n_images, n_clusters, n_features)
    residuals -= counts.reshape(n_images, n_clusters, 1) * centers.astype(np.float64)
    return residuals


def relative_error(result, reference: np.ndarray) -> float:
    """``max |result - reference| / max |reference|``, compared in float64."""
    difference = np.asarray(result, dtype=np.float64).reshape(reference.shape)
    difference -= reference
    scale = float(np.max(np.abs(reference), initial=0.0))
    return float(np.max(np.abs(difference), initial=0.0)) / max(scale, 1e-300)


# --------------------------------------------------------------------------
# The harness
# --------------------------------------------------------------------------


@contextlib.contextmanager
def limit_threads(threads: int | None) -> Iterator[None]:
    """Run the block with at most ``threads`` BLAS and OpenMP threads.

    threadpoolctl limits the pools of the libraries loaded so far (OpenBLAS,
    scikit-learn's OpenMP) and restores them on exit; no environment variable
    is set. vlad's own worker threads (``vlad.assign``'s ``n_jobs``, the numba
    aggregator, ``vlad.encode``) are not pools and keep their defaults, and
    JAX's XLA pool cannot be limited once it has started.

    Parameters
    ----------
    threads : int or None
        ``None`` leaves every pool as it is.
    """
    if threads is None:
        yield
        return
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=threads):
        yield


def time_calls(
    function: Callable[[], object],
    *,
    repeats: int = 5,
    max_seconds: float = MAX_SECONDS,
) -> list[float]:
    """Wall-clock seconds of consecutive calls of ``function``.

    The garbage collector is paused while timing. Repeating stops early, after
    at least ``MIN_REPEATS`` calls, once the calls have taken ``max_seconds``;
    it goes on beyond ``repeats`` calls while they have taken less than
    ``MIN_SECONDS`` (at most ``MAX_REPEATS`` calls).
    Each result is released only after its call has been timed.

    Returns
    -------
    times : list of float
    """
    times: list[float] = []
    collecting = gc.isenabled()
    gc.disable()
    try:
        while len(times) < repeats or (
            sum(times) < MIN_SECONDS and len(times) < MAX_REPEATS
        ):
            start = time.perf_counter()
            result = function()
            times.append(time.perf_counter() - start)
            del result
            if len(times) >= MIN_REPEATS and sum(times) > max_seconds:
                break
    finally:
        if collecting:
            gc.enable()
    return times


def peak_allocation(function: Callable[[], object]) -> int:
    """Peak bytes allocated during one call of ``function``, result included.

    Measured with :mod:`tracemalloc`, which sees NumPy's array allocations (and
    Python's) but not those of numba's or XLA's own allocators. What existed
    before the call (its input) is not counted.
    """
    tracing = tracemalloc.is_tracing()
    if not tracing:
        tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        result = function()
        peak = tracemalloc.get_traced_memory()[1] - before
        del result
    finally:
        if not tracing:
            tracemalloc.stop()
    return peak


@dataclasses.dataclass
class Measurement:
    """What one row of a table measured.

    Parameters
    ----------
    name : str
        The row's label, unique within its table.
    group : str
        ``"floor"``, ``"assign"``, ``"aggregate"``, ``"essay"``, ``"encode"``
        or ``"kernel"``.
    baseline : tuple of str
        Rows whose medians, summed, this row's median is compared with (a floor,
        the sum of two floors, or the bare kernels).
    times : list of float
        Seconds of each timed call; empty when not run.
    peak_bytes : int or None
        Peak allocation during one call (see :func:`peak_allocation`).
    output_bytes : int or None
        Size of the result.
    error : float or None
        :func:`relative_error` of the result against the float64 reference.
    skipped : str or None
        Why the row has no times.
    """

    name: str
    group: str
    baseline: tuple[str, ...] = ()
    times: list[float] = dataclasses.field(default_factory=list)
    peak_bytes: int | None = None
    output_bytes: int | None = None
    error: float | None = None
    skipped: str | None = None

    @property
    def median(self) -> float | None:
        """Median seconds, or None when not run."""
        return float(np.median(self.times)) if self.times else None

    @property
    def minimum(self) -> float | None:
        """Fastest call in seconds, or None when not run."""
        return min(self.times) if self.times else None

    def to_dict(self) -> dict:
        """A JSON-serialisable record, with the median and minimum."""
        record = dataclasses.asdict(self)
        record.update(median=self.median, minimum=self.minimum)
        return record


def measure(
    name: str,
    function: Callable[[], object],
    *,
    group: str,
    baseline: tuple[str, ...] = (),
    repeats: int = 5,
    threads: int | None = 1,
    memory: bool = True,
    reference: np.ndarray | None = None,
    max_seconds: float = MAX_SECONDS,
) -> Measurement:
    """Time one operation: a warm-up call, a traced call, then the timed calls.

    The warm-up compiles numba and JAX kernels, loads libraries and touches the
    input; its result is compared with ``reference``. Peak memory is taken in
    a separate call, because tracing slows allocations down. Everything runs
    under :func:`limit_threads`, entered again after the warm-up so that
    libraries it loaded are limited too.

    Parameters
    ----------
    name, group, baseline
        As in :class:`Measurement`.
    function : callable
        Takes no arguments and does the one operation being measured.
    repeats : int, default=5
        Timed calls (fewer if they exceed ``max_seconds``).
    threads : int or None, default=1
        Thread limit (see :func:`limit_threads`).
    memory : bool, default=True
        Whether to measure the peak allocation.
    reference : ndarray, optional
        The float64 result the output should match.
    max_seconds : float, default=MAX_SECONDS

    Returns
    -------
    Measurement
    """
    with limit_threads(threads):
        result = function()
    output_bytes = result.nbytes if isinstance(result, np.ndarray) else None
    error = None if reference is None else relative_error(result, reference)
    del result
    with limit_threads(threads):
        peak = peak_allocation(function) if memory else None
        times = time_calls(function, repeats=repeats, max_seconds=max_seconds)
    return Measurement(
        name,
        group,
        baseline,
        times=times,
        peak_bytes=peak,
        output_bytes=output_bytes,
        error=error,
    )


def _measure_or_record(name: str, function, *, skipped: str | None, **options):
    """:func:`measure`, or a row that says why it was skipped or how it failed."""
    group, baseline = options["group"], options.get("baseline", ())
    if skipped is not None:
        return Measurement(name, group, baseline, skipped=skipped)
    try:
        return measure(name, function, **options)
    except Exception as error:  # one failing method must not end a long run
        message = f"failed: {type(error).__name__}: {error}"
        return Measurement(name, group, baseline, skipped=message)


# --------------------------------------------------------------------------
# Tables
# --------------------------------------------------------------------------


@dataclasses.dataclass
class Table:
    """The rows of one benchmark, with the ratios between them.

    Parameters
    ----------
    key : str
        Short name (``"b"``, ``"single latency"``).
    title : str
    rows : list of Measurement
    notes : list of str
        Lines printed under the table.
    ratio_label : str
        Header of the column that divides each median by its baseline's.
    """

    key: str
    title: str
    rows: list[Measurement]
    notes: list[str] = dataclasses.field(default_factory=list)
    ratio_label: str = "x floor"

    def row(self, name: str) -> Measurement:
        """The row called ``name``."""
        for measurement in self.rows:
            if measurement.name == name:
                return measurement
        raise KeyError(f"no row {name!r} in table {self.key!r}")

    def baseline_seconds(self, measurement: Measurement) -> float | None:
        """Sum of the medians of ``measurement``'s baseline rows."""
        medians = [self.row(name).median for name in measurement.baseline]
        if not medians or None in medians:
            return None
        return float(sum(medians))

    def ratio(self, measurement: Measurement) -> float | None:
        """``measurement``'s median divided by its baseline's."""
        baseline = self.baseline_seconds(measurement)
        if measurement.median is None or not baseline:
            return None
        return measurement.median / baseline

    def essay_best(self) -> Measurement | None:
        """The essay method with the smallest median, if any ran."""
        ran = [m for m in self.rows if m.group == ESSAY and m.times]
        return min(ran, key=lambda m: m.median) if ran else None

    def speedup(self, measurement: Measurement) -> float | None:
        """The essay's fastest median over ``measurement``'s (end-to-end rows)."""
        best = self.essay_best()
        if best is None or measurement.group not in (ESSAY, ENCODE):
            return None
        if measurement.median is None:
            return None
        return best.median / measurement.median

    def to_dict(self) -> dict:
        """A JSON-serialisable record, ratios included."""
        rows = []
        for measurement in self.rows:
            record = measurement.to_dict()
            record.update(
                ratio=self.ratio(measurement), speedup=self.speedup(measurement)
            )
            rows.append(record)
        return {
            "key": self.key,
            "title": self.title,
            "ratio_label": self.ratio_label,
            "notes": self.notes,
            "rows": rows,
        }


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
    available aggregator, called directly from :data:`vlad.AGGREGATORS` with
    the labels (aggregation alone); the essay's four methods end to end; and
    :func:`vlad.encode` end to end with the essay's normalisation.

    Parameters
    ----------
    problem : Problem
    repeats : int, default=5
    threads : int or None, default=1
        See :func:`limit_threads`.
    slow : bool, default=False
        Also run ``masked`` and ``loop`` where they are slow.
    memory_limit : int, default=MEMORY_LIMIT_BYTES
        See :func:`skip_reason`.
    max_seconds : float, default=MAX_SECONDS
        See :func:`time_calls`.

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
            _measure_or_record(
                row,
                functools.partial(
                    AGGREGATORS[name], descriptors, labels, offsets, centers
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
            _measure_or_record(
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
    auto = choose_aggregator(descriptors.shape[0], *centers.shape)
    notes = [
        f"`aggregate auto` chose `{auto}`.",
        _settings_note(threads, repeats),
        COLUMNS_NOTE,
    ]
    return Table(
        workload.name, f"Workload {workload.name}: {workload.describe()}", rows, notes
    )


def _settings_note(threads: int | None, repeats: int) -> str:
    """The note that says how a table was measured."""
    limit = "no thread limit" if threads is None else f"{threads} thread(s)"
    return (
        f"{limit} for BLAS and OpenMP (vlad's own workers: every core); median "
        f"and min of up to {repeats} calls after a warm-up call."
    )


#: How to read the columns of a workload table.
COLUMNS_NOTE = (
    "Aggregators are timed alone (labels given); `vlad.assign`, the essay's "
    "methods and `vlad.encode` end to end (essay rows include "
    "`MiniBatchKMeans.predict`). x floor: median over the median of the "
    "relevant floor (assignment + aggregation for end-to-end rows). "
    "peak MiB: largest NumPy allocation during one call, output included, "
    "input not. rel. error: max |result - float64 reference| / max |reference|."
)


#: Scatter-adds a bare NumPy encoder of one image may use; the fastest counts.
SCATTER_KERNELS = ("np.add.at", "sort + np.add.reduceat", "one-hot @ x")


def _scatter_add_at(image, labels, centers):
    sums = np.zeros(centers.shape, dtype=image.dtype)
    np.add.at(sums, labels, image)
    sums -= np.bincount(labels, minlength=centers.shape[0])[:, None] * centers
    return sums


def _scatter_reduceat(image, labels, centers):
    order = np.argsort(labels, kind="stable")
    sorted_labels = labels[order]
    starts = np.flatnonzero(np.diff(sorted_labels, prepend=-1))
    sums = np.zeros(centers.shape, dtype=image.dtype)
    sums[sorted_labels[starts]] = np.add.reduceat(image[order], starts, axis=0)
    sums -= np.bincount(labels, minlength=centers.shape[0])[:, None] * centers
    return sums


def _scatter_one_hot(image, labels, centers):
    one_hot = labels == np.arange(centers.shape[0])[:, None]
    sums = one_hot.astype(image.dtype) @ image
    sums -= one_hot.sum(axis=1)[:, None] * centers
    return sums


def _signed_sqrt_l2(sums):
    vector = sums.ravel()
    vector = np.sign(vector) * np.sqrt(np.abs(vector))
    vector /= np.linalg.norm(vector)
    return vector


def benchmark_latency(
    problem: Problem,
    *,
    repeats: int = 5,
    threads: int | None = 1,
    max_seconds: float = MAX_SECONDS,
) -> Table:
    """``vlad.encode([x], codebook)`` against bare NumPy kernels for one image.

    The bare kernels are the matrix product ``x @ (-2 centers.T)``, the argmin
    of the distances ``|c|^2 - 2 x.c``, a scatter-add of the residuals (three
    variants; the fastest counts) and the signed square root with L2 norm,
    each timed alone on precomputed inputs. Their medians, summed, are the
    baseline of every row.

    Parameters
    ----------
    problem : Problem
        Its first image is used.
    repeats, threads, max_seconds
        As in :func:`benchmark_workload`.

    Returns
    -------
    Table
    """
    image = problem.sets[0]
    centers = problem.centers
    options = {"repeats": repeats, "threads": threads, "max_seconds": max_seconds}
    scaled_centers_t = np.ascontiguousarray(-2.0 * centers.T)
    squared_norms = np.einsum("kf,kf->k", centers, centers)
    products = image @ scaled_centers_t
    labels = np.argmin(products + squared_norms, axis=1)
    sums = _scatter_add_at(image, labels, centers)
    scatters = dict(
        zip(
            SCATTER_KERNELS,
            (_scatter_add_at, _scatter_reduceat, _scatter_one_hot),
            strict=True,
        )
    )
    kernel = functools.partial(measure, group=KERNEL, **options)
    rows = [
        kernel(
            "product x @ (-2 centers.T)",
            functools.partial(np.matmul, image, scaled_centers_t),
        ),
        kernel(
            "argmin of products + |c|^2",
            lambda: np.argmin(products + squared_norms, axis=1),
        ),
        *(
            kernel(
                f"scatter-add: {name}",
                functools.partial(function, image, labels, centers),
            )
            for name, function in scatters.items()
        ),
        kernel("signed sqrt + L2", functools.partial(_signed_sqrt_l2, sums)),
    ]
    fastest_scatter = min(
        (m for m in rows if m.name.startswith("scatter-add")), key=lambda m: m.median
    )
    bare = (rows[0].name, rows[1].name, fastest_scatter.name, rows[-1].name)
    for measurement in rows:
        measurement.baseline = bare
    rows.append(
        measure(
            "vlad.encode([x], codebook)",
            lambda: encode([image], centers, **ESSAY_NORMALIZATION),
            group=ENCODE,
            baseline=bare,
            reference=normalize(
                reference_residuals(
                    image,
                    problem.labels[: image.shape[0]],
                    problem.offsets[:2],
                    centers,
                ),
                **ESSAY_NORMALIZATION,
            ),
            **options,
        )
    )
    table = Table(
        "single latency",
        f"Single-image latency: {problem.workload.describe()}",
        rows,
        ratio_label="x bare",
    )
    total = table.baseline_seconds(rows[-1])
    table.notes = [
        f"bare NumPy kernels: {format_seconds(total)} = product + argmin + "
        f"{fastest_scatter.name} + signed sqrt + L2 (sum of medians); "
        "x bare divides each median by it.",
        _settings_note(threads, repeats),
    ]
    return table


# --------------------------------------------------------------------------
# The sweep over the number of descriptors
# --------------------------------------------------------------------------


@dataclasses.dataclass
class Sweep:
    """Aggregation time against the number of descriptors N.

    Parameters
    ----------
    rows : list of int
        N at each point.
    measurements : dict of str to list of Measurement
        Per method (the aggregation floor and each aggregator), one
        measurement per point.
    shape : str
        F, K and L of every point.
    notes : list of str
    """

    rows: list[int]
    measurements: dict[str, list[Measurement]]
    shape: str
    notes: list[str] = dataclasses.field(default_factory=list)

    def ns_per_descriptor(self, name: str) -> list[float | None]:
        """Median nanoseconds per descriptor of method ``name`` at each point."""
        return [
            None if m.median is None else m.median / n_rows * 1e9
            for m, n_rows in zip(self.measurements[name], self.rows, strict=True)
        ]

    def auto_over_best(self) -> list[float | None]:
        """At each point, ``auto``'s median over the best other aggregator's."""
        ratios: list[float | None] = []
        for point in range(len(self.rows)):
            auto = self.measurements.get("auto", [None] * len(self.rows))[point]
            others = [
                m[point].median
                for name, m in self.measurements.items()
                if name not in ("auto", AGGREGATION_FLOOR) and m[point].times
            ]
            if auto is None or auto.median is None or not others:
                ratios.append(None)
            else:
                ratios.append(auto.median / min(others))
        return ratios

    def to_dict(self) -> dict:
        """A JSON-serialisable record."""
        return {
            "rows": self.rows,
            "shape": self.shape,
            "notes": self.notes,
            "ns_per_descriptor": {
                name: self.ns_per_descriptor(name) for name in self.measurements
            },
            "auto_over_best": self.auto_over_best(),
            "measurements": {
                name: [m.to_dict() for m in points]
                for name, points in self.measurements.items()
            },
        }


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
                _measure_or_record(
                    name,
                    functools.partial(AGGREGATORS[name], *arguments, problem.centers),
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
        f"{shape}, float32 SIFT-like; median ns per descriptor of the "
        "aggregation alone. `auto` runs the aggregator it chooses, so auto / best "
        "is its dispatch overhead plus timing noise.",
        _settings_note(threads, repeats),
    ]
    rows = [count * n_descriptors for count in n_images]
    return Sweep(rows, measurements, shape, notes)


def _matplotlib_figure():
    """matplotlib's ``Figure`` class, or an ImportError saying how to install it."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise ImportError(
            "plotting the sweep requires matplotlib; install it with: "
            "pip install 'vlad[bench]'"
        ) from None
    return Figure


def plot_sweep(sweep: Sweep, path: str | os.PathLike) -> None:
    """Write the sweep as a PNG: ns per descriptor against N, log-log.

    Requires matplotlib (``pip install 'vlad[bench]'``); uses its object API,
    so no global backend is set.
    """
    Figure = _matplotlib_figure()
    figure = Figure(figsize=(8, 5), layout="constrained")
    axes = figure.subplots()
    for name in sweep.measurements:
        values = sweep.ns_per_descriptor(name)
        points = [(n, v) for n, v in zip(sweep.rows, values, strict=True) if v]
        if not points:
            continue
        floor = name == AGGREGATION_FLOOR
        axes.plot(
            *zip(*points, strict=True),
            linestyle="--" if floor else "-",
            color="black" if floor else None,
            marker=None if floor else "o",
            label="floor: np.add.reduce" if floor else name,
        )
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlabel(f"N, descriptors ({sweep.shape})")
    axes.set_ylabel("ns per descriptor (median)")
    axes.set_title("VLAD aggregation cost against N")
    axes.grid(True, which="both", alpha=0.3)
    axes.legend(fontsize="small", loc="center left", bbox_to_anchor=(1.01, 0.5))
    with atomic_write(path) as handle:
        figure.savefig(handle, format="png", dpi=120)


# --------------------------------------------------------------------------
# Threads
# --------------------------------------------------------------------------


def benchmark_threads(
    problem: Problem,
    *,
    thread_counts: Sequence[int] = (1, 2),
    repeats: int = 5,
    max_seconds: float = MAX_SECONDS,
) -> Table:
    """Time the product, assignment and encoding under each BLAS thread limit.

    ``vlad.assign`` runs both with one worker (``n_jobs=1``, so the BLAS limit
    decides) and with one worker per thread count; ``vlad.encode`` uses every
    core for its own workers whatever the BLAS limit. Each row is compared
    with the same operation's first row.

    Parameters
    ----------
    problem : Problem
    thread_counts : sequence of int, default=(1, 2)
    repeats, max_seconds
        As in :func:`benchmark_workload`.

    Returns
    -------
    Table
    """
    descriptors, centers = problem.descriptors, problem.centers
    product = functools.partial(np.matmul, descriptors, centers.T)
    encoded = functools.partial(encode, problem.sets, centers, **ESSAY_NORMALIZATION)

    def assigned(n_jobs: int):
        return functools.partial(assign, descriptors, centers, n_jobs=n_jobs)

    def blas(count: int) -> str:
        return f"BLAS {count} thread{'s' if count > 1 else ''}"

    plan = [
        *((ASSIGNMENT_FLOOR, blas(n), n, product) for n in thread_counts),
        *(
            ("vlad.assign", f"n_jobs=1, {blas(n)}", n, assigned(1))
            for n in thread_counts
        ),
        *(
            ("vlad.assign", f"n_jobs={n}, BLAS 1 thread each", 1, assigned(n))
            for n in thread_counts
            if n > 1
        ),
        *((ENCODE_ROW, blas(n), n, encoded) for n in thread_counts),
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
        "BLAS limited inside the process with threadpoolctl; median and min of up "
        f"to {repeats} calls. vlad's own worker threads: `n_jobs` where given, "
        "otherwise every available core.",
    ]
    return Table(
        f"threads {problem.workload.name}",
        f"BLAS threads and vlad's workers: workload {problem.workload.name}",
        rows,
        notes,
        ratio_label="x first row",
    )


# --------------------------------------------------------------------------
# Targets
# --------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class TargetCheck:
    """One of the issue's targets, as measured.

    Parameters
    ----------
    number : int
        The target's number in issue 5.
    target : str
        What is required.
    measured : str
        The measured quantities behind the ratio.
    ratio : float or None
        The quantity compared with ``limit``; None when not measured.
    limit : float
    at_least : bool, default=False
        Whether ``ratio`` must be at least (instead of at most) ``limit``.
    """

    number: int
    target: str
    measured: str
    ratio: float | None
    limit: float
    at_least: bool = False

    @property
    def passed(self) -> bool | None:
        """Whether the target is met; None when not measured."""
        if self.ratio is None:
            return None
        return self.ratio >= self.limit if self.at_least else self.ratio <= self.limit


def check_targets(
    tables: dict[str, Table],
    sweep: Sweep | None = None,
    *,
    memory_budget: int = 256 * MIB,
) -> list[TargetCheck]:
    """The issue's targets 1-7 that ``tables`` and ``sweep`` measured.

    Parameters
    ----------
    tables : dict of str to Table
        By key: ``"a"``, ``"b"``, ``"c"``, ``"single latency"``; missing ones
        are left out.
    sweep : Sweep, optional
    memory_budget : int, default=256 MiB
        Allowed peak allocation beyond the output (target 5).

    Returns
    -------
    list of TargetCheck
    """
    checks: list[TargetCheck] = []
    for key, limit in (("b", 1.3), ("c", 1.6)):
        if key in tables:
            checks.append(
                _ratio_check(
                    1, tables[key], "aggregate auto", limit, "aggregation floor"
                )
            )
    for key in ("b", "c"):
        if key in tables:
            checks.append(
                _ratio_check(
                    2, tables[key], ENCODE_ROW, 1.3, "assignment + aggregation floors"
                )
            )
    for key in ("a", "b"):
        if key in tables:
            table = tables[key]
            encoded, best = table.row(ENCODE_ROW), table.essay_best()
            measured = (
                "essay not run"
                if best is None
                else (
                    f"{best.name} {format_seconds(best.median)} / encode "
                    f"{format_seconds(encoded.median)}"
                )
            )
            checks.append(
                TargetCheck(
                    3,
                    f"{key}: encode >= 5x faster than the essay's fastest",
                    measured,
                    table.speedup(encoded),
                    5.0,
                    at_least=True,
                )
            )
    if "single latency" in tables:
        checks.append(
            _ratio_check(
                4,
                tables["single latency"],
                "vlad.encode([x], codebook)",
                2.0,
                "bare NumPy kernels",
            )
        )
    if "b" in tables:
        for name in (ENCODE_ROW, "aggregate masked", "aggregate ragged-cumsum"):
            row = tables["b"].row(name)
            output = row.output_bytes
            extra = None if row.peak_bytes is None else row.peak_bytes - output
            checks.append(
                TargetCheck(
                    5,
                    f"b: {name} holds <= {memory_budget / MIB:.0f} MiB beyond "
                    "input and output",
                    row.skipped
                    or f"{_mib(extra)} MiB beyond a {_mib(output)} MiB output",
                    None if extra is None else extra / memory_budget,
                    1.0,
                )
            )
    if sweep is not None and "auto" in sweep.measurements:
        ratios = [r for r in sweep.auto_over_best() if r is not None]
        checks.append(
            TargetCheck(
                6,
                "sweep: auto within 10% of the best aggregator at every N",
                "auto / best per N: "
                + ", ".join(
                    f"N={n:,}: {r:.2f}"
                    for n, r in zip(sweep.rows, sweep.auto_over_best(), strict=True)
                    if r is not None
                ),
                max(ratios) if ratios else None,
                1.1,
            )
        )
    for key, table in tables.items():
        errors = [
            (m.error, m.name)
            for m in table.rows
            if m.group == AGGREGATE and m.error is not None
        ]
        if key in WORKLOADS and WORKLOADS[key].dtype == "float32" and errors:
            error, name = max(errors)
            checks.append(
                TargetCheck(
                    7,
                    f"{key}: every aggregator's float32 relative error <= 1e-5",
                    f"worst: {name} {error:.1e}",
                    error / 1e-5,
                    1.0,
                )
            )
    return checks


def _ratio_check(
    number: int, table: Table, name: str, limit: float, baseline: str
) -> TargetCheck:
    row = table.row(name)
    reference = table.baseline_seconds(row)
    return TargetCheck(
        number,
        f"{table.key}: {name} <= {limit}x {baseline}",
        row.skipped or f"{format_seconds(row.median)} / {format_seconds(reference)}",
        table.ratio(row),
        limit,
    )


# --------------------------------------------------------------------------
# The machine
# --------------------------------------------------------------------------


def machine_info() -> dict:
    """CPU, core counts, library versions and BLAS/OpenMP pools of this process.

    Returns
    -------
    dict
        JSON-serialisable.
    """
    # Load the libraries the benchmarks use, so that their pools are listed.
    import scipy.sparse  # noqa: F401
    import sklearn.cluster  # noqa: F401
    from threadpoolctl import threadpool_info

    versions = {}
    for package in ("vlad", "numpy", "scipy", "scikit-learn", "numba", "jax", "jaxlib"):
        try:
            versions[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            versions[package] = None
    pools = [
        f"{pool.get('internal_api')} {pool.get('version')} "
        f"({pool.get('threading_layer', pool.get('user_api'))}, "
        f"{pool.get('num_threads')} threads, {os.path.basename(pool['filepath'])})"
        for pool in threadpool_info()
    ]
    affinity = getattr(os, "sched_getaffinity", None)
    return {
        "cpu": _cpu_model(),
        "logical_cpus": os.cpu_count(),
        "usable_cpus": len(affinity(0)) if affinity else os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "versions": versions,
        "thread_pools": pools,
    }


def _cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo, or what platform knows."""
    with contextlib.suppress(OSError):
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


# --------------------------------------------------------------------------
# Formatting
# --------------------------------------------------------------------------


def format_seconds(seconds: float | None) -> str:
    """A duration with three significant digits and a unit (s, ms, us)."""
    if seconds is None:
        return ""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def _format_ratio(ratio: float | None) -> str:
    if ratio is None:
        return ""
    return (
        f"{ratio:.2f}"
        if ratio < 10
        else f"{ratio:.3g}"
        if ratio < 1000
        else f"{ratio:.0f}"
    )


def _mib(size: int | None) -> str:
    return "" if size is None else f"{size / MIB:.1f}"


def markdown_table(
    header: Sequence[str], rows: Sequence[Sequence[str]], align: str
) -> str:
    """A Markdown table; ``align`` has one ``l`` or ``r`` per column."""
    widths = [
        max(len(header[column]), *(len(row[column]) for row in rows))
        for column in range(len(header))
    ]

    def line(cells):
        padded = (
            cell.ljust(width) if side == "l" else cell.rjust(width)
            for cell, width, side in zip(cells, widths, align, strict=True)
        )
        return "| " + " | ".join(padded) + " |"

    rule = (
        "|"
        + "|".join(
            "-" * (width + 1) + ":" if side == "r" else "-" * (width + 2)
            for width, side in zip(widths, align, strict=True)
        )
        + "|"
    )
    return "\n".join([line(header), rule, *(line(row) for row in rows)])


def format_table(table: Table) -> str:
    """A table as Markdown: heading, one line per row, then its notes.

    Columns no row fills (peak memory of a table measured without it, the
    essay comparison of a table without essay rows) are left out.
    """
    header = (
        "method",
        "median",
        "min",
        table.ratio_label,
        "speed-up vs essay best",
        "peak MiB",
        "rel. error",
    )
    rows, reasons = [], []
    for m in table.rows:
        if m.skipped is not None:
            status = m.skipped.split(": ", 1)[0]
            rows.append((m.name, status, "", "", "", "", ""))
            reasons.append(f"{m.name}: {m.skipped}.")
            continue
        speedup = table.speedup(m)
        rows.append(
            (
                m.name,
                format_seconds(m.median),
                format_seconds(m.minimum),
                _format_ratio(table.ratio(m)),
                "" if speedup is None else f"{_format_ratio(speedup)}x",
                _mib(m.peak_bytes),
                "" if m.error is None else f"{m.error:.1e}",
            )
        )
    kept = [
        column
        for column in range(len(header))
        if column < 3 or any(row[column] for row in rows)
    ]
    markdown = markdown_table(
        [header[column] for column in kept],
        [[row[column] for column in kept] for row in rows],
        "l" + "r" * (len(kept) - 1),
    )
    notes = "\n".join(f"- {note}" for note in [*reasons, *table.notes])
    return f"### {table.title}\n\n{markdown}\n\n{notes}\n"


def format_sweep(sweep: Sweep) -> str:
    """The sweep as Markdown: ns per descriptor, one column per N."""
    header = ("method", *(f"N={n:,}" for n in sweep.rows))
    rows = []
    for name, points in sweep.measurements.items():
        cells = [
            ("slow" if m.skipped.startswith("skipped") else "failed")
            if m.skipped
            else f"{value:.3g}"
            for m, value in zip(points, sweep.ns_per_descriptor(name), strict=True)
        ]
        rows.append((name, *cells))
    rows.append(("auto / best", *(_format_ratio(r) for r in sweep.auto_over_best())))
    notes = "\n".join(f"- {note}" for note in sweep.notes)
    table = markdown_table(header, rows, "l" + "r" * len(sweep.rows))
    return f"### Sweep: ns per descriptor against N\n\n{table}\n\n{notes}\n"


def format_targets(checks: Sequence[TargetCheck]) -> str:
    """The targets as Markdown: target, measured, ratio, pass/fail."""
    header = ("#", "target", "measured", "ratio", "limit", "result")
    rows = [
        (
            str(check.number),
            check.target,
            check.measured,
            _format_ratio(check.ratio),
            (">= " if check.at_least else "<= ") + f"{check.limit:g}",
            {True: "pass", False: "FAIL", None: "not measured"}[check.passed],
        )
        for check in checks
    ]
    return f"### Targets (issue 5)\n\n{markdown_table(header, rows, 'rllrrl')}\n"


def format_machine(info: dict) -> str:
    """The machine as a Markdown list."""
    versions = ", ".join(
        f"{package} {version}"
        for package, version in info["versions"].items()
        if version
    )
    pools = "; ".join(info["thread_pools"]) or "none found"
    return (
        "### Machine\n\n"
        f"- CPU: {info['cpu']} ({info['logical_cpus']} logical CPUs, "
        f"{info['usable_cpus']} usable)\n"
        f"- {info['platform']}, Python {info['python']}\n"
        f"- {versions}\n"
        f"- thread pools: {pools}\n"
    )


# --------------------------------------------------------------------------
# Everything
# --------------------------------------------------------------------------


@dataclasses.dataclass
class Report:
    """Everything one :func:`run_benchmarks` call measured."""

    machine: dict
    settings: dict
    tables: dict[str, Table] = dataclasses.field(default_factory=dict)
    sweep: Sweep | None = None
    targets: list[TargetCheck] = dataclasses.field(default_factory=list)

    def to_dict(self) -> dict:
        """A JSON-serialisable record of the whole run."""
        return {
            "machine": self.machine,
            "settings": self.settings,
            "tables": {key: table.to_dict() for key, table in self.tables.items()},
            "sweep": None if self.sweep is None else self.sweep.to_dict(),
            "targets": [
                {**dataclasses.asdict(check), "passed": check.passed}
                for check in self.targets
            ],
        }


def parse_sizes(sizes: str | Sequence[str]) -> list[str]:
    """Expand ``"all"`` and check the names against :data:`SIZES`.

    Raises
    ------
    ValueError
        An unknown size.
    """
    names = [sizes] if isinstance(sizes, str) else list(sizes)
    expanded: list[str] = []
    for name in names:
        if name == "all":
            expanded += [size for size in SIZES if size not in expanded]
        elif name in SIZES:
            if name not in expanded:
                expanded.append(name)
        else:
            raise ValueError(
                f"Unknown size {name!r}; expected one of {[*SIZES, 'all']}"
            )
    return expanded


def run_benchmarks(
    sizes: str | Sequence[str] = "all",
    *,
    repeats: int = 5,
    threads: int | None = 1,
    slow: bool = False,
    memory_limit: int = MEMORY_LIMIT_BYTES,
    max_seconds: float = MAX_SECONDS,
    plot: str | os.PathLike | None = None,
    echo: Callable[[str], None] = print,
) -> Report:
    """Run the named workloads and print each table as soon as it is measured.

    ``single`` adds the latency table, ``b`` the thread study (1 and 2
    threads), ``sweep`` the sweep (and its plot when ``plot`` is given); the
    targets that the run measured come last.

    Parameters
    ----------
    sizes : str or sequence of str, default="all"
        Names from :data:`SIZES`, or ``"all"``.
    repeats, threads, slow, memory_limit, max_seconds
        As in :func:`benchmark_workload`.
    plot : path-like, optional
        Where to write the sweep's PNG.
    echo : callable, default=print
        Receives each Markdown block.

    Returns
    -------
    Report
    """
    names = parse_sizes(sizes)
    if plot is not None and "sweep" in names:
        _matplotlib_figure()  # fail now, not after the sweep has run
    options = {"repeats": repeats, "threads": threads, "max_seconds": max_seconds}
    report = Report(
        machine_info(),
        {
            "sizes": names,
            "repeats": repeats,
            "threads": threads,
            "slow": slow,
            "memory_limit": memory_limit,
            "max_seconds": max_seconds,
        },
    )
    echo(format_machine(report.machine))
    for name in names:
        if name == "sweep":
            report.sweep = benchmark_sweep(slow=slow, **options)
            echo(format_sweep(report.sweep))
            if plot is not None:
                plot_sweep(report.sweep, plot)
                echo(f"Sweep plot written to {plot}\n")
            continue
        problem = make_problem(WORKLOADS[name], threads=threads)
        table = benchmark_workload(
            problem, slow=slow, memory_limit=memory_limit, **options
        )
        report.tables[name] = table
        echo(format_table(table))
        if name == "single":
            latency = benchmark_latency(problem, **options)
            report.tables[latency.key] = latency
            echo(format_table(latency))
        if name == "b":
            study = benchmark_threads(problem, repeats=repeats, max_seconds=max_seconds)
            report.tables[study.key] = study
            echo(format_table(study))
        del problem
    report.targets = check_targets(report.tables, report.sweep)
    echo(format_targets(report.targets))
    return report


def write_json(report: Report, path: str | os.PathLike) -> None:
    """Write ``report.to_dict()`` to ``path`` as JSON, atomically."""
    text = json.dumps(report.to_dict(), indent=1, allow_nan=False)
    with atomic_write(path) as handle:
        handle.write(text.encode("utf-8"))
