"""Tests of ``python -m benchmarks`` (:mod:`benchmarks.bench`), the benchmark
tables of a source checkout, and of the performance page made from its JSON."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import vlad
from benchmarks import measuring, performance_page, report, tables, workloads
from benchmarks.bench import bench
from benchmarks.workloads import Workload
from vlad.cli._main import main

#: The benchmarks' own tests: a CI step of their own, not the default run.
pytestmark = pytest.mark.benchmarks

ROOT = Path(__file__).resolve().parents[1]

TINY_SINGLE = Workload("single", 1, 60, 8, 4)
TINY_A = Workload("tiny-a", 5, 30, 6, 3, dtype="float64", kind="gaussian")
TINY_B = Workload("tiny-b", 4, 40, 8, 4)


def test_vlad_bench_is_no_command_of_the_installed_vlad():
    result = CliRunner().invoke(main, ["bench", "--size", "a"])
    assert result.exit_code == 2
    assert "No such command 'bench'" in result.output


def test_the_vlad_command_imports_no_harness():
    code = (
        "import sys, vlad.cli._main; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'benchmarks'))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    assert loaded.stdout.strip() == "[]"


def test_python_dash_m_benchmarks_runs_the_command():
    completed = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--help"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.startswith("Usage: python -m benchmarks [OPTIONS]\n")
    sizes = "|".join([*workloads.SIZES, *workloads.SEARCH_SIZES, "all"])
    assert f"--size [{sizes}]" in completed.stdout


def test_the_command_refuses_to_replace_outputs(tmp_path):
    path = tmp_path / "results.json"
    path.write_text("{}")
    result = CliRunner().invoke(bench, ["--size", "a", "--json", str(path)])
    assert result.exit_code == 1
    assert "already exists; pass --overwrite" in result.output
    assert path.read_text() == "{}"


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """``python -m benchmarks --size a --size single --size b --json`` at tiny
    sizes."""
    path = tmp_path_factory.mktemp("bench") / "results.json"
    sizes = ["--size", "a", "--size", "single", "--size", "b"]
    arguments = [*sizes, "--repeats", "1"]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(measuring, "MIN_SECONDS", 0.0)
        patch.setitem(workloads.WORKLOADS, "a", TINY_A)
        patch.setitem(workloads.WORKLOADS, "single", TINY_SINGLE)
        patch.setitem(workloads.WORKLOADS, "b", TINY_B)
        result = CliRunner().invoke(bench, [*arguments, "--json", str(path)])
    assert result.exit_code == 0, result.output
    return result, path


# The tiny run, seconds (threads, repeats): its three tests run with the
# slow tests; the cheap ones above and below run by default.
@pytest.mark.slow
def test_the_command_prints_tables_and_writes_json(tiny_run):
    result, path = tiny_run
    printed = result.stdout
    titles = ("### Machine", "Workload tiny-a", "Single-image latency", "threads")
    for title in titles:
        assert title in printed
    assert "### Targets" in printed
    assert f"Results written to {path}" in result.stderr
    record = json.loads(path.read_text())
    tables_run = ["a", "single", "single latency", "b", "threads tiny-b"]
    assert list(record["tables"]) == tables_run
    assert record["settings"]["sizes"] == ["a", "single", "b"]
    assert {check["number"] for check in record["targets"]} >= {1, 2, 3, 4, 5, 7}


@pytest.mark.slow
def test_a_report_read_back_from_json_prints_the_same_tables(tiny_run):
    result, path = tiny_run
    read = report.Report.from_dict(json.loads(path.read_text()))
    for table in read.tables.values():
        assert tables.format_table(table) in result.stdout
    assert json.loads(json.dumps(read.to_dict())) == json.loads(path.read_text())


@pytest.mark.slow
def test_performance_page(tiny_run, tmp_path):
    result, path = tiny_run
    page = tmp_path / "docs" / "performance.md"
    assert performance_page.main([str(path), str(page)]) == 0
    text = page.read_text()
    record = json.loads(path.read_text())
    assert text.startswith("# Performance\n")
    sizes = "--size a --size single --size b"
    command = f"python -m benchmarks {sizes} --repeats 1 --json results.json"
    assert f"```bash\n{command}\n```" in text
    assert f"- CPU: {record['machine']['cpu']} (" in text
    assert f"numpy {record['machine']['versions']['numpy']}" in text
    for table in report.Report.from_dict(record).tables.values():
        assert tables.format_table(table) in text
    assert "### Targets\n" in text
    assert "## Which aggregator wins where, and why" in text
    assert "- **numba** " in text or "numba" not in vlad.available_aggregators()
    assert "`auto` chose" in text
    for word in ("issue", "session", "task"):
        assert word not in text.lower()


def test_command_line_names_the_options_that_differ_from_the_defaults():
    settings = {"sizes": ["b"], "repeats": 5, "threads": None, "slow": True}
    assert performance_page.command_line({**settings, "max_seconds": 20.0}) == (
        "python -m benchmarks --size b --threads 0 --slow --json results.json"
    )
    assert performance_page.command_line(
        {"sizes": ["a"], "max_seconds": 2.5}, "x.json"
    ) == ("python -m benchmarks --size a --max-seconds 2.5 --json x.json")
