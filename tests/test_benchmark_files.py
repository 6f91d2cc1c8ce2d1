"""benchmarks.files: a file or a folder written by the benchmarks appears
whole or not at all; an existing folder is replaced only when asked."""

from __future__ import annotations

import pytest

from benchmarks.files import atomic_write, replace_folder

#: The benchmarks' own tests: a CI step of their own, not the default run.
pytestmark = pytest.mark.benchmarks


def test_a_file_appears_when_the_block_ends_well(tmp_path):
    path = tmp_path / "results.json"
    path.write_text("old")
    with atomic_write(path) as handle:
        handle.write(b"new")
        assert path.read_text() == "old"  # not yet
    assert path.read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.json"]


def test_a_failed_block_leaves_the_old_file_and_nothing_else(tmp_path):
    path = tmp_path / "results.json"
    path.write_text("old")
    with pytest.raises(KeyboardInterrupt), atomic_write(path) as handle:
        handle.write(b"half")
        raise KeyboardInterrupt
    assert path.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.json"]


def test_a_folder_takes_the_place_of_the_old_only_with_overwrite(tmp_path):
    out = tmp_path / "bench"
    with replace_folder(out) as partial:
        (partial / "a.txt").write_text("first")
        assert not out.exists()
    assert (out / "a.txt").read_text() == "first"
    with pytest.raises(FileExistsError, match="pass --overwrite"):
        with replace_folder(out):
            pass
    with replace_folder(out, overwrite=True) as partial:
        (partial / "b.txt").write_text("second")
    assert sorted(p.name for p in out.iterdir()) == ["b.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bench"]


def test_a_failed_folder_leaves_the_old_one(tmp_path):
    out = tmp_path / "bench"
    out.mkdir()
    (out / "kept.txt").write_text("old")
    with pytest.raises(RuntimeError), replace_folder(out, overwrite=True) as partial:
        (partial / "half.txt").write_text("new")
        raise RuntimeError("interrupted")
    assert sorted(p.name for p in out.iterdir()) == ["kept.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bench"]


def test_a_folder_that_appears_meanwhile_is_kept(tmp_path):
    out = tmp_path / "bench"
    with pytest.raises(FileExistsError, match="appeared meanwhile"):
        with replace_folder(out) as partial:
            (partial / "mine.txt").write_text("mine")
            out.mkdir()
            (out / "theirs.txt").write_text("theirs")
    assert sorted(p.name for p in out.iterdir()) == ["theirs.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bench"]
