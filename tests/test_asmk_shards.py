"""ASMK indexes split in shards and searched on a real Dask LocalCluster of two
worker processes: the results of one index holding every shard's images."""

from __future__ import annotations

import numpy as np
import pytest
from asmk_reference import random_problem

import vlad
from vlad.asmk import build_asmk_index
from vlad.pipeline import search_asmk_shards

pytest.importorskip("distributed")


def saved_shards(folder, database, codebook, cuts, **settings):
    """One index folder per part of ``database``, and their paths."""
    names = [f"{position}.jpg" for position in range(len(database))]
    bounds = [0, *cuts, len(database)]
    paths = []
    for number, (first, last) in enumerate(zip(bounds[:-1], bounds[1:], strict=True)):
        sets = vlad.DescriptorSets.from_list(
            database[first:last], names[first:last], n_features=8
        )
        path = folder / f"shard-{number}"
        build_asmk_index(sets, codebook, **settings).save(path)
        paths.append(path)
    return paths, names


@pytest.mark.parametrize(
    "settings",
    [
        {},
        pytest.param({"binary": False}, marks=pytest.mark.slow),
        pytest.param({"idf": True}, marks=pytest.mark.slow),
    ],
    ids=["ASMK*", "ASMK", "idf"],
)
def test_shards_on_a_cluster_rank_as_one_index(cluster_client, tmp_path, settings):
    centers, database, rng = random_problem(20, 10, [6, 0, 9, 4, 7, 5, 8, 3, 6, 2])
    codebook = vlad.Codebook(centers)
    paths, names = saved_shards(tmp_path, database, codebook, [3, 7], **settings)
    whole = build_asmk_index(database, codebook, names=names, **settings)
    queries = [rng.standard_normal((6, 8)).astype(np.float32) for _ in range(5)]
    queries[2] = np.zeros((0, 8), np.float32)
    # A stop list counted over every shard: the one index's.
    for k, stop in ((1, 0.0), (4, 0.4), (20, 0.0)):
        found = search_asmk_shards(
            paths, queries, k, client=cluster_client, stop_fraction=stop
        )
        expected = whole.search(queries, k, stop_fraction=stop)
        assert found.record["stop_words"] == expected.record["stop_words"]
        assert found.rankings() == expected.rankings()
        for ours, theirs in zip(found, expected, strict=True):
            assert ours.rows.tolist() == theirs.rows.tolist()
            np.testing.assert_allclose(ours.scores, theirs.scores, rtol=1e-6)
            assert ours.reason == theirs.reason
        assert found.notes == [
            note.replace("the index holds", "the shards hold")
            for note in expected.notes
        ]
        assert found.record["index"]["n_images"] == len(database)


def test_shards_of_other_words_or_settings_are_refused(cluster_client, tmp_path):
    centers, database, _ = random_problem(21, 6, [4, 5, 3])
    codebook = vlad.Codebook(centers)
    build_asmk_index(database[:2], codebook).save(tmp_path / "a")
    build_asmk_index(database[2:], vlad.Codebook(centers + 1)).save(tmp_path / "b")
    build_asmk_index(database[2:], codebook, alpha=2.0).save(tmp_path / "c")
    with pytest.raises(ValueError, match="holds another codebook"):
        search_asmk_shards(
            [tmp_path / "a", tmp_path / "b"], database, client=cluster_client
        )
    with pytest.raises(ValueError, match="has alpha=2.0 but"):
        search_asmk_shards(
            [tmp_path / "a", tmp_path / "c"], database, client=cluster_client
        )
    with pytest.raises(ValueError, match="at least one"):
        search_asmk_shards([], database, client=cluster_client)
    with pytest.raises(TypeError, match="dask.distributed.Client"):
        search_asmk_shards([tmp_path / "a"], database, client=None)


@pytest.mark.slow
def test_the_same_queries_searched_again_and_again(cluster_client, tmp_path):
    """Each search scatters its queries under a key of its own: with a key
    from their content, the data of one search was released as the next
    scattered the same queries, and about one search in sixty lost it."""
    centers, database, rng = random_problem(22, 10, [6, 0, 9, 4, 7, 5])
    paths, _ = saved_shards(tmp_path, database, vlad.Codebook(centers), [3])
    queries = [rng.standard_normal((6, 8)).astype(np.float32) for _ in range(3)]
    first = search_asmk_shards(paths, queries, 3, client=cluster_client)
    for _ in range(150):
        again = search_asmk_shards(paths, queries, 3, client=cluster_client)
        assert again.rankings() == first.rankings()
