"""Threads: the n_jobs rule, balanced ranges, and thread limits that overlapping
calls never leave behind."""

from __future__ import annotations

import functools
import threading
import time

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from photos import DATA
from threadpoolctl import ThreadpoolController, threadpool_limits

import vlad
from vlad.core._parallel import (
    SharedThreadLimit,
    available_cores,
    balanced_ranges,
    resolve_n_jobs,
    run_ranges,
    workers_for,
)


@pytest.mark.parametrize("n_jobs", [None, -1])
def test_none_and_minus_one_mean_every_core(n_jobs):
    assert resolve_n_jobs(n_jobs) == available_cores() >= 1


@pytest.mark.parametrize(
    ("n_jobs", "expected"), [(1, 1), (3, 3), (np.int64(2), 2), (10**6, 10**6)]
)
def test_positive_integers_are_thread_counts_up_to_the_cores(n_jobs, expected):
    assert resolve_n_jobs(n_jobs) == min(expected, available_cores())


def test_a_million_jobs_start_no_more_threads_than_cores():
    """assign(n_jobs=10**6) on work large enough to share out: the threads
    alive meanwhile, sampled from another thread, never exceed the cores
    (plus this one and the sampler)."""
    rng = np.random.default_rng(0)
    descriptors = rng.standard_normal((40_000, 64), dtype=np.float32)
    centers = rng.standard_normal((64, 64), dtype=np.float32)
    baseline = threading.active_count()
    most, done = [baseline], threading.Event()

    def sample() -> None:
        while not done.is_set():
            most.append(threading.active_count())
            time.sleep(0.0005)

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        labels = vlad.assign(descriptors, centers, n_jobs=10**6)
    finally:
        done.set()
        sampler.join()
    np.testing.assert_array_equal(labels, vlad.assign(descriptors, centers, n_jobs=1))
    assert max(most) - baseline - 1 <= available_cores()


@pytest.mark.parametrize(
    ("n_jobs", "error"),
    [(0, ValueError), (-2, ValueError), (1.5, TypeError), (True, TypeError)],
)
def test_anything_else_is_refused_with_the_rule(n_jobs, error):
    with pytest.raises(error, match=r"n_jobs must be None, -1 \(every core\)"):
        resolve_n_jobs(n_jobs)


def test_small_work_stays_on_one_thread():
    assert workers_for(10, 8) == 1
    assert workers_for(1 << 30, 8) == 8


@given(
    st.lists(st.integers(0, 50), min_size=1, max_size=40),
    st.integers(1, 10),
)
def test_balanced_ranges_cover_every_item_once_in_order(weights, n_parts):
    cumsum = np.concatenate([[0], np.cumsum(weights)])
    ranges = balanced_ranges(cumsum, n_parts)
    assert 1 <= len(ranges) <= n_parts
    assert ranges[0][0] == 0 and ranges[-1][1] == len(weights)
    for (_, stop), (start, _) in zip(ranges[:-1], ranges[1:], strict=True):
        assert stop == start
    assert all(start < stop for start, stop in ranges)


@pytest.mark.parametrize("n_workers", [1, 2, 4])
def test_run_ranges_calls_every_range_once(n_workers):
    seen = []
    lock = threading.Lock()

    def record(start, stop):
        with lock:
            seen.append((start, stop))

    ranges = [(0, 3), (3, 5), (5, 9), (9, 10)]
    run_ranges(record, ranges, n_workers)
    assert sorted(seen) == ranges


@pytest.mark.parametrize("n_workers", [1, 2])
@pytest.mark.parametrize("limit_blas", [True, False])
def test_run_ranges_keeps_blas_to_one_thread_when_asked(n_workers, limit_blas):
    """BLAS is limited inside (even for one worker), and restored after."""
    seen = []

    def record(start, stop):
        seen.append(_blas_threads(process_wide=True))

    with threadpool_limits(limits=2, user_api="blas"):
        before = _blas_threads(process_wide=True)
        run_ranges(record, [(0, 1), (1, 2)], n_workers, limit_blas=limit_blas)
        assert _blas_threads(process_wide=True) == before
    assert seen == [[1 if limit_blas else 2] * len(before)] * 2


