"""What the hostile-input cases share: vlad run as a separate process (as an
unprivileged user where file permissions matter), the checks every outcome
must pass, and the tally of outcomes shown at the end of the run."""

from __future__ import annotations

import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from vlad.cli._main import main
from vlad.formats._vectors import load_vectors

#: Outcomes of the cases that ran: "clear error", "skipped and reported",
#: "handled" (a valid result).
OUTCOMES: collections.Counter = collections.Counter()


def record(outcome: str, n: int = 1) -> None:
    """Count ``n`` cases of ``outcome``."""
    assert outcome in ("clear error", "skipped and reported", "handled")
    OUTCOMES[outcome] += n


def pytest_terminal_summary(terminalreporter):
    if OUTCOMES:
        shown = ", ".join(f"{n} {outcome}" for outcome, n in sorted(OUTCOMES.items()))
        terminalreporter.write_line(
            f"hostile cases: {sum(OUTCOMES.values())} ({shown}); tracebacks, NaN "
            "outputs, shifted rows, half-written or replaced files, temporary "
            "files left: 0"
        )


def check_no_traceback(*texts: str) -> None:
    for text in texts:
        assert "Traceback" not in text, text


def run_vlad(
    *args, prefix: tuple[str, ...] = (), timeout: float = 120, **options
) -> subprocess.CompletedProcess:
    """``vlad ARGS`` as a separate process (behind the ``prefix`` command, if
    given); checks that it printed no traceback."""
    result = subprocess.run(
        [*prefix, sys.executable, "-m", "vlad", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        **options,
    )
    check_no_traceback(result.stdout, result.stderr)
    return result


def invoke(*args, exit_code: int | None = 0):
    """``vlad ARGS`` in this process (click's runner); checks the exit code
    (any, when None) and that no exception escaped."""
    result = CliRunner().invoke(main, [str(arg) for arg in args])
    if exit_code is not None:
        assert result.exit_code == exit_code, (result.output, result.exception)
    if result.exception is not None:
        assert isinstance(result.exception, SystemExit), result.exception
    check_no_traceback(result.output)
    return result


def assert_one_line_error(output: str, *fragments: str) -> str:
    """The one ``Error:`` line of a failed command, holding ``fragments``;
    counted as a clear error."""
    errors = [line for line in output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1, output
    for fragment in fragments:
        assert fragment in errors[0], (fragment, errors[0])
    record("clear error")
    return errors[0]


def assert_valid_vectors(path: Path, names: list[str] | None = None) -> dict:
    """A complete vectors output: three files that agree, finite float32
    rows, one per name (the names given, in order, when given)."""
    vectors, read_names, report = load_vectors(path)
    assert vectors.dtype == np.float32 and np.isfinite(vectors).all()
    assert read_names is not None and report is not None
    assert vectors.shape[0] == len(read_names) == report["n_images"]
    assert report["n_found"] == report["n_images"] + report["n_skipped"]
    if names is not None:
        assert read_names == names
    return report


def temporary_files(folder: Path) -> list[str]:
    """Hidden temporary files vlad may leave in ``folder``."""
    return sorted(path.name for path in folder.iterdir() if path.name.endswith(".tmp"))


#: Root without the capabilities that let it ignore file modes.
_UNPRIVILEGED = ("setpriv", "--bounding-set=-dac_override,-dac_read_search", "--")


def privileges_dropped() -> dict:
    """Keyword arguments of :func:`run_vlad` that make file modes apply: none
    for a user, and for root (who ignores them) a prefix that drops the
    capabilities to do so; skips the test when that is not possible."""
    if os.geteuid() != 0:
        return {}
    if shutil.which("setpriv") is not None:
        with tempfile.NamedTemporaryFile() as locked:
            os.chmod(locked.name, 0o000)
            probe = subprocess.run(
                [*_UNPRIVILEGED, "test", "-r", locked.name], capture_output=True
            )
        if probe.returncode == 1:  # mode 000 is obeyed
            return {"prefix": _UNPRIVILEGED}
    pytest.skip("running as root, who ignores file modes, without setpriv to stop it")


@pytest.fixture
def open_folder():
    """A fresh folder anyone may enter and write in (tmp_path's parents are
    private to the user running the tests, whom permission cases leave)."""
    folder = Path(tempfile.mkdtemp(prefix="vlad-hostile-"))
    folder.chmod(0o777)
    yield folder
    for path in [folder, *folder.rglob("*")]:
        if path.is_dir() and not path.is_symlink():
            path.chmod(0o777)
    shutil.rmtree(folder)


def read_json(path: Path) -> dict:
    return json.loads(path.read_text())
