"""Hidden temporary files: none is left by a failed rename, by SIGTERM or
Ctrl-C between the link of a finished file and its rename, and the one a
SIGKILL leaves there is removed by the next run writing the same output."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
from photos import DATA

import vlad
import vlad.core._writing as writing
from hostile.conftest import (
    assert_one_line_error,
    check_no_traceback,
    record,
    temporary_files,
)
from vlad.core._files import atomic_write, atomic_writes

#: ``vlad ARGS`` in a process that sends itself a signal when it is about to
#: rename a hidden temporary file onto an output: the instant between the
#: link of a finished file and its rename.
SIGNALLED_AT_RENAME = """
    import os, signal, sys
    sent = getattr(signal, sys.argv[1])
    rename = os.replace
    def replace(source, target, **options):
        if str(source).endswith(".tmp"):
            os.kill(os.getpid(), sent)
        return rename(source, target, **options)
    os.replace = replace
    from vlad.cli._main import main
    main(sys.argv[2:], prog_name="vlad")
"""

#: ``vlad ARGS`` in a process whose N-th rename of a finished hidden file
#: onto an output fails with an I/O error (EIO), as a failing disk does.
FAILING_AT_RENAME = """
    import errno, os, sys
    failing, rename, renamed = int(sys.argv[1]), os.replace, []
    def replace(source, target, **options):
        if str(source).endswith(".tmp"):
            renamed.append(source)
            if len(renamed) == failing:
                raise OSError(errno.EIO, os.strerror(errno.EIO), source)
        return rename(source, target, **options)
    os.replace = replace
    from vlad.cli._main import main
    main(sys.argv[2:], prog_name="vlad")