@pytest.mark.parametrize(
    ("aggregator", "kernel"),
    [("auto", "vlad.backends.numba._fused.fused_residuals"),
     ("sparse", "vlad.core._assignment._assign_rows")],
)  # fmt: skip
def test_an_input_too_small_to_share_out_runs_blas_on_one_thread(
    monkeypatch, aggregator, kernel
):
    """One image with the default n_jobs: BLAS's own threads would cost more
    than the whole product (spin-waiting), so the one worker has one BLAS
    thread, as with n_jobs=1; the setting is restored after."""
    sets = vlad.datasets.make_descriptor_sets(1, 2000, 128, seed=0)
    centers = sets.descriptors[::31][:64]
    assert sets.descriptors.size * 64 < vlad.core._parallel.PARALLEL_MIN_WORK
    seen = []
    module, name = kernel.rsplit(".", 1)
    original = getattr(__import__(module, fromlist=[name]), name)

    def recording(*args, **kwargs):
        seen.append(_blas_threads(process_wide=True))
        return original(*args, **kwargs)

    expected = vlad.encode(sets, centers, aggregator=aggregator, n_jobs=1)
    monkeypatch.setattr(kernel, recording)
    with threadpool_limits(limits=2, user_api="blas"):
        before = _blas_threads(process_wide=True)
        vectors = vlad.encode(sets, centers, aggregator=aggregator)
        assert _blas_threads(process_wide=True) == before
    assert seen and all(threads == [1] * len(before) for threads in seen)
    np.testing.assert_allclose(vectors, expected, rtol=1e-5, atol=1e-6)


def test_run_ranges_raises_what_a_worker_raises():
    def fail(start, stop):
        if start == 3:
            raise ValueError("bad range")

    with pytest.raises(ValueError, match="bad range"):
        run_ranges(fail, [(0, 3), (3, 5)], 2)


def _counting_setting():
    """A setting of 8 threads that a SharedThreadLimit lowers to 1, and how
    often it was lowered."""
    state = {"threads": 8, "lowered": 0}

    def lower():
        previous = state["threads"]
        state["threads"] = 1
        state["lowered"] += 1
        return lambda: state.update(threads=previous)

    return state, SharedThreadLimit(lower)


@pytest.mark.parametrize("first_to_leave", ["first", "second"])
def test_overlapping_holders_restore_the_setting_once_the_last_leaves(
    first_to_leave,
):
    """Two threads hold the limit at once and leave in either order."""
    state, limit = _counting_setting()
    entered = [threading.Event(), threading.Event()]
    leave = [threading.Event(), threading.Event()]
    during = []

    def hold(index):
        with limit.held():
            entered[index].set()
            leave[index].wait(5)
            during.append(state["threads"])

    threads = [threading.Thread(target=hold, args=(i,)) for i in (0, 1)]
    for thread in threads:
        thread.start()
    for event in entered:
        assert event.wait(5)
    order = (0, 1) if first_to_leave == "first" else (1, 0)
    leave[order[0]].set()
    threads[order[0]].join(5)
    assert state["threads"] == 1, "the limit ended while a holder remained"
    leave[order[1]].set()
    threads[order[1]].join(5)
    assert during == [1, 1]
    assert state["threads"] == 8
    assert state["lowered"] == 1


def test_a_failing_block_still_restores_the_setting():
    state, limit = _counting_setting()
    with pytest.raises(RuntimeError), limit.held():
        raise RuntimeError("inside")
    assert state["threads"] == 8
    with limit.held():
        assert state["threads"] == 1
    assert state["lowered"] == 2


