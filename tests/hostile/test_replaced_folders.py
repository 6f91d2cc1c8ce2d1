"""``vlad index --overwrite`` under fire: the index path holds a whole index,
the old or the new, whatever signal comes between the moves, and hidden
folders a SIGKILL leaves are removed by the next run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import vlad
import vlad.formats._folders as folders
from hostile.conftest import (
    assert_one_line_error,
    check_no_traceback,
    record,
    run_vlad,
)
from vlad.formats._folders import remove_stale_folders, replace_folder

#: ``vlad ARGS`` in a process that sends itself SIGNAL at a point of the
#: replacement: just after the first move of the old index (HOW=aside, with
#: the two-step replacement of systems without an atomic swap), or when the
#: first folder is removed (HOW=remove: after the new index is in place),
#: once.
SIGNALLED = """
    import os, shutil, signal, sys
    import vlad.formats._folders as folders
    how, sent, index = sys.argv[1], getattr(signal, sys.argv[2]), sys.argv[3]
    if how == "aside":
        folders._exchange = lambda first, second: False
        rename = os.replace
        def replace(source, target, **options):
            rename(source, target, **options)
            if os.fspath(source) == index:
                os.kill(os.getpid(), sent)
        os.replace = replace
    else:
        remove = shutil.rmtree
        def rmtree(path, *args, **options):
            shutil.rmtree = remove
            os.kill(os.getpid(), sent)
            remove(path, *args, **options)
        shutil.rmtree = rmtree
    from vlad.cli._main import main
    main(sys.argv[4:], prog_name="vlad")
"""


#: ``vlad ARGS`` in a process where another ``vlad index WINNER...`` writes
#: the same index folder in the instant between the end of this one's
#: writing and its rename into place (two runs without --overwrite).
OVERTAKEN = """
    import contextlib, subprocess, sys
    import vlad.asmk._segment_files as asmk_files
    import vlad.search._index as vector_index
    split = sys.argv.index("--")
    winner, args = sys.argv[1:split], sys.argv[split + 1 :]
    for module in (vector_index, asmk_files):
        @contextlib.contextmanager
        def overtaken(path, *, overwrite=False, replace=module.replace_folder):
            with replace(path, overwrite=overwrite) as folder:
                yield folder
                subprocess.run([sys.executable, "-m", "vlad", *winner], check=True)
        module.replace_folder = overtaken
    # An ASMK build holds its own folder's lock: the winner is built beside
    # and renamed to the output in the instant before the loser's rename.
    import os
    import vlad.asmk._streamed as asmk_streamed
    def overtaken_move(folder, path, *, overwrite=False,
                       move=asmk_streamed.move_into_place):
        beside = str(path) + "-winner"
        subprocess.run([sys.executable, "-m", "vlad", *winner[:-1], beside],
                       check=True)
        os.rename(beside, path)
        move(folder, path, overwrite=overwrite)
    asmk_streamed.move_into_place = overtaken_move
    from vlad.cli._main import main
    main(args, prog_name="vlad")
