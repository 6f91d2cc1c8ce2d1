"""How a command ends on an error: the library's errors about values, files and
resources in one line, a bug (such as a TypeError) with its traceback; exit
status 1 either way."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from vlad.cli._reporting import USER_ERRORS
from vlad.errors import VladError

ROOT = Path(__file__).resolve().parents[2]

#: A command whose library call raises the error named by its argument.
COMMAND = """
import click
from vlad.cli._reporting import library_errors
from vlad.errors import VladError

ERRORS = {"type": TypeError, "value": ValueError, "vlad": VladError, "os": OSError}

@click.command()
@click.argument("kind")
def fail(kind):
    with library_errors():
        raise ERRORS[kind]("the thing\\nwent wrong")

fail(prog_name="fail")
"""


def run_failing(kind: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", COMMAND, kind],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )


@pytest.mark.parametrize("kind", ["value", "vlad", "os"])
def test_the_user_s_errors_are_one_line(kind):
    completed = run_failing(kind)
    assert completed.returncode == 1
    assert completed.stderr == "Error: the thing went wrong\n"


def test_a_type_error_is_a_bug_shown_with_its_traceback():
    completed = run_failing("type")
    assert completed.returncode == 1
    assert completed.stderr.startswith("Traceback (most recent call last):\n")
    assert completed.stderr.endswith("TypeError: the thing\nwent wrong\n")
    assert "\nError: " not in completed.stderr


def test_the_library_s_own_errors_are_the_user_s():
    assert issubclass(VladError, ValueError)
    assert issubclass(VladError, USER_ERRORS)
    assert not issubclass(TypeError, USER_ERRORS)