def _blas_threads(process_wide: bool = False) -> list[int]:
    """Threads of each loaded BLAS; with ``process_wide``, only those whose
    setting is the process's (an OpenMP BLAS, such as the one faiss loads,
    keeps a setting per thread, so a worker thread sees its own default)."""
    return [
        info["num_threads"]
        for info in ThreadpoolController().info()
        if info["user_api"] == "blas"
        and not (process_wide and info.get("threading_layer") == "openmp")
    ]


def _overlapping(calls, stagger: float = 0.0):
    """Run the calls at once, one thread each, starting ``stagger`` seconds
    apart; return their results."""
    results = [None] * len(calls)
    errors = []

    def run(index, call):
        try:
            results[index] = call()
        except BaseException as error:  # reported below
            errors.append(error)

    threads = [
        threading.Thread(target=run, args=(index, call))
        for index, call in enumerate(calls)
    ]
    for thread in threads:
        thread.start()
        time.sleep(stagger)
    for thread in threads:
        thread.join(120)
    assert not errors, errors
    return results


# The fused path in the default run; the staged one with the slow tests.
@pytest.mark.parametrize(
    "path", ["fused", pytest.param("staged", marks=pytest.mark.slow)]
)
def test_overlapping_encodes_leave_blas_as_it_was_and_agree(path):
    """Two encode calls at once, each large enough to run its own threads: the
    one that starts first (a few milliseconds earlier) ends first or last."""
    small = vlad.datasets.make_descriptor_sets(8, 2100, 128, seed=0)
    large = vlad.datasets.make_descriptor_sets(16, 4200, 128, seed=1)
    # Any 64 centres do: what is checked is the threads, not the codebook.
    codebook = vlad.Codebook(small.descriptors[:: len(small.descriptors) // 64][:64])
    assert small.descriptors.size * 64 >= vlad.core._parallel.PARALLEL_MIN_WORK
    aggregator = {"fused": "auto", "staged": "sparse"}[path]
    calls = {"small": small, "large": large}
    expected = {
        name: vlad.encode(sets, codebook, aggregator=aggregator, n_jobs=1)
        for name, sets in calls.items()
    }
    pairs = [("small", "large"), ("large", "small")]
    with threadpool_limits(limits=2, user_api="blas"):
        before = _blas_threads()
        for pair in pairs:
            results = _overlapping(
                [
                    functools.partial(
                        vlad.encode,
                        calls[name],
                        codebook,
                        aggregator=aggregator,
                        n_jobs=2,
                    )  # fmt: skip
                    for name in pair
                ],
                stagger=0.003,
            )
            assert _blas_threads() == before, f"BLAS threads changed by {pair}"
            for name, result in zip(pair, results, strict=True):
                np.testing.assert_array_equal(result, expected[name])


def test_overlapping_image_batches_leave_opencv_as_it_was_and_agree():
    """Two batches at once: the first, of three images, starts a little earlier
    and ends first; the second, of all eight, ends last."""
    import cv2

    # Photos at 256 pixels, as FAST_OPTIONS; the second batch starts 5 ms
    # after the first, well within its run.
    codebook, _ = vlad.fit_codebook_to_images(
        DATA, 8, descriptor_options={"max_keypoints": 200, "max_side": 256}, n_jobs=1
    )
    few = [str(image.path) for image in vlad.find_images(DATA)[:3]]
    expected_all = vlad.encode_images(DATA, codebook, n_jobs=1).vectors
    expected_few = vlad.encode_images(few, codebook, n_jobs=1).vectors
    previous = cv2.getNumThreads()
    cv2.setNumThreads(2)
    try:
        with threadpool_limits(limits=2, user_api="blas"):
            blas_before = _blas_threads()
            first, second = _overlapping(
                [
                    lambda: vlad.encode_images(few, codebook, n_jobs=2),
                    lambda: vlad.encode_images(DATA, codebook, n_jobs=2),
                ],
                stagger=0.005,
            )
            assert _blas_threads() == blas_before
        assert cv2.getNumThreads() == 2
    finally:
        cv2.setNumThreads(previous)
    np.testing.assert_array_equal(first.vectors, expected_few)
    np.testing.assert_array_equal(second.vectors, expected_all)
