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
from hostile.conftest import check_no_traceback, record, run_vlad
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
