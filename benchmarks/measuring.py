"""The measuring instrument: wall-clock times, peak allocation, thread limits.

:func:`measure` times one operation the same way everywhere: a warm-up call
(whose result is compared with a float64 reference, :func:`relative_error`),
a call traced for its peak allocation (:func:`peak_allocation`), then the
timed calls (:func:`time_calls`), all under a BLAS/OpenMP thread limit
(:func:`limit_threads`). The result is a :class:`Measurement`, one row of a
table.

threadpoolctl (installed with scikit-learn) is imported where it is used.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import os
import time
import tracemalloc
from collections.abc import Callable, Iterator

import numpy as np

__all__ = [
    "timed",
    "usable_cpus",
    "MAX_REPEATS",
    "MAX_SECONDS",
    "MIN_REPEATS",
    "MIN_SECONDS",
    "Measurement",
    "limit_threads",
    "measure",
    "measure_or_record",
    "peak_allocation",
    "relative_error",
    "time_calls",
]

#: A measurement stops repeating once its timed calls have taken this long
#: (after at least ``MIN_REPEATS`` calls).
MAX_SECONDS = 20.0
MIN_REPEATS = 3
#: Fast operations repeat beyond ``repeats`` until their calls have taken this
#: long (as timeit's autorange does), up to ``MAX_REPEATS`` calls: a median of
#: five sub-millisecond calls is mostly scheduler noise on a shared machine.
MIN_SECONDS = 0.25
MAX_REPEATS = 1000


def timed(function: Callable[[], object]) -> tuple[object, float, float]:
    """``function()``, its wall-clock and CPU seconds (this process's
    threads), measured once."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = function()
    return result, time.perf_counter() - wall, time.process_time() - cpu


def usable_cpus() -> int:
    """Cores this process may run on (its CPU affinity, where the system
    reports it)."""
    affinity = getattr(os, "sched_getaffinity", None)
    return max(1, len(affinity(0)) if affinity else os.cpu_count() or 1)


def relative_error(result, reference: np.ndarray) -> float:
    """``max |result - reference| / max |reference|``, compared in float64."""
    difference = np.asarray(result, dtype=np.float64).reshape(reference.shape)
    difference -= reference
    scale = float(np.max(np.abs(reference), initial=0.0))
    return float(np.max(np.abs(difference), initial=0.0)) / max(scale, 1e-300)


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

    @classmethod
    def from_dict(cls, record: dict) -> Measurement:
        """The measurement that :meth:`to_dict` recorded (read back from JSON)."""
        fields = {field.name for field in dataclasses.fields(cls)}
        values = {key: value for key, value in record.items() if key in fields}
        values["baseline"] = tuple(values.get("baseline", ()))
        return cls(**values)


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


def measure_or_record(name: str, function, *, skipped: str | None, **options):
    """:func:`measure`, or a row that says why it was skipped or how it failed."""
    group, baseline = options["group"], options.get("baseline", ())
    if skipped is not None:
        return Measurement(name, group, baseline, skipped=skipped)
    try:
        return measure(name, function, **options)
    except Exception as error:  # one failing method must not end a long run
        message = f"failed: {type(error).__name__}: {error}"
        return Measurement(name, group, baseline, skipped=message)
