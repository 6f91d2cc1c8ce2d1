"""``vlad --help`` lists the commands without importing them: the group holds
each command's short help, and imports a command's module only to run it or
to show its own help."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from vlad.cli._main import COMMANDS, main

ROOT = Path(__file__).resolve().parents[2]

#: The modules imported by ``vlad ARGS``, printed as JSON.
IMPORTED = """
import json, sys
from vlad.cli._main import main
try:
    main(sys.argv[1:], prog_name="vlad")
except SystemExit:
    pass
print(json.dumps(sorted(sys.modules)), file=sys.stderr)
"""


def modules_imported_by(*args: str) -> list[str]:
    completed = subprocess.run(
        [sys.executable, "-c", IMPORTED, *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        check=True,
    )
    return json.loads(completed.stderr.splitlines()[-1])


def test_vlad_help_imports_no_command_and_no_library_module():
    imported = modules_imported_by("--help")
    ours = [name for name in imported if name.split(".")[0] == "vlad"]
    assert ours == [
        "vlad",
        "vlad._lazy",
        "vlad._version",
        "vlad.cli",
        "vlad.cli._main",
        "vlad.errors",
        "vlad.formats",
        "vlad.formats._names",
    ]
    for heavy in ("numpy", "cv2", "scipy", "sklearn"):
        assert heavy not in imported


@pytest.mark.parametrize("name", ["fit", "encode", "index", "search"])
def test_a_command_s_help_imports_neither_scipy_s_sparse_nor_sklearn(name):
    """``vlad fit --help`` took 1.3 s to import SciPy's sparse matrices,
    used only while adapting a codebook."""
    imported = modules_imported_by(name, "--help")
    assert "scipy.sparse" not in imported
    assert not [module for module in imported if module.startswith("sklearn")]


def test_a_command_s_help_imports_that_command_alone():
    imported = modules_imported_by("info", "--help")
    commands = {name for name in imported if name.startswith("vlad.cli.")}
    assert "vlad.cli._info" in commands
    assert not commands & {"vlad.cli._search", "vlad.cli._fit", "vlad.cli._extract"}


@pytest.mark.parametrize("name", list(COMMANDS))
def test_the_group_s_short_help_is_the_command_s_own(name):
    path, short_help = COMMANDS[name]
    module, _, attribute = path.partition(":")
    command = getattr(importlib.import_module(module), attribute)
    assert isinstance(command, click.Command)
    assert command.name == name
    assert command.short_help == short_help


def test_the_listing_is_the_same_before_and_after_the_commands_load():
    listed = CliRunner().invoke(main, ["--help"], terminal_width=88).output
    group = click.Group(
        "vlad",
        commands=[main.get_command(click.Context(main), name) for name in COMMANDS],
    )
    formatter = click.HelpFormatter(width=88)
    group.format_commands(click.Context(group), formatter)
    assert formatter.getvalue() in listed
    assert formatter.getvalue().count("\n") == len(COMMANDS) + 1
