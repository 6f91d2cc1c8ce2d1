"""Faults around a real ``vlad encode``: SIGKILL at random points, SIGTERM and
Ctrl-C, a full disk, a read-only output folder, two writers on one output.

After each, the output is either absent or complete and valid, no temporary
file is left, and what the program reports is one line with the right exit
status: 1 for an error, 130 interrupted, 143 terminated.
"""

from __future__ import annotations

import os
import resource
import shutil
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
from photos import DATA

import vlad
from hostile.conftest import (
    assert_one_line_error,
    assert_valid_vectors,
    check_no_traceback,
    privileges_dropped,
    record,
    run_vlad,
    temporary_files,
)
from hostile.makers import encoded
from vlad.core._files import atomic_writes

#: Images x descriptors of the descriptors file encoded under fire: with 64
#: centres, 1500 x 8192 float32 vectors (49 MB), so that writing takes a while.
N_IMAGES, N_DESCRIPTORS, N_CLUSTERS = 1500, 20, 64


def write_job(folder, n_images: int):
    """A descriptors file of ``n_images`` images and a 64-centre codebook in
    ``folder``."""
    rng = np.random.default_rng(0)
    descriptors = rng.random((n_images, N_DESCRIPTORS, 128), dtype=np.float32)
    np.save(folder / "descriptors.npy", descriptors)
    centers = descriptors.reshape(-1, 128)[:: n_images * N_DESCRIPTORS // N_CLUSTERS]
    vlad.Codebook(centers).save(folder / "codebook.npz")
    return folder


@pytest.fixture(scope="module")
def big_job(tmp_path_factory):
    """A descriptors file and a codebook whose encoding writes 49 MB, and how
    long one run takes here."""
    folder = write_job(tmp_path_factory.mktemp("big-job"), N_IMAGES)
    output = folder / "timing" / "vectors.npy"
    output.parent.mkdir()
    start = time.perf_counter()
    result = run_vlad(*encode_args(folder, output))
    duration = time.perf_counter() - start
    assert result.returncode == 0, result.stderr
    return folder, duration


@pytest.fixture(scope="module")
def small_job(tmp_path_factory):
    """A descriptors file and a codebook whose encoding writes 3.3 MB: more
    than the full disks below hold."""
    return write_job(tmp_path_factory.mktemp("small-job"), 100)


def encode_args(folder, output, *more):
    return (
        "encode",
        folder / "descriptors.npy",
        "-c",
        folder / "codebook.npz",
        "-o",
        output,
        "-q",
        *more,
    )


def start_vlad(*args, **options) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "vlad", *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **options,
    )


def assert_absent_or_complete(output) -> str:
    """The output of an interrupted run: absent (no vectors file; names and
    record may have been moved in before it) or complete and valid."""
    assert temporary_files(output.parent) == []
    if output.exists():
        report = assert_valid_vectors(output)
        assert report["n_images"] == N_IMAGES
        return "complete"
    return "absent"


def kill_at(big_job, tmp_path, delay: float) -> str:
    folder, _ = big_job
    output = tmp_path / f"killed-{delay:.3f}" / "vectors.npy"
    output.parent.mkdir()
    process = start_vlad(*encode_args(folder, output))
    time.sleep(delay)
    process.send_signal(signal.SIGKILL)
    process.communicate()
    return assert_absent_or_complete(output)


#: Random points run with the slow tests, beside
#: test_sigkill_at_many_points_around_the_write (the big job takes seconds to
#: make and to run); the default run kills between link and rename
#: (test_temporaries.py) and while a folder is replaced
#: (test_replaced_folders.py).
@pytest.mark.slow
@pytest.mark.parametrize("seed", range(4))
def test_sigkill_at_a_random_point_leaves_nothing_half_done(big_job, tmp_path, seed):
    _, duration = big_job
    delay = np.random.default_rng(seed).uniform(0.05, 1.2 * duration)
    kill_at(big_job, tmp_path, delay)
    record("handled")


@pytest.mark.slow
def test_sigkill_at_many_points_around_the_write(big_job, tmp_path):
    """Forty kills over the last third of the run, where the files are
    written: each leaves the output absent or complete."""
    _, duration = big_job
    outcomes = [
        kill_at(big_job, tmp_path, delay)
        for delay in np.linspace(0.66 * duration, 1.1 * duration, 40)
    ]
    assert "complete" in outcomes
    record("handled", len(outcomes))


def _wait_for_work(process: subprocess.Popen) -> list[str]:
    """Read stderr until the command says it starts describing images (so
    that it is past start-up and inside the command)."""
    lines = []
    for line in process.stderr:
        lines.append(line)
        if line.startswith("descriptors:"):
            return lines
    raise AssertionError("".join(lines))


@pytest.mark.parametrize(
    ("sent", "status", "said"),
    [
        (signal.SIGTERM, 143, "terminated"),
        # Ctrl-C takes the same path; it runs with the slow tests.
        pytest.param(
            signal.SIGINT,
            130,
            "interrupted; outputs written before are kept, the one being written "
            "was removed",
            marks=pytest.mark.slow,
        ),
    ],
)
def test_sigterm_and_ctrl_c_clean_up_and_exit_with_their_status(
    tmp_path, codebook_path, sent, status, said
):
    output = tmp_path / "vectors.npy"
    # Full-size images on one thread: seconds of work to interrupt.
    process = start_vlad(
        "encode",
        DATA,
        "-c",
        codebook_path,
        "-o",
        output,
        "-v",
        "--max-side",
        0,
        "-j",
        1,
    )
    _wait_for_work(process)
    process.send_signal(sent)
    _, stderr = process.communicate(timeout=60)
    check_no_traceback(stderr)
    assert process.returncode == status, stderr
    assert stderr.rstrip().splitlines()[-1] == said
    assert sorted(path.name for path in tmp_path.iterdir()) == []
    record("clear error")


