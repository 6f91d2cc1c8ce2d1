"""The README's Quick start and CI: CI runs the two commands of the Quick
start's marked block, read by tests/readme_commands.py, so that what a new
user copies is what CI runs."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from readme_commands import BEGIN, END, README, quick_start_commands

ROOT = Path(__file__).resolve().parents[1]
CI = ROOT / ".ci" / "run"


def quick_start_section() -> str:
    text = README.read_text(encoding="utf-8")
    return text.split("\n## Quick start\n", 1)[1].split("\n## ", 1)[0]


def test_the_quick_start_shows_the_two_commands_ci_runs():
    section = quick_start_section()
    assert section.count(BEGIN) == 1 and section.count(END) == 1
    main_job, tests = quick_start_commands(section)
    assert main_job.startswith('pip install -e ".[html]" && vlad fit data ')
    steps = [shlex.split(step)[:2] for step in main_job.split(" && ")]
    assert steps == [
        ["pip", "install"],
        ["vlad", "fit"],
        ["vlad", "encode"],
        ["vlad", "index"],
        ["vlad", "search"],
    ]
    assert tests == 'pip install -e ".[all,test]" && pytest'
    # The block is the section's first, the one a reader copies.
    assert section.index(BEGIN) < section.index("```")


def test_the_main_job_installs_as_ci_rewrites_it_for_the_wheel():
    main_job, _ = quick_start_commands(README.read_text(encoding="utf-8"))
    assert re.match(r'pip install -e "\.(\[[a-z,]+\])?" && ', main_job)


def test_the_helper_prints_the_commands_for_ci():
    printed = subprocess.run(
        [sys.executable, "tests/readme_commands.py"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
        timeout=60,
    ).stdout
    assert printed.splitlines() == quick_start_commands(
        README.read_text(encoding="utf-8")
    )


@pytest.mark.skipif(not CI.is_file(), reason="CI's files are not in the sdist")
def test_ci_reads_its_commands_with_the_helper_alone():
    script = CI.read_text(encoding="utf-8")
    assert "mapfile -t commands < <(python3 tests/readme_commands.py)" in script
    assert "Quick start\\s" not in script and 'open("README.md"' not in script


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("## Quick start\n\n```bash\nvlad --help\n```\n", "must hold"),
        (f"{BEGIN}\n```bash\na\n```\n{END}\n{BEGIN}\n", "must hold"),
        (f"{END}\n```bash\na\n```\n{BEGIN}\n", "comes before"),
        (f"{BEGIN}\n```text\na\n```\n{END}\n", "one ```bash block"),
        (f"{BEGIN}\nsome words\n{END}\n", "one ```bash block"),
    ],
)
def test_a_readme_without_one_marked_block_is_refused(text, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        quick_start_commands(text)


def test_blank_lines_and_comments_are_not_commands():
    text = f"{BEGIN}\n```bash\n# install\npip install vlad\n\nvlad --help\n```\n{END}"
    assert quick_start_commands(text) == ["pip install vlad", "vlad --help"]
