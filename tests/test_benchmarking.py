"""Tests of the benchmark harness, at tiny sizes (no speed is asserted here)."""

import importlib.util
import time

import numpy as np
import pytest
from numpy.testing import assert_allclose

import vlad
from benchmarks import essay, measuring, report, suites, tables, targets, workloads
from benchmarks.essay import ESSAY_METHODS
from benchmarks.latency import SCATTER_KERNELS, benchmark_latency
from benchmarks.measuring import Measurement
from benchmarks.tables import AGGREGATION_FLOOR, ASSIGNMENT_FLOOR, ENCODE_ROW, Table
from benchmarks.workloads import Workload

#: The benchmarks' own tests: a CI step of their own, not the default run.
pytestmark = pytest.mark.benchmarks

TINY = {
    "float64": Workload("tiny64", 5, 30, 6, 3, dtype="float64", kind="gaussian"),
    "float32": Workload("tiny32", 4, 40, 8, 4),
}
TINY_SINGLE = Workload("single", 1, 60, 8, 4)


@pytest.fixture(autouse=True, scope="module")
def exact_repeats():
    """Tiny operations repeat exactly ``repeats`` times here (no autorange)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(measuring, "MIN_SECONDS", 0.0)
        yield


@pytest.fixture(scope="module", params=sorted(TINY))
def problem(request):
    return workloads.make_problem(TINY[request.param])


@pytest.fixture(scope="module")
def table(problem):
    return suites.benchmark_workload(problem, repeats=2)


@pytest.fixture(scope="module")
def single():
    return workloads.make_problem(TINY_SINGLE)


def row_names(workload_table):
    return [m.name for m in workload_table.rows]


# -- data and the essay's methods --------------------------------------------


def test_make_problem_shapes_and_labels(problem):
    workload = problem.workload
    assert problem.images().shape == (
        workload.n_images,
        workload.n_descriptors,
        workload.n_features,
    )
    assert problem.descriptors.dtype == np.dtype(workload.dtype)
    assert problem.centers.dtype == np.dtype(workload.dtype)
    assert problem.centers.shape == (workload.n_clusters, workload.n_features)
    assert np.array_equal(
        problem.labels, vlad.assign(problem.descriptors, problem.centers)
    )


def test_head_is_a_prefix(problem):
    head = problem.head(2)
    assert head.workload.n_images == 2
    assert np.array_equal(head.descriptors, problem.descriptors[: head.offsets[-1]])
    assert np.array_equal(head.labels, problem.labels[: head.offsets[-1]])


@pytest.mark.parametrize("method", list(ESSAY_METHODS))
def test_essay_methods_match_encode(problem, method):
    vectors = ESSAY_METHODS[method](problem.kmeans, problem.images())
    expected = vlad.encode(
        problem.sets, problem.centers, power=0.5, intra=False, l2=True
    )
    # Rows are unit vectors; the essay sums float32 residuals in float32.
    atol = 1e-10 if problem.descriptors.dtype == np.float64 else 1e-4
    assert vectors.shape == expected.shape
    assert_allclose(vectors, expected, rtol=0, atol=atol)


def test_optvec_is_wrong_when_the_first_segment_is_empty(problem):
    # Kept as published: the essay's ragged trick assumes that image 0 has a
    # descriptor of centre 0. Move those to centre 1; keep the last segment.
    images = problem.images().copy()
    centers = problem.centers
    images[0, problem.kmeans.predict(images[0]) == 0] = centers[1]
    images[-1, 0] = centers[-1]
    expected = essay.looping(problem.kmeans, images)
    vectors = essay.optvec(problem.kmeans, images)
    assert not np.allclose(vectors[0], expected[0], atol=1e-3)
    assert_allclose(vectors[1:], expected[1:], atol=1e-4)


def test_reference_residuals_match_the_loop_oracle(problem):
    arguments = (problem.descriptors, problem.labels, problem.offsets, problem.centers)
    reference = workloads.reference_residuals(*arguments)
    assert reference.dtype == np.float64
    assert_allclose(
        reference, vlad.AGGREGATORS["loop"](*arguments), rtol=1e-5, atol=1e-3
    )


def test_relative_error_by_hand():
    assert measuring.relative_error([1.0, 2.0], np.array([1.0, 4.0])) == 0.5
    assert measuring.relative_error(np.zeros((2, 2)), np.zeros(4)) == 0.0


# -- the harness ---------------------------------------------------------------


def test_measure_calls_warm_up_traced_then_timed():
    calls = []

    def allocate():
        calls.append(1)
        return np.ones(1 << 20)

    measurement = measuring.measure(
        "ones", allocate, group="floor", repeats=4, reference=np.full(1 << 20, 2.0)
    )
    assert len(calls) == 1 + 1 + 4
    assert len(measurement.times) == 4
    assert measurement.minimum <= measurement.median
    assert measurement.output_bytes == 8 << 20
    assert 8 << 20 <= measurement.peak_bytes < 9 << 20
    assert measurement.error == 0.5


def test_time_calls_repeats_fast_calls_until_they_add_up(monkeypatch):
    monkeypatch.setattr(measuring, "MIN_SECONDS", 0.25)
    times = measuring.time_calls(lambda: None, repeats=2)
    assert len(times) == measuring.MAX_REPEATS
    slow = measuring.time_calls(lambda: time.sleep(0.2), repeats=2)
    assert len(slow) == 2


def test_time_calls_stops_once_the_budget_is_spent():
    times = measuring.time_calls(
        lambda: time.sleep(0.01), repeats=100, max_seconds=0.02
    )
    assert measuring.MIN_REPEATS <= len(times) < 10
    assert min(times) >= 0.01


def test_peak_allocation_ignores_existing_arrays():
    existing = np.ones(1 << 21)
    assert measuring.peak_allocation(lambda: existing.sum()) < 1 << 16
    assert measuring.peak_allocation(lambda: existing * 2) >= existing.nbytes


def test_limit_threads_limits_and_restores():
    from threadpoolctl import threadpool_info

    before = [pool["num_threads"] for pool in threadpool_info()]
    with measuring.limit_threads(1):
        assert all(pool["num_threads"] == 1 for pool in threadpool_info())
    assert [pool["num_threads"] for pool in threadpool_info()] == before


def test_a_failing_method_is_recorded_not_raised():
    def broken():
        raise ValueError("no luck")

    row = measuring.measure_or_record(
        "essay broken", broken, skipped=None, group="essay"
    )
    assert row.times == []
    assert row.skipped == "failed: ValueError: no luck"


# -- the tables ------------------------------------------------------------------


def test_workload_table_has_every_row(table):
    expected = [
        AGGREGATION_FLOOR,
        ASSIGNMENT_FLOOR,
        "vlad.assign",
        *(f"aggregate {name}" for name in vlad.available_aggregators()),
        *(f"essay {name}" for name in ESSAY_METHODS),
        ENCODE_ROW,
        *(
            row
            for row, module in suites.ACCELERATOR_ROWS.items()
            if importlib.util.find_spec(module) is not None
        ),
    ]
    assert row_names(table) == expected
    for row in table.rows:
        assert row.skipped is None, row.name
        assert len(row.times) == 2
        assert row.peak_bytes is not None
    for row in table.rows:
        if row.group in ("aggregate", "essay", "encode"):
            assert row.error < 1e-4, row.name


def test_workload_table_compares_rows_with_their_floors(table):
    aggregation = table.row(AGGREGATION_FLOOR).median
    assignment = table.row(ASSIGNMENT_FLOOR).median
    numba_or_sparse = table.row("aggregate auto")
    assert table.ratio(numba_or_sparse) == pytest.approx(
        numba_or_sparse.median / aggregation
    )
    encoded = table.row(ENCODE_ROW)
    assert table.ratio(encoded) == pytest.approx(
        encoded.median / (aggregation + assignment)
    )
    best = min((m for m in table.rows if m.group == "essay"), key=lambda m: m.median)
    assert table.essay_best() is best
    assert table.speedup(encoded) == pytest.approx(best.median / encoded.median)
    assert table.speedup(table.row("aggregate auto")) is None


def test_format_table_is_markdown_with_every_row(table):
    text = tables.format_table(table)
    lines = [line for line in text.splitlines() if line.startswith("|")]
    assert len(lines) == 2 + len(table.rows)
    assert len({line.count("|") for line in lines}) == 1
    assert set(lines[1]) <= set("|-:")
    for name in row_names(table):
        assert any(line.startswith(f"| {name} ") for line in lines)
    assert "speed-up vs essay best" in lines[0]


def test_skip_reasons_at_the_named_workload_sizes():
    b, a = workloads.WORKLOADS["b"], workloads.WORKLOADS["a"]
    limit = workloads.MEMORY_LIMIT_BYTES
    assert workloads.skip_reason("aggregate masked", b, memory_limit=limit).startswith(
        "skipped (slow)"
    )
    assert (
        workloads.skip_reason("aggregate masked", b, slow=True, memory_limit=limit)
        is None
    )
    assert workloads.skip_reason("aggregate loop", b, memory_limit=limit) is None
    assert workloads.skip_reason(
        "essay naivec", b, slow=True, memory_limit=limit
    ).startswith("skipped (memory)")
    for name in ("aggregate masked", "aggregate loop", "essay naivec"):
        assert workloads.skip_reason(name, a, memory_limit=limit) is None


def test_skipped_rows_say_why(problem, monkeypatch):
    monkeypatch.setattr(workloads, "MASKED_MAX_ELEMENTS", 0)
    workload_table = suites.benchmark_workload(problem, repeats=1, memory_limit=0)
    masked = workload_table.row("aggregate masked")
    assert masked.times == [] and masked.skipped.startswith("skipped (slow)")
    assert workload_table.row("essay naivec").skipped.startswith("skipped (memory)")
    assert workload_table.ratio(masked) is None
    assert "skipped (slow)" in tables.format_table(workload_table)


def test_latency_table_compares_encode_with_the_bare_kernels(single):
    latency = benchmark_latency(single, repeats=2)
    encoded = latency.row("vlad.encode([x], codebook)")
    scatters = [m for m in latency.rows if m.name.startswith("scatter-add")]
    assert len(scatters) == len(SCATTER_KERNELS)
    fastest = min(scatters, key=lambda m: m.median)
    bare = (
        latency.rows[0].median
        + latency.rows[1].median
        + fastest.median
        + latency.row("signed sqrt + L2").median
    )
    assert latency.baseline_seconds(encoded) == pytest.approx(bare)
    assert latency.ratio(encoded) == pytest.approx(encoded.median / bare)
    assert encoded.error < 1e-5


def test_thread_study_compares_with_the_first_row(single):
    study = suites.benchmark_threads(single, thread_counts=(1, 2), repeats=2)
    assert row_names(study) == [
        f"{ASSIGNMENT_FLOOR} [BLAS 1 thread]",
        f"{ASSIGNMENT_FLOOR} [BLAS 2 threads]",
        "vlad.assign [n_jobs=1]",
        "vlad.assign [n_jobs=2]",
        f"{ENCODE_ROW} [n_jobs=1]",
        f"{ENCODE_ROW} [n_jobs=2]",
    ]
    one = study.row("vlad.assign [n_jobs=1]")
    workers = study.row("vlad.assign [n_jobs=2]")
    assert study.ratio(one) == pytest.approx(1.0)
    assert study.ratio(workers) == pytest.approx(workers.median / one.median)


@pytest.mark.slow
def test_sweep_reports_ns_per_descriptor(tmp_path):
    sweep = suites.benchmark_sweep(
        (40, 80), n_descriptors=20, n_features=8, n_clusters=4, repeats=2
    )
    assert sweep.rows == [40, 80]
    assert set(sweep.measurements) == {AGGREGATION_FLOOR, *vlad.available_aggregators()}
    numba_or_sparse = sweep.measurements["auto"][1]
    assert sweep.ns_per_descriptor("auto")[1] == pytest.approx(
        numba_or_sparse.median / 80 * 1e9
    )
    best = min(
        points[1].median
        for name, points in sweep.measurements.items()
        if name not in ("auto", AGGREGATION_FLOOR)
    )
    assert sweep.auto_over_best()[1] == pytest.approx(numba_or_sparse.median / best)
    text = tables.format_sweep(sweep)
    assert "N=40" in text and "auto / best" in text
    pytest.importorskip("matplotlib")
    path = tmp_path / "sweep.png"
    report.plot_sweep(sweep, path)
    assert path.read_bytes().startswith(b"\x89PNG")


# -- targets and the whole run -------------------------------------------------


def fabricated_table():
    def row(name, group, times, baseline=(), **fields):
        return Measurement(name, group, baseline, times=times, **fields)

    end_to_end = tables.END_TO_END_FLOOR
    return Table(
        "b",
        "fabricated",
        [
            row(AGGREGATION_FLOOR, "floor", [1.0, 2.0, 9.0], (AGGREGATION_FLOOR,)),
            row(ASSIGNMENT_FLOOR, "floor", [4.0], (ASSIGNMENT_FLOOR,)),
            row("aggregate auto", "aggregate", [5.0, 6.0, 7.0], (AGGREGATION_FLOOR,)),
            row("aggregate masked", "aggregate", [], skipped="skipped (slow)"),
            row(
                "aggregate ragged-cumsum",
                "aggregate",
                [3.0],
                (AGGREGATION_FLOOR,),
                peak_bytes=300 * workloads.MIB,
                output_bytes=32 * workloads.MIB,
                error=2e-5,
            ),
            row("essay truvec", "essay", [20.0], end_to_end),
            row("essay optvec", "essay", [10.0], end_to_end),
            row(
                ENCODE_ROW,
                "encode",
                [2.0],
                end_to_end,
                peak_bytes=40 * workloads.MIB,
                output_bytes=32 * workloads.MIB,
            ),
        ],
    )


def test_ratios_by_hand():
    table = fabricated_table()
    assert table.ratio(table.row("aggregate auto")) == 3.0
    assert table.ratio(table.row(ENCODE_ROW)) == pytest.approx(2.0 / 6.0)
    assert table.speedup(table.row(ENCODE_ROW)) == 5.0
    assert table.speedup(table.row("essay truvec")) == 0.5
    assert table.ratio(table.row("aggregate masked")) is None


def test_targets_by_hand():
    checks = targets.check_targets({"b": fabricated_table()})
    assert [(check.number, check.passed) for check in checks] == [
        (1, False),  # auto 6 / floor 2
        (2, True),  # encode 2 / floors 6
        (3, True),  # essay best 10 / encode 2 = 5, at least 5
        (5, True),  # encode 8 MiB beyond its output
        (5, None),  # masked skipped
        (5, False),  # ragged-cumsum 268 MiB beyond
        (7, False),  # error 2e-5
    ]
    assert checks[0].ratio == 3.0
    assert checks[2].ratio == 5.0
    assert checks[3].ratio == pytest.approx(8 / 256)
    assert checks[6].ratio == pytest.approx(2.0)
    text = targets.format_targets(checks)
    assert "FAIL" in text and "pass" in text and "not measured" in text


def test_parse_sizes():
    assert workloads.parse_sizes("all") == list(workloads.SIZES)
    assert workloads.parse_sizes(["b", "a", "b"]) == ["b", "a"]
    with pytest.raises(ValueError, match="Unknown size 'd'"):
        workloads.parse_sizes("d")


def test_format_seconds():
    assert tables.format_seconds(2.5) == "2.5 s"
    assert tables.format_seconds(0.0123) == "12.3 ms"
    assert tables.format_seconds(4.2e-6) == "4.2 us"
    assert tables.format_seconds(None) == ""


def test_machine_info_names_the_cpu_and_blas():
    info = report.machine_info()
    assert info["cpu"] and info["logical_cpus"] >= 1
    assert info["memory_bytes"] > 1 << 20
    assert info["versions"]["numpy"] == np.__version__
    assert any("blas" in pool for pool in info["thread_pools"])
    assert "### Machine" in tables.format_machine(info)
