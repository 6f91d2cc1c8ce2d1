"""SIGTERM at any point of a real ``vlad encode --overwrite``: exit status 143
and the one line "terminated" every time, and the output the previous one or
the new one, whole; never a SIGTERM swallowed (exit 0, a traceback of the
exception on stderr), as when it came while a finalizer ran."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import vlad
from hostile.conftest import check_no_traceback, record, temporary_files

#: ``vlad ARGS`` in a process that sends itself SIGTERM while the command
#: runs: at its N-th Python call in the main thread (POINT "N", counted by a
#: profile function) or its N-th call of a ``__del__`` method (POINT
#: "N:__del__"; at the end of the command if there are fewer), or (POINT
#: "finalizer") from a finalizer that the garbage collector runs as the
#: command starts, so that the handler runs inside it, or (POINT "dropped",
#: "converted") as it starts writing the vectors, inside code that drops the
#: exception or turns it into a TypeError (as NumPy's ``tofile`` does when
#: the signal comes while it checks its argument). POINT "0" sends nothing.
#: The counts of calls and ``__del__`` calls are printed at the end.
SIGNALLED = """
    import gc, os, signal, sys, weakref
    import click
    import numpy
    import vlad.cli._main as command
    point = sys.argv[1]
    save = numpy.save
    def careless_save(*args, **options):
        numpy.save = save
        try:
            os.kill(os.getpid(), signal.SIGTERM)
        except BaseException:
            if point == "converted":
                raise TypeError("expected str, bytes or os.PathLike object")
        return save(*args, **options)
    if point in ("dropped", "converted"):
        numpy.save = careless_save
    target, _, name = point.partition(":")
    target = int(target) if target.isdigit() else 0
    counts = {"calls": 0, "__del__": 0, "sent": False}
    def send():
        sys.setprofile(None)
        counts["sent"] = True
        os.kill(os.getpid(), signal.SIGTERM)
    def count(frame, event, arg):
        if event == "call":
            counts["calls"] += 1
            counts["__del__"] += frame.f_code.co_name == "__del__"
            if counts[name or "calls"] == target and not counts["sent"]:
                send()
    class Cycle:
        pass
    def signalled(self, ctx):
        if point == "finalizer":
            garbage = Cycle()
            garbage.itself = garbage
            weakref.finalize(garbage, os.kill, os.getpid(), signal.SIGTERM)
            del garbage
            gc.collect()
            return click.Group.invoke(self, ctx)
        sys.setprofile(count)
        try:
            return click.Group.invoke(self, ctx)
        finally:
            sys.setprofile(None)
            print(f"calls: {counts['calls']} {counts['__del__']}", file=sys.stderr)
            if target and not counts["sent"]:
                send()
    command.LazyGroup.invoke = signalled
    command.main(sys.argv[2:], prog_name="vlad")
"""


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    """Descriptors of 200 images and a codebook."""
    folder = tmp_path_factory.mktemp("signalled")
    rng = np.random.default_rng(0)
    descriptors = rng.random((200, 20, 32), dtype=np.float32)
    np.save(folder / "descriptors.npy", descriptors)
    vlad.Codebook(descriptors.reshape(-1, 32)[::250]).save(folder / "codebook.npz")
    return folder


@pytest.fixture(scope="module")
def made(job):
    """The vectors ``vlad encode`` makes of the job, unsignalled; and the
    number of Python calls and ``__del__`` calls of its command."""
    (job / "new").mkdir()
    result = run_signalled(job, job / "new", "0")
    assert result.returncode == 0, result.stderr
    counts = tuple(map(int, result.stderr.rsplit("calls: ", 1)[1].split()))
    return job / "new", counts


def encode_args(job, output_folder) -> list[str]:
    return [
        "encode",
        str(job / "descriptors.npy"),
        "-c",
        str(job / "codebook.npz"),
        "-o",
        str(output_folder / "v.npy"),
        "-q",
        "--overwrite",
    ]


def run_signalled(job, output_folder, point: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            sys.executable,
            "-c",
            textwrap.dedent(SIGNALLED),
            point,
            *encode_args(job, output_folder),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )


def contents(folder) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(folder.iterdir())}


def signal_at(job, folder, point: str, new=None) -> str:
    """Run signalled at ``point`` over a previous set of vectors; check the
    outcome and say which output is left: "previous" or "new" (the files of
    the folder ``new``)."""
    vlad.save_vectors(
        folder / "v.npy", np.ones((3, 4)), ["a", "b", "c"], {}, overwrite=True
    )
    previous = contents(folder)
    result = run_signalled(job, folder, point)
    check_no_traceback(result.stderr)
    assert "Exception ignored" not in result.stderr, result.stderr
    assert result.returncode == 143, (point, result.stderr)
    assert result.stderr.splitlines()[-1] == "terminated", result.stderr
    assert temporary_files(folder) == []
    left = contents(folder)
    if left == previous:
        return "previous"
    assert new is not None and left == contents(new), sorted(left)
    return "new"


def test_sigterm_while_a_finalizer_runs_is_not_swallowed(job, tmp_path):
    """The handler's exception, raised inside a finalizer, used to be printed
    and dropped there: the command went on and exited 0."""
    assert signal_at(job, tmp_path, "finalizer") == "previous"
    record("clear error")


# Two processes; the default run signals from a finalizer, above.
@pytest.mark.slow
@pytest.mark.parametrize(
    ("point", "left"), [("dropped", "new"), ("converted", "previous")]
)
def test_sigterm_whose_exception_code_drops_or_turns_into_another_error(
    job, made, tmp_path, point, left
):
    """Code that catches the exception where it did not expect it: the
    command used to exit 0 (dropped), or 1 with the other error's traceback
    (turned into a TypeError); it ends by the signal."""
    assert signal_at(job, tmp_path, point, made[0]) == left
    record("clear error")


# One process per point, seconds in all; the default run signals from a
# finalizer, above.
@pytest.mark.slow
def test_sigterm_at_many_points_of_the_command(job, made, tmp_path):
    """Points spread over the command's Python calls, denser over the last
    ones (where the files are written and renamed; the count varies a little
    between runs, and a point past the end signals at the end), and the
    ``__del__`` methods the garbage collector runs (numba's, NumPy's): 143
    every time, the output the previous one or the new one, whole."""
    new, (n_calls, n_finalizers) = made
    points = sorted(
        {*np.linspace(1, n_calls, 8).astype(int), *range(n_calls - 600, n_calls, 75)}
    )
    finalizers = np.unique(np.geomspace(1, max(n_finalizers, 1), 6).astype(int))
    outcomes = [signal_at(job, tmp_path, str(point), new) for point in points]
    outcomes += [
        signal_at(job, tmp_path, f"{point}:__del__", new) for point in finalizers
    ]
    assert {"previous", "new"} <= set(outcomes)
    record("clear error", len(outcomes))
