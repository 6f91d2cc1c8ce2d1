"""The ``vlad`` group: --help, --version, ``python -m vlad``, the installed
script on a terminal, and what every command shares: verbosity, --overwrite,
one-line errors."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest
from photos import DATA, make_messy_folder

import vlad
from vlad.formats._vectors import load_vectors

from .conftest import run


@pytest.mark.parametrize("command", [[], ["extract"], ["fit"], ["encode"], ["info"]])
def test_every_command_has_help(command):
    result = run(*command, "--help")
    assert result.output.startswith("Usage: ")
    if command:
        assert "Example:" in result.output or "Examples:" in result.output


def test_version():
    assert run("--version").output.strip() == f"vlad, version {vlad.__version__}"


def test_python_dash_m_vlad_is_the_same_command():
    completed = subprocess.run(
        [sys.executable, "-m", "vlad", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert completed.returncode == 0
    assert completed.stdout.strip() == f"vlad, version {vlad.__version__}"


@pytest.mark.slow  # the installed script on a terminal: a second
def test_the_installed_script_draws_a_progress_bar_on_a_terminal(
    tmp_path, codebook_path
):
    script = Path(sys.executable).with_name("vlad")
    assert script.is_file(), "install the project: pip install -e ."
    terminal, terminal_side = pty.openpty()
    args = [script, "encode", DATA, "-c", codebook_path, "-o", tmp_path / "v.npy"]
    completed = subprocess.run(
        args, stdout=subprocess.PIPE, stderr=terminal_side, timeout=60
    )
    os.close(terminal_side)
    shown = b""
    while True:
        try:
            chunk = os.read(terminal, 4096)
        except OSError:
            break
        if not chunk:
            break
        shown += chunk
    os.close(terminal)
    assert completed.returncode == 0
    assert completed.stdout == b""
    assert b"Encoding" in shown and b"8/8" in shown
    assert b"wrote the VLAD vectors of 8 images" in shown
    assert load_vectors(tmp_path / "v.npy")[0].shape == (8, 16 * 128)


def test_quiet_hides_the_summary_then_the_warnings(tmp_path, codebook_path):
    folder = make_messy_folder(tmp_path / "messy")
    args = ["encode", folder, "-c", codebook_path, "--overwrite"]
    assert "wrote" in run(*args, "-o", tmp_path / "v.npy").stderr
    quiet = run(*args, "-q", "-o", tmp_path / "v.npy").stderr
    assert "wrote" not in quiet and "warning: skipped corrupt.jpg" in quiet
    assert run(*args, "-qq", "-o", tmp_path / "v.npy").stderr == ""
    verbose = run(*args, "-v", "-o", tmp_path / "v.npy").stderr
    assert "chelsea.jpg: " in verbose and " descriptors" in verbose


@pytest.mark.parametrize(
    ("command", "outputs"),
    [
        (["extract", DATA / "rocket.jpg", "-o", "out.npz"], ["out.npz"]),
        (["fit", DATA / "rocket.jpg", "--n-clusters", 2, "-o", "out.npz"], ["out.npz"]),
        (["encode", DATA / "rocket.jpg", "-o", "out.npy"], ["out.npy"]),
        (["encode", DATA / "rocket.jpg", "-o", "out.npy"], ["out.names.txt"]),
        (["encode", DATA / "rocket.jpg", "-o", "out.npy"], ["out.json"]),
    ],
)
def test_outputs_are_never_replaced_without_overwrite(
    tmp_path, monkeypatch, codebook_path, command, outputs
):
    monkeypatch.chdir(tmp_path)
    if command[0] == "encode":
        command = [*command, "-c", codebook_path]
    for output in outputs:
        Path(output).write_text("precious")
    result = run(*command, exit_code=1)
    assert (
        result.stderr
        == f"Error: {outputs[0]} already exists; pass --overwrite to replace it\n"
    )
    assert all(Path(output).read_text() == "precious" for output in outputs)
    run(*command, "--overwrite")
    assert all(
        Path(output).read_text(errors="replace") != "precious" for output in outputs
    )
    assert not list(tmp_path.glob(".*.tmp"))


def test_an_output_that_appears_meanwhile_is_not_replaced_and_says_overwrite(
    tmp_path, monkeypatch
):
    """Another writer makes the output while the command describes images:
    the library refuses to replace it, and the message names --overwrite."""
    output = tmp_path / "out.npz"
    (tmp_path / "other_writer.py").write_text(
        "import pathlib\n"
        "import numpy as np\n"
        "def describe(image):\n"
        f"    pathlib.Path({str(output)!r}).write_text('theirs')\n"
        "    return image[::40, ::40].reshape(-1, 3).astype(np.float32)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    result = run(
        "extract", DATA / "rocket.jpg", "--extractor", "other_writer:describe",
        "-j", 1, "-o", output, exit_code=1,
    )  # fmt: skip
    assert result.stderr == (
        f"Error: {output} exists; pass overwrite=True (--overwrite) to replace it\n"
    )
    assert output.read_text() == "theirs"


ERRORS = {
    "missing input": (
        ["encode", "missing", "-c", "{codebook}", "-o", "v.npy"],
        2,
        "does not exist",
    ),
    "empty folder": (
        ["encode", "{empty}", "-c", "{codebook}", "-o", "v.npy"],
        1,
        "no images in",
    ),
    "nothing readable": (
        ["encode", "{unreadable}", "-c", "{codebook}", "-o", "v.npy"],
        1,
        "none of the 1 images",
    ),
    "codebook of another F": (
        ["encode", "{data}", "-c", "{codebook64}", "-o", "v.npy"],
        1,
        "128 features but the codebook's centers have 64",
    ),
    "codebook that is not one": (
        ["encode", "{data}", "-c", "{text}", "-o", "v.npy"],
        1,
        "is not a vlad codebook file: it is not a NumPy",
    ),
    "descriptors given as codebook": (
        ["encode", "{data}", "-c", "{descriptors}", "-o", "v.npy"],
        1,
        "is not a vlad codebook file",
    ),
    "unknown aggregator": (
        ["encode", "{data}", "-c", "{codebook}", "-o", "v.npy", "--aggregator", "nope"],
        2,
        "Invalid value for '--aggregator'",
    ),
    "another kind of descriptors": (
        ["encode", "{data}", "-c", "{codebook}", "-o", "v.npy", "--no-root-sift"],
        1,
        "fitted on RootSIFT at detected keypoints but these descriptors are SIFT",
    ),
    "options for descriptors": (
        ["encode", "{descriptors}", "-c", "{codebook}", "-o", "v.npy", "--dense"],
        1,
        "apply to images",
    ),
    "output of another kind": (
        ["encode", "{data}", "-c", "{codebook}", "-o", "v.json"],
        2,
        "must end in .npy or .h5, or have no suffix for a folder",
    ),
    "output folder missing": (
        ["encode", "{data}", "-c", "{codebook}", "-o", "no/v.npy"],
        1,
        "the folder of no/v.npy does not exist",
    ),
    "zero jobs": (
        ["encode", "{data}", "-c", "{codebook}", "-o", "v.npy", "-j", "0"],
        2,
        "n_jobs must be",
    ),
    "power out of range": (
        ["encode", "{data}", "-c", "{codebook}", "-o", "v.npy", "--power", "0"],
        2,
        "'--power'",
    ),
    "too many centres": (
        ["fit", "{rocket}", "--n-clusters", "100000", "-o", "c.npz"],
        1,
        "cannot fit 100000 centres",
    ),
    "info on an empty picture": (["info", "{unreadable}/a.png"], 1, "not a vlad file"),
    "info on a text file": (["info", "{text}"], 1, "is not a vlad file"),
}


@pytest.fixture
def error_files(tmp_path, monkeypatch, codebook_path, photo_sets):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "empty").mkdir()
    (tmp_path / "unreadable").mkdir()
    (tmp_path / "unreadable" / "a.png").write_bytes(b"")
    (tmp_path / "text.npz").write_text("not a codebook")
    vlad.fit_codebook(vlad.datasets.make_descriptor_sets(4, 50, 64), 4).save(
        tmp_path / "codebook64.npz"
    )
    photo_sets.save(tmp_path / "descriptors.npz")
    return {
        "codebook": codebook_path,
        "codebook64": "codebook64.npz",
        "data": DATA,
        "descriptors": "descriptors.npz",
        "empty": "empty",
        "rocket": DATA / "rocket.jpg",
        "text": "text.npz",
        "unreadable": "unreadable",
    }


@pytest.mark.parametrize("case", ERRORS)
def test_errors_are_one_line_with_a_non_zero_exit(error_files, case):
    args, exit_code, message = ERRORS[case]
    result = run(*(arg.format(**error_files) for arg in args), exit_code=exit_code)
    lines = result.stderr.strip().splitlines()
    assert lines[-1].startswith("Error: ")
    assert message in " ".join(result.stderr.split())
    if exit_code == 1:
        # The error is one line; only the warnings of skipped files precede it.
        assert all(line.startswith("warning: ") for line in lines[:-1]), lines
        assert message in lines[-1]