"""


@pytest.fixture
def indexed(tmp_path):
    """An index of four vectors named old-*, and vectors named new-* to
    replace it with."""
    for kind in ("old", "new"):
        names = [f"{kind}-{i}.jpg" for i in range(4)]
        vlad.save_vectors(tmp_path / f"{kind}.npy", np.eye(4), names, {})
    built = run_vlad("index", tmp_path / "old.npy", "-o", tmp_path / "index")
    assert built.returncode == 0, built.stderr
    return tmp_path


def index_names(folder) -> list[str]:
    return json.loads((folder / "index" / "names.json").read_text())


def hidden(folder) -> list[str]:
    return sorted(name for name in os.listdir(folder) if name.startswith("."))


def run_signalled(how: str, sent: str, folder) -> subprocess.CompletedProcess:
    index = folder / "index"
    args = ("index", folder / "new.npy", "-o", index, "--overwrite")
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(SIGNALLED), how, sent, index, *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


# SIGINT takes the same path as SIGTERM; it runs with the slow tests, as in
# test_temporaries.py.
@pytest.mark.parametrize(
    ("sent", "status"),
    [("SIGTERM", 143), pytest.param("SIGINT", 130, marks=pytest.mark.slow)],
)
def test_a_signal_between_the_moves_puts_the_old_index_back(indexed, sent, status):
    result = run_signalled("aside", sent, indexed)
    check_no_traceback(result.stderr)
    assert result.returncode == status, result.stderr
    assert index_names(indexed) == [f"old-{i}.jpg" for i in range(4)]
    assert hidden(indexed) == []
    record("clear error")


# The default run signals between the moves, above; this and the kills below
# (two runs each) run with the slow tests. The default run sees a kill's
# leftovers removed in test_temporaries.py.
@pytest.mark.slow
def test_a_signal_after_the_swap_leaves_the_new_index(indexed):
    result = run_signalled("remove", "SIGTERM", indexed)
    assert result.returncode == 143, result.stderr
    assert index_names(indexed) == [f"new-{i}.jpg" for i in range(4)]
    assert hidden(indexed) == []
    record("clear error")


@pytest.mark.slow
@pytest.mark.parametrize("how", ["aside", "remove"])
def test_the_next_run_removes_what_sigkill_left(indexed, how):
    killed = run_signalled(how, "SIGKILL", indexed)
    assert killed.returncode == -signal.SIGKILL
    assert hidden(indexed) != []
    if how == "remove":  # killed after the swap: the new index is whole
        assert index_names(indexed) == [f"new-{i}.jpg" for i in range(4)]
    again = run_vlad(
        "index", indexed / "old.npy", "-o", indexed / "index", "--overwrite"
    )
    assert again.returncode == 0, again.stderr
    assert index_names(indexed) == [f"old-{i}.jpg" for i in range(4)]
    assert hidden(indexed) == []
    record("handled")


def test_a_live_writers_folders_are_kept(tmp_path):
    """Hidden folders of a process that exists (this one's parent) stay;
    those of one that does not, go."""
    live = tmp_path / f".index.{os.getppid()}.abcd_123.partial"
    gone = tmp_path / ".index.999999999.abcd_123.old"
    for folder in (live, gone):
        folder.mkdir()
        (folder / "names.json").write_text("[]")
    assert remove_stale_folders(tmp_path / "index") == [gone]
    assert hidden(tmp_path) == [live.name]


def test_a_folder_replaced_in_process_keeps_nothing_hidden(tmp_path):
    for content in ("old", "new"):
        with replace_folder(tmp_path / "index", overwrite=True) as folder:
            (folder / "content.txt").write_text(content)
    assert (tmp_path / "index" / "content.txt").read_text() == "new"
    assert os.listdir(tmp_path) == ["index"]


@pytest.mark.parametrize("system", ["renameat2", "rename"])
def test_a_folder_written_meanwhile_is_never_replaced(tmp_path, monkeypatch, system):
    """Without overwrite, a folder that another writer puts at the path while
    the block runs stays whole; this writer's own folder goes. With
    ``renameat2(RENAME_NOREPLACE)`` and with ``os.rename`` (other systems)."""
    if system == "rename":
        monkeypatch.setattr(folders, "_renameat2", lambda *args: None)
    target = tmp_path / "index"
    with pytest.raises(FileExistsError, match="appeared while it was being written"):
        with replace_folder(target) as folder:
            (folder / "content.txt").write_text("loser")
            with replace_folder(target) as other:
                (other / "content.txt").write_text("winner")
    assert (target / "content.txt").read_text() == "winner"
    assert os.listdir(tmp_path) == ["index"]
    record("clear error")


def asmk_job(folder, kind: str) -> tuple:
    """``vlad index`` arguments of an ASMK index of two images named
    ``KIND-*``."""
    rng = np.random.default_rng(len(kind))
    arrays = [rng.random((5, 8), dtype=np.float32) for _ in range(2)]
    names = [f"{kind}-{i}.jpg" for i in range(2)]
    vlad.DescriptorSets.from_list(arrays, names).save(folder / f"{kind}.npz")
    if not (folder / "codebook.npz").exists():
        vlad.Codebook(rng.random((4, 8), dtype=np.float32)).save(
            folder / "codebook.npz"
        )
    return (
        "index",
        folder / f"{kind}.npz",
        "--method",
        "asmk",
        "-c",
        folder / "codebook.npz",
        "-o",
        folder / "index",
    )


def vector_job(folder, kind: str) -> tuple:
    """``vlad index`` arguments of a VLAD index of four images named
    ``KIND-*``."""
    names = [f"{kind}-{i}.jpg" for i in range(4)]
    vlad.save_vectors(folder / f"{kind}.npy", np.eye(4), names, {})
    return ("index", folder / f"{kind}.npy", "-o", folder / "index")


JOBS = {"vlad": vector_job, "asmk": asmk_job}
LOADERS = {"vlad": vlad.search.load_index, "asmk": vlad.asmk.load_asmk_index}


# Two processes each; ASMK's runs with the slow tests.
@pytest.mark.parametrize(
    "method", ["vlad", pytest.param("asmk", marks=pytest.mark.slow)]
)
def test_an_index_written_meanwhile_by_another_run_wins(tmp_path, method):
    """Two ``vlad index`` runs without --overwrite on one -o, the second to
    finish its writing renaming its folder first: the other ends with one
    line and leaves the winner's index whole (it used to replace it, and
    both exited 0)."""
    loser = JOBS[method](tmp_path, "loser")
    winner = JOBS[method](tmp_path, "winner")
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            textwrap.dedent(OVERTAKEN),
            *map(str, winner),
            "--",
            *map(str, loser),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    check_no_traceback(result.stderr)
    assert result.returncode == 1, result.stderr
    assert_one_line_error(
        result.stderr, str(tmp_path / "index"), "appeared while it was being written"
    )
    assert LOADERS[method](tmp_path / "index").names[0].startswith("winner-")
    assert hidden(tmp_path) == []


# Seconds: two runs at once, each indexing 80 MB of vectors.
@pytest.mark.slow
@pytest.mark.parametrize("method", ["vlad", "asmk"])
def test_two_runs_started_together_on_one_index(tmp_path, method):
    """Exactly one wins, whichever: the other ends with one line (refused
    at the start, or at the final rename), and the index is the winner's,
    whole."""
    if method == "vlad":
        names = [f"{i}.jpg" for i in range(20000)]
        vectors = np.random.default_rng(0).random((20000, 1024), dtype=np.float32)
        for kind in ("first", "second"):
            vlad.save_vectors(tmp_path / f"{kind}.npy", vectors, names, {"run": kind})
        jobs = [
            ("index", tmp_path / f"{kind}.npy", "-o", tmp_path / "index")
            for kind in ("first", "second")
        ]
    else:
        jobs = [JOBS[method](tmp_path, kind) for kind in ("first", "second")]
    processes = [
        subprocess.Popen(
            [sys.executable, "-m", "vlad", *map(str, job)],
            stderr=subprocess.PIPE,
            text=True,
        )
        for job in jobs
    ]
    results = [
        (process.wait(timeout=300), process.stderr.read()) for process in processes
    ]
    for process in processes:
        process.stderr.close()
    assert sorted(status for status, _ in results) == [0, 1], results
    [loser] = [stderr for status, stderr in results if status == 1]
    check_no_traceback(loser)
    assert_one_line_error(loser, str(tmp_path / "index"))
    index = LOADERS[method](tmp_path / "index")
    assert index.n_images == (20000 if method == "vlad" else 2)
    assert hidden(tmp_path) == []
