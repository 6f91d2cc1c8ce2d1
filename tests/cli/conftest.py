"""Shared fixtures and helpers of the ``vlad`` command line tests: vlad.cli, run
with click's CliRunner and as the installed script."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from photos import DATA, FAST_OPTIONS

from vlad.cli._main import main

FAST = ["--max-side", str(FAST_OPTIONS["max_side"])]


def run(*args, exit_code=0):
    """Invoke ``vlad ARGS`` in-process; check its exit code; return the result."""
    result = CliRunner().invoke(main, [str(arg) for arg in args])
    assert result.exit_code == exit_code, (result.output, result.exception)
    assert "Traceback" not in result.output
    return result


# Package scope: made once for all the modules of tests/cli, as they were once
# for the single module they were split from.


@pytest.fixture(scope="package")
def main_job(tmp_path_factory):
    """The Quick start's main job, at default options: fit, then encode, data/."""
    folder = tmp_path_factory.mktemp("main-job")
    fitted = run("fit", DATA, "--n-clusters", 16, "-o", folder / "codebook.npz")
    encoded = run(
        "encode", DATA, "--codebook", folder / "codebook.npz", "-o", folder / "v.npy"
    )
    return folder, fitted, encoded
