"""The engine of folders of shards, run by a small kind of shard: what a run
writes, what a resumed run keeps and what it makes again."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
from shard_folders import folder_bytes

from vlad.formats._shards import MANIFEST_NAME
from vlad.pipeline._shard_runs import Shard, ShardKind, run_shards
from vlad.pipeline._sinks import FolderSink


class Squares(ShardKind):
    """Shards whose rows are ``[v, v * v]`` of their items, made by a plain
    loop, remembering which items each ``make`` was given."""

    noun = "vector"
    n_columns = 2
    shard_images = 3

    def __init__(self, tag: str = "a"):
        self.settings = {"tag": tag}
        self.made: list[list[int]] = []

    def identities(self, items):
        return list(items)

    def stream(self, items, n_jobs, progress):
        for done, item in enumerate(items, 1):
            if progress is not None:
                progress(done, len(items))
            yield item

    def make(self, results, n_items, key, n_jobs):
        values = list(itertools.islice(results, n_items))
        self.made.append(values)
        rows = np.array([[value, value * value] for value in values], np.float32)
        return Shard(rows, {"key": key, "names": [str(value) for value in values]})

    def manifest(self, run):
        return {"shards": [{"key": key} for key in run.keys]}

    def open(self, folder):
        return json.loads((folder / MANIFEST_NAME).read_text())

    def stack(self, shards):
        return np.concatenate([shard.array for shard in shards])

    def result(self, run, rows):
        return rows


def run(kind, folder, *, resume=False, progress=None):
    sink = FolderSink(folder, kind.noun, overwrite=False, resume=resume)
    return run_shards(kind, list(range(7)), sink, progress=progress)


def test_a_run_writes_each_shard_and_the_manifest_last(tmp_path):
    kind = Squares()
    manifest = run(kind, tmp_path / "s")
    assert kind.made == [[0, 1, 2], [3, 4, 5], [6]]
    rows = np.concatenate(
        [
            np.load(next((tmp_path / "s").glob(f"part-{i:05d}-*[0-9a-f].npy")))
            for i in range(3)
        ]
    )
    assert rows.tolist() == [[v, v * v] for v in range(7)]
    assert len(manifest["shards"]) == 3


def test_a_resumed_run_makes_only_the_missing_or_altered_shards(tmp_path):
    folder = tmp_path / "s"
    run(Squares(), folder)
    expected = folder_bytes(folder)
    (folder / MANIFEST_NAME).unlink()
    next(folder.glob("part-00000-*.json")).unlink()  # as if killed while writing
    altered = next(folder.glob("part-00002-*.npy"))
    altered.write_bytes(altered.read_bytes()[:-4] + b"\0\0\0\0")
    kind, done = Squares(), []
    run(kind, folder, resume=True, progress=lambda n, total: done.append((n, total)))
    assert kind.made == [[0, 1, 2], [6]]
    assert folder_bytes(folder) == expected
    assert done == [(4, 7), (5, 7), (6, 7), (7, 7)]


def test_a_run_of_other_settings_keeps_nothing(tmp_path):
    folder = tmp_path / "s"
    run(Squares("a"), folder)
    (folder / MANIFEST_NAME).unlink()
    kind = Squares("b")
    run(kind, folder, resume=True)
    assert kind.made == [[0, 1, 2], [3, 4, 5], [6]]
    assert len(list(folder.glob("part-*.npy"))) == 3


def test_an_existing_folder_is_not_replaced_without_resume(tmp_path):
    run(Squares(), tmp_path / "s")
    with pytest.raises(
        FileExistsError,
        match=r"exists; pass overwrite=True \(--overwrite\) to replace it or "
        r"resume=True \(--resume\) to finish it$",
    ):
        run(Squares(), tmp_path / "s")
