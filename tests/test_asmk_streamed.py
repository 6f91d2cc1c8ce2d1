"""An ASMK index folder written a part of the descriptors at a time, in
segments merged at the end: the same lists and results as the index built in
memory, whatever the bound on the entries held."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import numpy as np
import pytest
from photos import DATA, FAST_OPTIONS

import vlad
from vlad.asmk import build_asmk_index, load_asmk_index, write_asmk_index
from vlad.pipeline import extract_images_to_folder


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    """The bundled photos' descriptors in shards of three images, the same
    in memory, and a codebook of 32 words."""
    folder = tmp_path_factory.mktemp("streamed") / "descriptors"
    sharded = extract_images_to_folder(
        DATA, folder, FAST_OPTIONS, n_jobs=1, shard_images=3
    )
    sets = sharded.between(0, len(sharded))
    return sharded, sets, vlad.fit_codebook(sets, 32, n_jobs=1)


@pytest.mark.parametrize(
    ("segment_entries", "settings"),
    [
        (1, {}),
        pytest.param(100, {"idf": True}, marks=pytest.mark.slow),
        pytest.param(250, {"binary": False}, marks=pytest.mark.slow),
        pytest.param(10**9, {}, marks=pytest.mark.slow),
    ],
)
def test_written_in_segments_as_built_in_memory(
    shards, tmp_path, segment_entries, settings
):
    sharded, sets, codebook = shards
    whole = build_asmk_index(sets, codebook, **settings)
    written = write_asmk_index(
        sharded, codebook, tmp_path / "index", segment_entries=segment_entries,
        **settings,
    )  # fmt: skip
    assert written.n_segments == 1 and written.names == whole.names
    for name in ("word_offsets", "entry_images", "codes"):
        np.testing.assert_array_equal(getattr(written, name), getattr(whole, name))
    record = json.loads((tmp_path / "index" / "index.json").read_text())
    assert record["idf"] == bool(settings.get("idf"))
    left = sorted(path.name for path in (tmp_path / "index").iterdir())
    assert left[-1 if not settings.get("idf") else -2].startswith("segment-")
    assert len([name for name in left if name.startswith("segment-")]) == 1
    loaded = load_asmk_index(tmp_path / "index")
    found, expected = loaded.search(sets, 4), whole.search(sets, 4)
    assert found.rankings() == expected.rankings()
    for ours, theirs in zip(found, expected, strict=True):
        np.testing.assert_allclose(ours.scores, theirs.scores, rtol=1e-6)


def test_names_and_existing_folders_are_checked_before_anything_is_kept(
    shards, tmp_path
):
    sharded, _, codebook = shards
    with pytest.raises(ValueError, match="3 names for 8 images"):
        write_asmk_index(sharded, codebook, tmp_path / "index", names=["a", "b", "c"])
    assert not (tmp_path / "index").exists()
    assert not list(tmp_path.iterdir())
    (tmp_path / "index").mkdir()
    with pytest.raises(FileExistsError):
        write_asmk_index(sharded, codebook, tmp_path / "index")
    names = [f"image-{position}" for position in range(len(sharded))]
    written = write_asmk_index(
        sharded, codebook, tmp_path / "index", names=names, overwrite=True,
        segment_entries=50,
    )  # fmt: skip
    assert written.names == names


#: A process that builds the index of the shards at argv[1] into argv[2], a
#: segment per shard, and is killed (SIGKILL) as it starts to read the third
#: shard: after its first two segments were written and recorded.
KILLED_BUILD = """
import os, signal, sys
import vlad
from vlad.formats import open_descriptor_shards
from vlad.asmk import write_asmk_index

class KilledAtTheThirdShard:
    def __init__(self, sets):
        self.sets = sets
    def __getattr__(self, name):
        return getattr(self.sets, name)
    def __len__(self):
        return len(self.sets)
    def shard(self, number):
        if number == 2:
            os.kill(os.getpid(), signal.SIGKILL)
        return self.sets.shard(number)

sets = KilledAtTheThirdShard(open_descriptor_shards(sys.argv[1]))
write_asmk_index(sets, vlad.Codebook.load(sys.argv[3]), sys.argv[2], segment_entries=1)
"""


def test_a_killed_build_resumes_from_its_last_segment(shards, tmp_path):
    sharded, sets, codebook = shards
    codebook.save(tmp_path / "codebook.npz")
    killed = subprocess.run(
        [sys.executable, "-c", KILLED_BUILD, str(sharded.folder),
         str(tmp_path / "index"), str(tmp_path / "codebook.npz")],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert not (tmp_path / "index").exists()
    building = tmp_path / ".index.building"
    progress = json.loads((building / "building.json").read_text())
    assert progress["n_images"] == 6 and len(progress["segments"]) == 2
    # Another codebook, or other images, are refused; nothing is lost.
    other = vlad.Codebook(codebook.centers[::-1].copy())
    with pytest.raises(ValueError, match="with another codebook"):
        write_asmk_index(sharded, other, tmp_path / "index", resume=True)
    renamed = [f"other-{position}" for position in range(len(sharded))]
    with pytest.raises(ValueError, match="from other descriptors"):
        write_asmk_index(sharded, codebook, tmp_path / "index", names=renamed,
                         resume=True)  # fmt: skip
    with pytest.raises(ValueError, match="with other settings"):
        write_asmk_index(sharded, codebook, tmp_path / "index", resume=True, alpha=2)
    assert json.loads((building / "building.json").read_text()) == progress
    # The first two shards are not read again.
    read = []
    original = type(sharded).shard

    def counted(self, number):
        read.append(number)
        return original(self, number)

    type(sharded).shard = counted
    try:
        written = write_asmk_index(sharded, codebook, tmp_path / "index",
                                   resume=True, segment_entries=1)  # fmt: skip
    finally:
        type(sharded).shard = original
    assert read == [2]
    assert not building.exists()
    whole = build_asmk_index(sets, codebook)
    assert written.names == whole.names and written.n_segments == 1
    for name in ("word_offsets", "entry_images", "codes"):
        np.testing.assert_array_equal(getattr(written, name), getattr(whole, name))
    assert load_asmk_index(tmp_path / "index").n_images == len(sets)


def test_without_resume_a_build_starts_again(shards, tmp_path):
    sharded, sets, codebook = shards
    building = tmp_path / ".index.building"
    building.mkdir()
    (building / "left.npy").write_bytes(b"left by another build")
    written = write_asmk_index(sharded, codebook, tmp_path / "index")
    assert written.n_images == len(sets) and not building.exists()
    assert not (tmp_path / "index" / "left.npy").exists()


def test_a_second_build_of_the_same_index_is_refused(shards, tmp_path):
    fcntl = pytest.importorskip("fcntl")
    sharded, _, codebook = shards
    building = tmp_path / ".index.building"
    building.mkdir()
    holder = os.open(building, os.O_RDONLY)
    try:
        fcntl.flock(holder, fcntl.LOCK_EX)
        with pytest.raises(ValueError, match="another process is building .*index"):
            write_asmk_index(sharded, codebook, tmp_path / "index", resume=True)
    finally:
        os.close(holder)
    assert not (tmp_path / "index").exists()
