"""An ASMK index appended to or merged by a process killed (SIGKILL) at each
step: the index is whole, as it was before or after, and the next append
removes what the killed one left."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from asmk_reference import random_problem

import vlad
from vlad.asmk import append_asmk_index, build_asmk_index, load_asmk_index

#: ``vlad ARGS`` in a process that kills itself (SIGKILL) the Nth time it
#: reaches STEP of a change to an index: ``commit`` (its new files written,
#: index.json not yet replaced) or ``cleanup`` (index.json replaced, the old
#: files not yet removed). ``--append --merge`` makes two changes.
KILLED = """
    import os, signal, sys
    import vlad.asmk._updates as updates
    step, nth = sys.argv[1], int(sys.argv[2])
    name = {"commit": "_commit", "cleanup": "_remove_unreferenced"}[step]
    original, calls = getattr(updates, name), []
    def killed(*args, **kwargs):
        calls.append(step)
        if len(calls) == nth:
            os.kill(os.getpid(), signal.SIGKILL)
        return original(*args, **kwargs)
    setattr(updates, name, killed)
    from vlad.cli._main import main
    main(sys.argv[3:], prog_name="vlad")
"""

pytestmark = pytest.mark.slow


@pytest.fixture
def index_and_more(tmp_path):
    """An index of three images in two segments, idf weighted, and the
    descriptors of two more."""
    centers, database, _ = random_problem(30, 8, [6, 4, 7, 5, 8])
    codebook = vlad.Codebook(centers)
    names = [f"{position}.jpg" for position in range(5)]
    index = build_asmk_index(database[:2], codebook, names=names[:2], idf=True)
    index.add(database[2:3], names=names[2:3])
    index.save(tmp_path / "index")
    more = vlad.DescriptorSets.from_list(database[3:], names[3:])
    more.save(tmp_path / "more.npz")
    return tmp_path, database, codebook, names


def killed_at(step: str, nth: int, folder, *arguments):
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(KILLED), step, str(nth)]
        + [str(argument) for argument in arguments],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=120,
    )


def state(folder) -> tuple[list[str], int]:
    index = load_asmk_index(folder / "index")
    return index.names, index.n_segments


def assert_searches_as(folder, database, codebook, names, n_images):
    queries = [image + 0.01 for image in database[:2]]
    expected = build_asmk_index(
        database[:n_images], codebook, names=names[:n_images], idf=True
    ).search(queries, k=5)
    found = load_asmk_index(folder / "index").search(queries, k=5)
    assert found.rankings() == expected.rankings()
    for ours, theirs in zip(found, expected, strict=True):
        np.testing.assert_allclose(ours.scores, theirs.scores, rtol=1e-6)


@pytest.mark.parametrize(("step", "images_after"), [("commit", 3), ("cleanup", 5)])
def test_a_killed_append_leaves_the_index_whole(index_and_more, step, images_after):
    folder, database, codebook, names = index_and_more
    append = ("index", "more.npz", "--method", "asmk", "--append", "-o", "index")
    killed = killed_at(step, 1, folder, *append)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert state(folder) == (names[:images_after], 2 if step == "commit" else 3)
    assert_searches_as(folder, database, codebook, names, images_after)
    # What the killed append left (its segment, or the replaced
    # self-similarities) is there until the next change removes it.
    left = sorted(path.name for path in (folder / "index").iterdir())
    assert "segment-00002" in left
    assert len([name for name in left if name.startswith("self-")]) == 2
    grown = append_asmk_index(folder / "index", [database[0]], names=["again.jpg"])
    assert grown.n_images == images_after + 1
    left = sorted(path.name for path in (folder / "index").iterdir())
    assert [name for name in left if name.startswith("self-")] == [
        f"self-similarities-{grown.n_segments - 1:05d}.npy"
    ]
    record = json.loads((folder / "index" / "index.json").read_text())
    assert [name for name in left if name.startswith("segment-")] == [
        entry["folder"] for entry in record["segments"]
    ]


@pytest.mark.parametrize("step", ["commit", "cleanup"])
def test_a_killed_merge_leaves_the_index_whole(index_and_more, step):
    folder, database, codebook, names = index_and_more
    merge = ("index", "more.npz", "--method", "asmk", "--append", "--merge",
             "-o", "index")  # fmt: skip
    # The append completes; the merge after it is killed.
    killed = killed_at(step, 2, folder, *merge)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert state(folder) == (names, 3 if step == "commit" else 1)
    assert_searches_as(folder, database, codebook, names, 5)
    append_asmk_index(folder / "index", [database[0]], names=["again.jpg"])
    record = json.loads((folder / "index" / "index.json").read_text())
    left = sorted(
        path.name for path in (folder / "index").iterdir()
        if path.name.startswith("segment-")
    )  # fmt: skip
    assert left == [entry["folder"] for entry in record["segments"]]