"""

FAST = ("--max-side", 128, "-q", "--overwrite")
PHOTO = DATA / "chelsea.jpg"
#: The commands signalled at the rename (they share their writes).
COMMANDS = ["encode", "fit", "extract"]


def commands(codebook_path, folder):
    return {
        "encode": ("encode", PHOTO, "-c", codebook_path, "-o", folder / "v.npy", *FAST),
        "fit": ("fit", PHOTO, "--n-clusters", 2, "-o", folder / "c.npz", *FAST),
        "extract": ("extract", PHOTO, "-o", folder / "d.npz", *FAST),
    }


def run_signalled(sent: str, *args) -> subprocess.CompletedProcess:
    script = textwrap.dedent(SIGNALLED_AT_RENAME)
    return subprocess.run(
        [sys.executable, "-c", script, sent, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
    )


def run_failing(failing: int, *args) -> subprocess.CompletedProcess:
    script = textwrap.dedent(FAILING_AT_RENAME)
    return subprocess.run(
        [sys.executable, "-c", script, str(failing), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
    )


def outputs(folder) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(folder.iterdir())}


# Two runs each, seconds: these and the kills below run with the slow tests.
# The default run kills a shard at the rename (the last test here) and sees
# SIGTERM cleaned up in test_faults.py and test_replaced_folders.py.
@pytest.mark.slow
@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize(("sent", "status"), [("SIGTERM", 143), ("SIGINT", 130)])
def test_sigterm_and_ctrl_c_between_link_and_rename_leave_no_temporary(
    tmp_path, codebook_path, command, sent, status
):
    args = commands(codebook_path, tmp_path)[command]
    first = subprocess.run(
        [sys.executable, "-m", "vlad", *map(str, args)], capture_output=True
    )
    assert first.returncode == 0, first.stderr
    before = outputs(tmp_path)
    result = run_signalled(sent, *args)
    check_no_traceback(result.stderr)
    assert result.returncode == status, result.stderr
    assert temporary_files(tmp_path) == []
    # The output is the earlier one, or (for vectors, whose .npy goes last
    # and whose old one is removed first) lacks its .npy.
    assert outputs(tmp_path).items() <= before.items()
    record("clear error")


@pytest.mark.slow
@pytest.mark.parametrize("command", COMMANDS)
def test_the_next_run_removes_what_sigkill_left_between_link_and_rename(
    tmp_path, codebook_path, command
):
    args = commands(codebook_path, tmp_path)[command]
    killed = run_signalled("SIGKILL", *args)
    assert killed.returncode == -signal.SIGKILL
    left = temporary_files(tmp_path)
    assert len(left) == 1 and f".{os.getpid()}." not in left[0]
    result = subprocess.run(
        [sys.executable, "-m", "vlad", *map(str, args)], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert temporary_files(tmp_path) == []
    record("handled")


def test_a_live_writers_temporary_is_kept_and_an_old_one_removed(tmp_path):
    target = tmp_path / "v.npy"
    live = tmp_path / f".v.npy.{os.getppid()}.0123abcd.tmp"
    old = tmp_path / f".v.npy.{os.getppid()}.4567cdef.tmp"
    unrelated = tmp_path / ".w.npy.99999999.0123abcd.tmp"
    for path in (live, old, unrelated):
        path.write_bytes(b"partial")
    day_and_more = time.time() - writing.STALE_AFTER - 60
    os.utime(old, (day_and_more, day_and_more))
    with atomic_write(target) as handle:
        handle.write(b"whole")
    assert temporary_files(tmp_path) == sorted([live.name, unrelated.name])
    assert target.read_bytes() == b"whole"


@pytest.mark.parametrize("unnamed", [True, False])
def test_a_failed_rename_is_an_error_and_leaves_no_temporary(
    tmp_path, monkeypatch, unnamed
):
    """An I/O error renaming the finished file onto its target: an error
    naming the target, the old file in place, no temporary file."""
    target = tmp_path / "v.bin"
    target.write_bytes(b"old")
    if not unnamed:
        monkeypatch.setattr(writing, "_unnamed_file", lambda folder: None)
    rename = os.replace

    def failing_once(source, destination, **options):
        monkeypatch.setattr(writing.os, "replace", rename)
        raise OSError(errno.EIO, os.strerror(errno.EIO), source)

    monkeypatch.setattr(writing.os, "replace", failing_once)
    with pytest.raises(OSError, match="Input/output error") as raised:
        with atomic_write(target) as handle:
            handle.write(b"new")
    assert str(target) in str(raised.value)
    assert target.read_bytes() == b"old"
    assert temporary_files(tmp_path) == []
    record("clear error")


def test_a_codebook_saved_onto_a_folder_leaves_no_temporary(tmp_path):
    (tmp_path / "c.npz").mkdir()
    codebook = vlad.Codebook(np.eye(2, dtype=np.float32))
    with pytest.raises(IsADirectoryError, match="c.npz"):
        codebook.save(tmp_path / "c.npz", overwrite=True)
    assert sorted(os.listdir(tmp_path)) == ["c.npz"]
    assert os.listdir(tmp_path / "c.npz") == []
    record("clear error")


def test_a_folder_of_shards_resumes_after_sigkill_between_link_and_rename(tmp_path):
    """The hidden file of a shard killed between link and rename is removed
    by --resume, which would otherwise refuse a folder holding other files
    than shards."""
    args = ("extract", PHOTO, "-o", tmp_path / "d", "--shard-images", 1, *FAST)
    killed = run_signalled("SIGKILL", *args)
    assert killed.returncode == -signal.SIGKILL
    assert len(temporary_files(tmp_path / "d")) == 1
    resumed = subprocess.run(
        [sys.executable, "-m", "vlad", *map(str, args[:-1]), "--resume"],
        capture_output=True,
        text=True,
    )
    assert resumed.returncode == 0, resumed.stderr
    assert temporary_files(tmp_path / "d") == []
    assert (tmp_path / "d" / "manifest.json").is_file()
    record("handled")


# The three renames of a vectors set (names, record, vectors), one process
# each: with the slow tests. The default run fails each rename in this
# process, below.
@pytest.mark.slow
@pytest.mark.parametrize("failing", [1, 2, 3])
def test_an_io_error_among_the_renames_keeps_the_previous_vectors(
    tmp_path, codebook_path, failing
):
    """``vlad encode --overwrite`` whose N-th rename fails: one line, and the
    previous set whole (it used to lose its vectors.npy, removed first)."""
    names = ["old-a.jpg", "old-b.jpg"]
    vlad.save_vectors(tmp_path / "v.npy", np.eye(2, 4), names, {"run": "old"})
    before = outputs(tmp_path)
    result = run_failing(failing, *commands(codebook_path, tmp_path)["encode"])
    check_no_traceback(result.stderr)
    assert result.returncode == 1, result.stderr
    assert_one_line_error(result.stderr, "Input/output error", str(tmp_path))
    assert outputs(tmp_path) == before
    assert vlad.load_vectors(tmp_path / "v.npy")[1] == names


@pytest.mark.parametrize("unnamed", [True, False])
@pytest.mark.parametrize("failing", [1, 2, 3])
def test_a_failed_rename_of_a_set_puts_every_old_file_back(
    tmp_path, monkeypatch, unnamed, failing
):
    """The same in this process, for each rename and both kinds of temporary
    file."""
    targets = [tmp_path / name for name in ("a.txt", "b.txt", "c.txt")]
    for target in targets:
        target.write_bytes(b"old " + target.name.encode())
    if not unnamed:
        monkeypatch.setattr(writing, "_unnamed_file", lambda folder: None)
    rename, renamed = os.replace, []

    def failing_rename(source, destination, **options):
        if str(source).endswith(".tmp"):
            renamed.append(source)
            if len(renamed) == failing:
                raise OSError(errno.EIO, os.strerror(errno.EIO), source)
        return rename(source, destination, **options)

    monkeypatch.setattr(writing.os, "replace", failing_rename)
    with pytest.raises(OSError, match="Input/output error") as raised:
        with atomic_writes(*targets) as handles:
            for handle in handles:
                handle.write(b"new")
    assert str(targets[failing - 1]) in str(raised.value)
    assert [target.read_bytes() for target in targets] == [
        b"old " + target.name.encode() for target in targets
    ]
    assert temporary_files(tmp_path) == []
    record("clear error")


def test_a_new_set_that_fails_to_move_in_leaves_none_of_its_files(
    tmp_path, monkeypatch
):
    """Without a previous set, the files moved in before the failure go."""
    targets = [tmp_path / name for name in ("a.txt", "b.txt", "c.txt")]

    def failing_onto(move):
        def moved(source, destination, **options):
            if str(destination) == str(targets[1]):
                raise OSError(errno.EIO, os.strerror(errno.EIO), destination)
            return move(source, destination, **options)

        return moved

    for name in ("link", "replace"):
        monkeypatch.setattr(writing.os, name, failing_onto(getattr(os, name)))
    with pytest.raises(OSError, match="Input/output error"):
        with atomic_writes(*targets, overwrite=False) as handles:
            for handle in handles:
                handle.write(b"new")
    assert sorted(os.listdir(tmp_path)) == []
    record("clear error")


def test_ctrl_c_at_every_rename_of_a_set_puts_every_old_file_back(
    tmp_path, monkeypatch
):
    """Ctrl-C at each rename of a finished file, those that put the old files
    back included: the first interrupts the replacement, the others wait
    until the old files are back."""
    targets = [tmp_path / name for name in ("a.txt", "b.txt", "c.txt")]
    for target in targets:
        target.write_bytes(b"old")
    rename = os.replace

    def interrupted_rename(source, destination, **options):
        if str(source).endswith(".tmp"):
            os.kill(os.getpid(), signal.SIGINT)
        return rename(source, destination, **options)

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    monkeypatch.setattr(writing.os, "replace", interrupted_rename)
    try:
        with pytest.raises(KeyboardInterrupt):
            with atomic_writes(*targets) as handles:
                for handle in handles:
                    handle.write(b"new")
    finally:
        signal.signal(signal.SIGINT, previous)
    assert [target.read_bytes() for target in targets] == [b"old"] * 3
    assert temporary_files(tmp_path) == []
    record("clear error")