def _limit_file_size():
    """In the child: files may not grow past 1 MB (writes fail with EFBIG
    instead of the process being killed by SIGXFSZ)."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))


def test_a_full_disk_is_one_line_and_leaves_no_file(small_job, tmp_path):
    folder = small_job
    output = tmp_path / "vectors.npy"
    result = run_vlad(*encode_args(folder, output), preexec_fn=_limit_file_size)
    assert result.returncode == 1
    assert_one_line_error(result.stderr, f"cannot write {tmp_path}", "File too large")
    assert sorted(path.name for path in tmp_path.iterdir()) == []


FALLBACK_WRITE = """
    import os, signal, resource, sys
    import numpy as np
    import vlad.core._writing as writing
    # The hidden temporary files of systems without O_TMPFILE.
    writing._unnamed_file = lambda folder: None
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))
    from vlad.formats._vectors import save_vectors
    names = [str(i) for i in range(100)]
    try:
        save_vectors(sys.argv[1], np.ones((100, 8192)), names, {})
    except OSError as error:
        print(error)
"""


def test_a_full_disk_leaves_no_hidden_temporary_file_either(tmp_path):
    """Where files must be named while written: the clean-up's close fails
    on the full disk again, and the file is still removed."""
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(FALLBACK_WRITE), tmp_path / "v.npy"],
        capture_output=True,
        text=True,
    )
    check_no_traceback(result.stderr)
    assert result.stdout.strip().endswith("v.npy: File too large")
    assert sorted(path.name for path in tmp_path.iterdir()) == []
    record("clear error")


# A real full disk, seconds: the default run fills a disk by a file size limit
# in test_a_full_disk_is_one_line_and_leaves_no_file above.
@pytest.mark.slow
def test_a_full_tmpfs(small_job, tmp_path):
    """A real full disk (ENOSPC): a 2 MB tmpfs, mounted in a private mount
    namespace (needs root and unshare)."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("mounting a small tmpfs needs root and unshare")
    folder = small_job
    mount = tmp_path / "small"
    mount.mkdir()
    command = " ".join(
        [sys.executable, "-m", "vlad", *map(str, encode_args(folder, mount / "v.npy"))]
    )
    script = (
        f"mount -t tmpfs -o size=2m tmpfs {mount} || exit 99; {command}; "
        f"echo status=$?; ls -A {mount}"
    )
    result = subprocess.run(
        ["unshare", "-m", "sh", "-c", script], capture_output=True, text=True
    )
    if "status=" not in result.stdout:
        pytest.skip(f"cannot mount a tmpfs here: {result.stderr.strip()}")
    check_no_traceback(result.stderr)
    assert result.stdout.split() == ["status=1"]  # and ls printed nothing
    error = assert_one_line_error(result.stderr, "cannot write")
    assert "No space left on device" in error or "Not enough free space" in error


def test_a_read_only_output_folder_is_refused_before_any_work(open_folder):
    switch = privileges_dropped()
    photos = open_folder / "photos"
    photos.mkdir()
    (photos / "a.jpg").write_bytes(encoded(".jpg"))
    (photos / "cut.jpg").write_bytes(encoded(".jpg")[:500])
    out = open_folder / "out"
    out.mkdir()
    out.chmod(0o555)
    result = run_vlad("extract", photos, "-o", out / "d.npz", **switch)
    assert result.returncode == 1
    assert_one_line_error(result.stderr, f"cannot write in {out}", "Permission denied")
    assert "cut.jpg" not in result.stderr  # no image was read
    assert list(out.iterdir()) == []


# Seconds: two runs of the big job at once.
@pytest.mark.slow
def test_two_writers_on_one_output_never_replace_each_other(big_job, tmp_path):
    folder, _ = big_job
    output = tmp_path / "vectors.npy"
    processes = [start_vlad(*encode_args(folder, output)) for _ in range(2)]
    results = [(process.wait(), process.communicate()[1]) for process in processes]
    statuses = sorted(status for status, _ in results)
    assert statuses == [0, 1], results
    [loser] = [stderr for status, stderr in results if status == 1]
    assert_one_line_error(loser, str(output.parent))
    assert "exists" in loser or "appeared while it was being written" in loser
    assert assert_absent_or_complete(output) == "complete"


def test_a_file_that_appears_while_writing_is_not_replaced(tmp_path):
    first, second, third = (tmp_path / name for name in ("a.txt", "b.txt", "c.txt"))
    with pytest.raises(
        FileExistsError,
        match=r"appeared while it was being written .*; it was not replaced: pass "
        r"overwrite=True \(--overwrite\) to replace it$",
    ):
        with atomic_writes(first, second, third, overwrite=False) as handles:
            for handle in handles:
                handle.write(b"ours")
            second.write_bytes(b"theirs")
    assert second.read_bytes() == b"theirs"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["b.txt"]
    record("clear error")
