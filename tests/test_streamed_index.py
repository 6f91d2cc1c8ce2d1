"""Indexes built from a folder of shards a shard at a time: the same files
as an index built in memory (exact), and the same search results."""

from __future__ import annotations

import numpy as np
import pytest

import vlad
from vlad.search import build_index, load_index
from vlad.search._streamed_index import index_shards


@pytest.fixture(scope="module")
def shards_folder(tmp_path_factory):
    """A folder of 5 shards of 60 vectors (some all zero) of 32 dimensions."""
    from vlad.formats._shards import ShardWriter, shard_key

    folder = tmp_path_factory.mktemp("vectors") / "v"
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((60, 32)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    vectors[[3, 17, 40]] = 0
    names = [f"image {row}.jpg" for row in range(60)]
    writer = ShardWriter(folder)
    entries = []
    for index, start in enumerate(range(0, 60, 13)):
        key = shard_key({"test": 1}, names[start : start + 13])
        record = {"key": key, "names": names[start : start + 13], "skipped": []}
        writer.write(index, vectors[start : start + 13], {**record, "empty": []})
        entries.append({"n_rows": len(record["names"]), "key": key})
    writer.commit({"shape": [60, 32], "shards": entries, "codebook": {"k": 1}})
    return folder, vectors, names


def test_an_exact_index_equals_one_built_in_memory(shards_folder, tmp_path):
    folder, vectors, names = shards_folder
    streamed = index_shards(folder, tmp_path / "a", source={"codebook": {"k": 1}})
    whole = build_index(vectors, names, source={"codebook": {"k": 1}})
    whole.save(tmp_path / "b")
    for name in ("index.json", "names.json", "rows.npy", "vectors.npy"):
        assert (tmp_path / "a" / name).read_bytes() == (
            tmp_path / "b" / name
        ).read_bytes(), name
    queries = vectors[:7] + 0.01
    found = streamed.search(queries, 5)
    assert [result.names for result in found] == [
        result.names for result in whole.search(queries, 5)
    ]
    assert load_index(tmp_path / "a").n_empty == 3


def test_a_faiss_index_trained_on_all_equals_one_built_in_memory(
    shards_folder, tmp_path
):
    pytest.importorskip("faiss")
    folder, vectors, names = shards_folder
    streamed = index_shards(folder, tmp_path / "a", factory="IVF4,Flat")
    whole = build_index(vectors, names, factory="IVF4,Flat")
    queries = vectors[:7] + 0.01
    assert [r.names for r in streamed.search(queries, 5)] == [
        r.names for r in whole.search(queries, 5)
    ]
    # Trained on a sample: still every vector, found by exhaustive probing.
    sampled = index_shards(
        folder,
        tmp_path / "c",
        factory="IVF4,Flat",
        parameters="nprobe=4",
        training_rows=20,
    )
    assert len(sampled.store) == 57
    exact = build_index(vectors, names)
    assert [r.names for r in sampled.search(queries, 5)] == [
        r.names for r in exact.search(queries, 5)
    ]


def test_an_existing_index_is_replaced_only_when_asked(shards_folder, tmp_path):
    folder, _, _ = shards_folder
    index_shards(folder, tmp_path / "a")
    with pytest.raises(
        FileExistsError,
        match=r"exists; pass overwrite=True \(--overwrite\) to replace it$",
    ):
        index_shards(folder, tmp_path / "a")
    index_shards(folder, tmp_path / "a", overwrite=True)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["a"]
    with pytest.raises(ValueError, match="training_rows"):
        index_shards(folder, tmp_path / "b", training_rows=0)


def test_vlad_index_reads_a_folder_a_shard_at_a_time(shards_folder, tmp_path):
    from click.testing import CliRunner

    from vlad.cli._main import main

    folder, vectors, names = shards_folder
    result = CliRunner().invoke(main, ["index", str(folder), "-o", str(tmp_path / "i")])
    assert result.exit_code == 0, result.output
    index = vlad.search.load_index(tmp_path / "i")
    assert index.names == names and index.source == {"codebook": {"k": 1}}
    assert np.array_equal(index.store.vectors, np.delete(vectors, [3, 17, 40], 0))
