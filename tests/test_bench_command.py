"""Tests of ``vlad bench``, which loads the harness of the source checkout, and
of the performance page made from its JSON."""

import json
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

import vlad
from benchmarks import measuring, performance_page, report, tables, workloads
from benchmarks.workloads import Workload
from vlad.cli import bench as bench_command
from vlad.cli.main import main

TINY_SINGLE = Workload("single", 1, 60, 8, 4)
TINY_A = Workload("tiny-a", 5, 30, 6, 3, dtype="float64", kind="gaussian")
TINY_B = Workload("tiny-b", 4, 40, 8, 4)


def option(name):
    return next(param for param in bench_command.bench.params if param.name == name)


def test_literal_options_match_the_harness():
    assert list(option("sizes").type.choices) == [
        *workloads.SIZES,
        *workloads.SEARCH_SIZES,
        "all",
    ]
    assert option("max_seconds").default == measuring.MAX_SECONDS


def test_load_harness_finds_the_checkout_beside_vlad():
    checkout = bench_command.source_checkout()
    assert checkout / "vlad" / "__init__.py" == Path(vlad.__file__).resolve()
    harness = bench_command.load_harness()
    assert harness is report
    assert Path(harness.__file__).resolve() == checkout / "benchmarks" / "report.py"


def test_without_a_checkout_the_error_is_one_line(tmp_path):
    with pytest.raises(click.ClickException) as caught:
        bench_command.load_harness(tmp_path)
    assert "\n" not in caught.value.message
    assert "pip install -e ." in caught.value.message


def test_vlad_bench_without_a_checkout_says_so(monkeypatch, tmp_path):
    monkeypatch.setattr(bench_command, "source_checkout", lambda: tmp_path)
    result = CliRunner().invoke(main, ["bench", "--size", "a"])
    assert result.exit_code == 1
    assert result.output == f"Error: {bench_command.MISSING_HARNESS}\n"


def test_importing_the_command_imports_no_harness():
    code = (
        "import sys, vlad.cli.main; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'benchmarks'))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert loaded.stdout.strip() == "[]"


def test_vlad_bench_refuses_to_replace_outputs(tmp_path):
    path = tmp_path / "results.json"
    path.write_text("{}")
    result = CliRunner().invoke(main, ["bench", "--size", "a", "--json", str(path)])
    assert result.exit_code == 1
    assert "already exists; pass --overwrite" in result.output
    assert path.read_text() == "{}"


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """``vlad bench --size a --size single --size b --json`` at tiny sizes."""
    path = tmp_path_factory.mktemp("bench") / "results.json"
    sizes = ["--size", "a", "--size", "single", "--size", "b"]
    arguments = ["bench", *sizes, "--repeats", "1"]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(measuring, "MIN_SECONDS", 0.0)
        patch.setitem(workloads.WORKLOADS, "a", TINY_A)
        patch.setitem(workloads.WORKLOADS, "single", TINY_SINGLE)
        patch.setitem(workloads.WORKLOADS, "b", TINY_B)
        result = CliRunner().invoke(main, [*arguments, "--json", str(path)])
    assert result.exit_code == 0, result.output
    return result, path


def test_vlad_bench_prints_tables_and_writes_json(tiny_run):
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


def test_a_report_read_back_from_json_prints_the_same_tables(tiny_run):
    result, path = tiny_run
    read = report.Report.from_dict(json.loads(path.read_text()))
    for table in read.tables.values():
        assert tables.format_table(table) in result.stdout
    assert json.loads(json.dumps(read.to_dict())) == json.loads(path.read_text())


def test_performance_page(tiny_run, tmp_path):
    result, path = tiny_run
    page = tmp_path / "docs" / "performance.md"
    assert performance_page.main([str(path), str(page)]) == 0
    text = page.read_text()
    record = json.loads(path.read_text())
    assert text.startswith("# Performance\n")
    sizes = "--size a --size single --size b"
    command = f"vlad bench {sizes} --repeats 1 --json results.json"
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
        "vlad bench --size b --threads 0 --slow --json results.json"
    )
    assert performance_page.command_line(
        {"sizes": ["a"], "max_seconds": 2.5}, "x.json"
    ) == ("vlad bench --size a --max-seconds 2.5 --json x.json")
