"""``vlad info``."""

from __future__ import annotations

import json

import numpy as np

import vlad
from vlad.search import build_index

from .conftest import run


def test_info_describes_each_kind_of_file(main_job, tmp_path, photo_sets):
    folder, _, _ = main_job
    photo_sets.save(tmp_path / "d.npz")
    codebook = run("info", folder / "codebook.npz").stdout
    assert "kind: codebook\n" in codebook and "n_clusters: 16\n" in codebook
    descriptors = run("info", tmp_path / "d.npz").stdout
    assert "kind: descriptor sets\n" in descriptors and "n_images: 8\n" in descriptors
    vectors = run("info", folder / "v.npy").stdout
    assert "kind: vectors\n" in vectors and "n_dimensions: 2048\n" in vectors
    assert "  fingerprint: " in vectors and "skipped: none\n" in vectors
    summary = json.loads(run("info", "--json", folder / "v.npy").stdout)
    assert summary["n_images"] == 8 and summary["all_finite"] is True


def test_a_list_of_a_mapping_then_other_values_prints(tmp_path):
    """A record's list that holds a mapping and then a non-mapping (in a
    codebook's metadata, in a vectors record's ``skipped``) prints each item,
    not a traceback."""
    mixed = [{"name": "a.jpg", "reason": "empty"}, "b.jpg", 3]
    vlad.Codebook(np.eye(2, dtype=np.float32), metadata={"notes": mixed}).save(
        tmp_path / "c.npz"
    )
    vlad.save_vectors(tmp_path / "v.npy", np.eye(2), ["a", "b"], {"skipped": mixed})
    for path in (tmp_path / "c.npz", tmp_path / "v.npy"):
        shown = run("info", path).stdout
        assert "  - name: a.jpg, reason: empty\n  - b.jpg\n  - 3\n" in shown


def test_info_describes_an_index_folder_and_search_results(main_job, tmp_path):
    """What the index and the results hold, as the library reads them."""
    folder, _, _ = main_job
    vectors, names, _ = vlad.load_vectors(folder / "v.npy")
    index = build_index(vectors, names, pca=4)
    index.save(tmp_path / "index")
    summary = json.loads(run("info", "--json", tmp_path / "index").stdout)
    assert summary["kind"] == "index" and summary["search"] == "exact"
    assert (summary["n_images"], summary["n_features"], summary["dimension"]) == (
        8, 2048, 4,
    )  # fmt: skip
    assert summary["whitening"] == index.whitening.record()
    results = index.search(vectors[:2], k=3, query_names=names[:2])
    expected = {"n_queries": 2, "n_results": 6, "most_per_query": 3}
    for suffix, kind in ((".json", "json"), (".csv", "csv"), (".txt", "pairs")):
        results.write(tmp_path / f"results{suffix}")
        text = run("info", tmp_path / f"results{suffix}").stdout
        assert f"kind: search results\nformat: {kind}\n" in text
        for key, value in expected.items():
            assert f"\n{key}: {value}\n" in text
    assert "\nk: 3\n" in run("info", tmp_path / "results.json").stdout
