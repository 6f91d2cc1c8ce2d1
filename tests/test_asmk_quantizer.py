"""The nearest words of descriptors through a faiss index over the words
(HNSW, an inverted file) against the exact ones, kept with a saved index, and
bad quantizers refused in one line."""

from __future__ import annotations

import json

import numpy as np
import pytest

import vlad
from vlad.asmk import append_asmk_index, build_asmk_index, load_asmk_index
from vlad.asmk._quantizer import WordQuantizer
from vlad.search._index_folders import file_checksum

faiss = pytest.importorskip("faiss")


@pytest.fixture(scope="module")
def words():
    """256 words and descriptors near them (the nearest word of each is clear)."""
    rng = np.random.default_rng(0)
    centers = rng.standard_normal((256, 16)).astype(np.float32)
    chosen = rng.integers(0, 256, 2000)
    descriptors = centers[chosen] + 0.1 * rng.standard_normal((2000, 16))
    return centers, descriptors.astype(np.float32), chosen


def exact_nearest(centers, descriptors, n_nearest):
    distances = ((descriptors[:, None] - centers[None]) ** 2).sum(axis=2)
    return np.argsort(distances, axis=1, kind="stable")[:, :n_nearest]


@pytest.mark.parametrize(
    ("factory", "parameters"),
    [("HNSW32", "efSearch=64"), ("IVF16,Flat", "nprobe=8"), ("Flat", None)],
)
def test_approximate_quantizers_find_the_nearest_words(words, factory, parameters):
    centers, descriptors, chosen = words
    quantizer = WordQuantizer(centers, factory, parameters)
    labels = quantizer(descriptors, 3)
    assert labels.shape == (2000, 3) and labels.dtype == np.int64
    assert quantizer.exact == (factory == "Flat")
    expected = exact_nearest(centers, descriptors, 3)
    assert np.mean(labels[:, 0] == chosen) >= 0.99
    found = np.mean(
        [len(set(a) & set(b)) / 3 for a, b in zip(labels, expected, strict=True)]
    )
    assert found >= (1.0 if factory == "Flat" else 0.9)
    assert all(len(set(row)) == 3 for row in labels.tolist())


def test_rows_an_inverted_file_cannot_fill_are_searched_exactly(words):
    """One list probed of 64 holding about 4 words each: fewer than 10 found."""
    centers, descriptors, _ = words
    quantizer = WordQuantizer(centers, "IVF64,Flat", "nprobe=1")
    labels = quantizer(descriptors[:50], 10)
    assert (labels >= 0).all()
    _, raw = quantizer.index.search(descriptors[:50], 10)
    unfilled = (raw < 0).any(axis=1)
    assert unfilled.any()
    np.testing.assert_array_equal(
        labels[unfilled], exact_nearest(centers, descriptors[:50], 10)[unfilled]
    )


def test_an_index_with_an_approximate_quantizer_is_saved_with_it(words, tmp_path):
    centers, descriptors, _ = words
    sets = vlad.DescriptorSets(descriptors, np.arange(0, 2001, 100))
    codebook = vlad.Codebook(centers)
    index = build_asmk_index(
        sets, codebook, quantizer="HNSW32", quantizer_parameters="efSearch=48"
    )
    exact = build_asmk_index(sets, codebook)
    queries = sets.between(0, 5)
    found = index.search(queries, k=5)
    assert found.record["index"]["quantizer"] == "HNSW32"
    assert found.record["index"]["quantizer_parameters"] == "efSearch=48"
    # The images' own descriptors find the same words, or nearly: every query
    # ranks itself first, as with exact words.
    assert [r.names[0] for r in found] == [r.names[0] for r in exact.search(queries)]
    index.save(tmp_path / "index")
    record = json.loads((tmp_path / "index" / "index.json").read_text())
    assert record["quantizer"] == "HNSW32"
    assert (tmp_path / "index" / "quantizer.npy").is_file()
    loaded = load_asmk_index(tmp_path / "index", mmap=True)
    assert loaded.quantizer_parameters == "efSearch=48"
    assert loaded._quantizer().index.hnsw.efSearch == 48
    again = loaded.search(queries, k=5)
    assert again.rankings() == found.rankings()
    grown = append_asmk_index(tmp_path / "index", sets.between(5, 8))
    assert grown.quantizer == "HNSW32" and grown.n_images == 23
    loaded.quantizer_parameters = "efSearch=16"
    assert loaded._quantizer().index.hnsw.efSearch == 16


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"quantizer": "NoSuchIndex7"}, "faiss could not index 256 words"),
        ({"quantizer": ""}, "quantizer must be 'Flat' or a faiss index_factory"),
        ({"quantizer_parameters": "efSearch=8"}, "'Flat' has none"),
        (
            {"quantizer": "HNSW32", "quantizer_parameters": "nosuch=3"},
            "faiss could not set 'nosuch=3'",
        ),
    ],
)
def test_bad_quantizers_are_refused_before_anything_is_read(words, settings, message):
    centers, descriptors, _ = words
    with pytest.raises(ValueError, match=message) as error:
        build_asmk_index([descriptors[:10]], vlad.Codebook(centers), **settings)
    assert "\n" not in str(error.value)


def test_a_quantizer_of_other_words_is_refused(words, tmp_path):
    centers, descriptors, _ = words
    build_asmk_index(
        [descriptors[:10]], vlad.Codebook(centers), quantizer="HNSW16"
    ).save(tmp_path / "index")
    other = WordQuantizer(centers[:100], "HNSW16")
    np.save(tmp_path / "index" / "quantizer.npy", other.to_bytes())
    with pytest.raises(ValueError, match="quantizer.npy is not the file index.json"):
        load_asmk_index(tmp_path / "index")
    # Recorded as it now is, the file is refused by what it holds.
    record = json.loads((tmp_path / "index" / "index.json").read_text())
    record["checksums"]["quantizer.npy"] = file_checksum(
        tmp_path / "index" / "quantizer.npy"
    )
    (tmp_path / "index" / "index.json").write_text(json.dumps(record))
    with pytest.raises(ValueError, match="holds 100 words of 16 values"):
        load_asmk_index(tmp_path / "index")
