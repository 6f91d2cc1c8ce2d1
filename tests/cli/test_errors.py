"""How a command ends on an error: the library's errors about values, files and
resources in one line, a bug (a bare ValueError or TypeError, such as NumPy's
or scikit-learn's) with its traceback; exit status 1 either way."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from vlad.cli._reporting import USER_ERRORS
from vlad.errors import ParameterError, ParameterTypeError, VladError, VladTypeError

ROOT = Path(__file__).resolve().parents[2]

#: A command whose library call raises the error named by its argument.
COMMAND = """
import click
from vlad.cli._reporting import library_errors
from vlad.errors import ParameterError, ParameterTypeError, VladError, VladTypeError

ERRORS = {
    "type": TypeError,
    "value": ValueError,
    "vlad": VladError,
    "vlad-type": VladTypeError,
    "parameter": ParameterError,
    "parameter-type": ParameterTypeError,
    "os": OSError,
}

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


@pytest.mark.parametrize(
    "kind", ["vlad", "vlad-type", "parameter", "parameter-type", "os"]
)
def test_the_user_s_errors_are_one_line(kind):
    completed = run_failing(kind)
    assert completed.returncode == 1
    assert completed.stderr == "Error: the thing went wrong\n"


@pytest.mark.parametrize(
    ("kind", "name"), [("type", "TypeError"), ("value", "ValueError")]
)
def test_a_bare_type_or_value_error_is_a_bug_shown_with_its_traceback(kind, name):
    completed = run_failing(kind)
    assert completed.returncode == 1
    assert completed.stderr.startswith("Traceback (most recent call last):\n")
    assert completed.stderr.endswith(f"{name}: the thing\nwent wrong\n")
    assert "\nError: " not in completed.stderr


def test_the_library_s_own_errors_are_the_user_s():
    assert issubclass(VladError, ValueError)
    assert issubclass(VladTypeError, VladError) and issubclass(VladTypeError, TypeError)
    assert issubclass(ParameterError, VladError)
    assert issubclass(ParameterTypeError, ParameterError)
    assert issubclass(ParameterTypeError, TypeError)
    for error in (VladError, VladTypeError, ParameterError, ParameterTypeError):
        assert issubclass(error, USER_ERRORS)
    assert not issubclass(TypeError, USER_ERRORS)
    assert not issubclass(ValueError, USER_ERRORS)
