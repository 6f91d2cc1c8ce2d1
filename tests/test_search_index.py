"""An index of named vectors: vlad.search._index against a brute-force search
over the images with descriptors."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import vlad.search._exact
from vlad.search import (
    QueryExpansion,
    VectorIndex,
    build_index,
    fit_whitening,
    load_index,
)
from vlad.search._index import NO_DESCRIPTORS


def brute_force_names(queries, vectors, names, k):
    """Each query's best ``k`` names and scores in float64 over the non-zero
    rows, lower row first among equals; None for an all-zero query."""
    vectors = np.asarray(vectors, dtype=np.float32).astype(np.float64)
    kept = [row for row in range(len(vectors)) if np.any(vectors[row] != 0)]
    found = []
    for query in np.asarray(queries, dtype=np.float32).astype(np.float64):
        if not np.any(query != 0):
            found.append(None)
            continue
        scores = {row: float(query @ vectors[row]) for row in kept}
        order = sorted(kept, key=lambda row: (-scores[row], row))[:k]
        found.append(([names[row] for row in order], [scores[row] for row in order]))
    return found


@st.composite
def named_vectors(draw):
    """Small-integer vectors (exact scores, many ties), some rows all zero."""
    n_images = draw(st.integers(1, 20))
    n_dimensions = draw(st.integers(1, 5))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    vectors = rng.integers(-2, 3, (n_images, n_dimensions)).astype(np.float32)
    zero = rng.random(n_images) < draw(st.sampled_from([0.0, 0.3, 1.0]))
    vectors[zero] = 0
    names = [f"image {row}.jpg" for row in range(n_images)]
    queries = rng.integers(-2, 3, (draw(st.integers(0, 6)), n_dimensions))
    return vectors, names, queries.astype(np.float32)


@given(named_vectors(), st.integers(1, 25))
def test_search_equals_a_brute_force_over_the_images_with_descriptors(problem, k):
    vectors, names, queries = problem
    index = build_index(vectors, names)
    n_stored = int(np.count_nonzero(np.any(vectors != 0, axis=1)))
    assert (index.n_images, index.n_empty) == (len(names), len(names) - n_stored)
    results = index.search(
        queries, k, query_names=[f"q{i}" for i in range(len(queries))]
    )
    assert [result.query for result in results] == [
        f"q{i}" for i in range(len(queries))
    ]
    expected = brute_force_names(queries, vectors, names, k)
    for result, wanted in zip(results, expected, strict=True):
        if n_stored == 0:
            assert result.names == () and "no image with descriptors" in result.reason
        elif wanted is None:
            assert result.names == () and result.reason == NO_DESCRIPTORS
        else:
            assert list(result.names) == wanted[0]
            np.testing.assert_array_equal(result.scores, wanted[1])
            assert [names[row] for row in result.rows] == wanted[0]
            assert result.reason is None
    assert (k > n_stored) == bool(results.notes)


def test_images_without_descriptors_are_named_but_never_found():
    vectors = [[1.0, 0.0], [0.0, 0.0], [0.0, 1.0], [0.0, 0.0]]
    index = build_index(vectors, ["a", "blank1", "b", "blank2"])
    assert (index.n_images, index.n_empty, len(index)) == (4, 2, 4)
    result = index.search([[1.0, 1.0]], k=4)[0]
    assert result.names == ("a", "b")
    assert result.rows.tolist() == [0, 2]


def test_a_query_without_descriptors_finds_nothing_and_says_why():
    index = build_index([[1.0, 0.0], [0.0, 1.0]], ["a", "b"])
    results = index.search(
        [[0.0, 0.0], [0.0, 2.0]], k=1, query_names=["blank.png", "q.jpg"]
    )
    assert results[0].names == () and results[0].reason == NO_DESCRIPTORS
    assert results[0].scores.shape == (0,) and results[0].rows.shape == (0,)
    assert results[1].names == ("b",) and results[1].reason is None
    assert results.n_empty == 1
    assert results.rankings() == {"blank.png": [], "q.jpg": ["b"]}


@pytest.mark.parametrize("vectors", [np.zeros((0, 3)), np.zeros((4, 3))])
def test_an_index_without_any_descriptors_answers_every_query_with_the_reason(
    vectors,
):
    index = build_index(vectors)
    assert len(index.store) == 0
    results = index.search(np.ones((2, 3)), k=5, query_names=["x", "y"])
    assert [result.names for result in results] == [(), ()]
    assert all("holds no image with descriptors" in r.reason for r in results)
    assert results.notes == [
        "k=5 but the index holds 0 images with descriptors"
        + (f" (and {len(vectors)} without)" if len(vectors) else "")
        + ": each query gets at most 0"
    ]


def test_k_larger_than_the_index_returns_what_there_is_and_says_so():
    index = build_index(np.eye(3)[[0, 1, 2, 2]] * [[1], [1], [1], [0]])
    results = index.search([[1.0, 0.5, 0.2]], k=10)
    assert results[0].names == ("0", "1", "2")
    assert results.notes == [
        "k=10 but the index holds 3 images with descriptors (and 1 without): "
        "each query gets at most 3"
    ]
    assert results.record["k"] == 10
    assert build_index(np.eye(3)).search(np.eye(3), k=3).notes == []


def random_unit_rows(seed, n_rows, n_dimensions):
    rows = np.random.default_rng(seed).standard_normal((n_rows, n_dimensions))
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def same_results(first, second):
    assert len(first) == len(second)
    for a, b in zip(first, second, strict=True):
        assert (a.query, a.names, a.reason) == (b.query, b.names, b.reason)
        np.testing.assert_array_equal(a.rows, b.rows)
        np.testing.assert_allclose(a.scores, b.scores, atol=1e-6)


@pytest.mark.parametrize("whitened", [False, True])
def test_add_then_search_equals_building_at_once(whitened):
    vectors = random_unit_rows(0, 30, 8)
    vectors[[3, 17, 25]] = 0
    names = [f"{row}.jpg" for row in range(30)]
    whitening = fit_whitening(vectors, 5) if whitened else None
    at_once = VectorIndex.build(vectors, names, whitening=whitening)
    queries = random_unit_rows(1, 6, 8)
    grown = VectorIndex.build(vectors[:10], names[:10], whitening=whitening)
    grown.search(queries, 12)  # searched before it grows: names found anew after
    grown.add(vectors[10:20], names[10:20])
    grown.add(vectors[20:], names[20:])
    assert grown.names == at_once.names and grown.n_empty == at_once.n_empty == 3
    np.testing.assert_array_equal(grown.rows, at_once.rows)
    same_results(grown.search(queries, 12), at_once.search(queries, 12))


def test_add_without_names_continues_the_numbering():
    index = build_index(np.eye(2))
    index.add(np.eye(2)[::-1])
    assert index.names == ["0", "1", "2", "3"]
    assert index.search([[0.0, 1.0]], k=2)[0].names == ("1", "2")


@pytest.mark.parametrize("mmap", [False, True])
@pytest.mark.parametrize("pca", [None, 4])
def test_save_and_load_give_the_same_index_and_results(tmp_path, pca, mmap):
    vectors = random_unit_rows(2, 25, 6)
    vectors[5] = 0
    names = [f"photo {row} é,\t'.jpg" for row in range(25)]
    source = {"codebook": {"fingerprint": "0123456789abcdef"}}
    index = build_index(vectors, names, pca=pca, whiten=0.5, source=source)
    index.save(tmp_path / "index")
    loaded = load_index(tmp_path / "index", mmap=mmap)
    assert loaded.names == names and loaded.source == source
    assert loaded.record() == index.record()
    assert repr(loaded) == repr(index)
    queries = np.vstack([random_unit_rows(3, 4, 6), np.zeros((1, 6))])
    same_results(loaded.search(queries, 7), index.search(queries, 7))
    saved = json.loads((tmp_path / "index" / "index.json").read_text())
    assert saved["format"] == "vlad index" and saved["format_version"] == 1
    assert saved["whitening"] == {
        "n_features": 6,
        "n_components": pca or 6,
        "power": 0.5,
    }


def test_a_loaded_index_grows_and_saves_again(tmp_path):
    index = build_index(random_unit_rows(4, 5, 3))
    index.save(tmp_path / "index")
    loaded = load_index(tmp_path / "index", mmap=True)
    loaded.add(random_unit_rows(5, 2, 3), ["x", "y"])
    loaded.save(tmp_path / "index", overwrite=True)
    again = load_index(tmp_path / "index")
    assert again.names == ["0", "1", "2", "3", "4", "x", "y"]
    same_results(again.search(np.eye(3), 7), loaded.search(np.eye(3), 7))


def test_save_refuses_to_replace_without_overwrite(tmp_path):
    build_index(np.eye(2)).save(tmp_path / "index")
    with pytest.raises(
        FileExistsError,
        match=r"exists; pass overwrite=True \(--overwrite\) to replace it$",
    ):
        build_index(np.eye(3)).save(tmp_path / "index")
    assert load_index(tmp_path / "index").n_features == 2
    build_index(np.eye(3)).save(tmp_path / "index", overwrite=True)
    assert load_index(tmp_path / "index").n_features == 3


@pytest.mark.parametrize("interruption", [KeyboardInterrupt, OSError])
@pytest.mark.parametrize("existing", [False, True])
def test_an_interrupted_save_leaves_no_partial_folder(
    tmp_path, monkeypatch, interruption, existing
):
    """The vectors half-written when the process is interrupted: no folder (or
    the previous one, whole), and no hidden leftovers beside it."""
    if existing:
        build_index(np.eye(2), ["old", "older"]).save(tmp_path / "index")

    def interrupted(store, path):
        path.write_bytes(b"\x93NUMPY half")
        raise interruption("interrupted")

    monkeypatch.setattr(vlad.search._exact.ExactStore, "save", interrupted)
    with pytest.raises(interruption):
        build_index(np.eye(3)).save(tmp_path / "index", overwrite=True)
    monkeypatch.undo()
    assert [path.name for path in tmp_path.iterdir()] == (["index"] if existing else [])
    if existing:
        assert load_index(tmp_path / "index").names == ["old", "older"]


def edit_record(folder, **changes):
    record = json.loads((folder / "index.json").read_text())
    record.update(changes)
    (folder / "index.json").write_text(json.dumps(record))


def as_written_by_0_4(folder):
    """The index's record without the checksums of its files (vlad 0.4's)."""
    record = json.loads((folder / "index.json").read_text())
    del record["checksums"]
    (folder / "index.json").write_text(json.dumps(record))


def test_an_index_written_by_a_newer_vlad_is_refused(tmp_path):
    build_index(np.eye(2)).save(tmp_path / "index")
    edit_record(tmp_path / "index", format_version=2)
    with pytest.raises(ValueError, match="written by a newer vlad") as raised:
        load_index(tmp_path / "index")
    assert "index format version 2; this version reads up to 1" in str(raised.value)


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (
            lambda folder: (folder / "names.json").write_text('["a"]'),
            "names.json is not the file index.json records",
        ),
        (
            lambda folder: (
                as_written_by_0_4(folder),
                (folder / "names.json").write_text('["a"]'),
            ),
            "files disagree",
        ),
        (lambda folder: (folder / "names.json").unlink(), "no names.json"),
        (lambda folder: (folder / "index.json").write_text("{"), "is damaged"),
        (lambda folder: (folder / "index.json").write_text("[]"), "a JSON list"),
        (lambda folder: edit_record(folder, format="other"), "not a vlad index"),
        (lambda folder: edit_record(folder, n_features=3), "files disagree"),
        (lambda folder: edit_record(folder, format_version="1"), "format_version"),
        (lambda folder: (folder / "rows.npy").unlink(), "no rows.npy"),
        (lambda folder: (folder / "vectors.npy").unlink(), "vectors.npy"),
    ],
)
def test_a_damaged_index_is_refused_in_one_line(tmp_path, damage, message):
    build_index(np.eye(2), ["a", "b"]).save(tmp_path / "index")
    damage(tmp_path / "index")
    with pytest.raises(ValueError, match=message) as raised:
        load_index(tmp_path / "index")
    assert "\n" not in str(raised.value)


def test_what_is_not_an_index_folder(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such index folder"):
        load_index(tmp_path / "missing")
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match="it is not a folder"):
        load_index(tmp_path / "file")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="no index.json"):
        load_index(tmp_path / "empty")


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: build_index(np.eye(3), ["a", "b"]), ValueError, "2 names for 3"),
        (lambda: build_index(np.eye(2), "ab"), TypeError, "sequence of str"),
        (lambda: build_index([[1.0, np.nan]]), ValueError, "vectors contains 1 NaN"),
        (lambda: build_index([[1.0, np.inf]]), ValueError, "NaN or infinite"),
        (lambda: build_index(np.ones(3)), ValueError, "vectors"),
        (
            lambda: VectorIndex.build(np.eye(3), whitening=fit_whitening(np.eye(4))),
            ValueError,
            "the whitening takes 4 dimensions; the vectors have 3",
        ),
        (
            lambda: build_index(np.eye(3)).search(np.ones((1, 4))),
            ValueError,
            "queries have 4 dimensions; the index takes 3",
        ),
        (
            lambda: build_index(np.eye(3)).search([[np.nan, 0, 0]]),
            ValueError,
            "queries contains 1 NaN",
        ),
        (lambda: build_index(np.eye(3)).search(np.eye(3), 0), ValueError, "k must"),
        (lambda: build_index(np.eye(3)).search(np.eye(3), 1.5), TypeError, "k must"),
        (
            lambda: build_index(np.eye(3)).search(np.eye(3), query_names=["a"]),
            ValueError,
            "1 names for 3 queries",
        ),
        (
            lambda: build_index(np.eye(3)).add(np.ones((1, 2))),
            ValueError,
            "vectors have 2 dimensions; the index takes 3",
        ),
        (
            lambda: build_index(np.eye(3)).add(np.eye(3), ["a"]),
            ValueError,
            "1 names for 3 vectors",
        ),
    ],
)
def test_bad_inputs_are_refused_in_one_line(call, error, message):
    with pytest.raises(error, match=message) as raised:
        call()
    assert "\n" not in str(raised.value)


def test_repr_and_record_describe_the_index():
    index = build_index(np.vstack([np.eye(4), np.zeros((1, 4))]), pca=2)
    assert repr(index) == (
        "VectorIndex(n_images=5, n_empty=1, dimension=2, search=exact, "
        "bytes_per_image=8)"
    )
    assert index.record() == {
        "n_images": 5,
        "n_empty": 1,
        "n_features": 4,
        "dimension": 2,
        "factory": None,
        "parameters": None,
        "bytes_per_image": 8,
        "whitening": {"n_features": 4, "n_components": 2, "power": 1.0},
        "augmentation": None,
    }


def test_the_augmentation_is_recorded_and_read_back(tmp_path):
    index = build_index(random_unit_rows(6, 6, 3), augmentation=QueryExpansion(2, 1.0))
    assert index.record()["augmentation"] == {"neighbours": 2, "alpha": 1.0}
    index.save(tmp_path / "index")
    loaded = load_index(tmp_path / "index")
    assert loaded.augmentation == QueryExpansion(2, 1.0)
    np.testing.assert_array_equal(loaded.store.vectors, index.store.vectors)
    edit_record(tmp_path / "index", augmentation={"neighbours": 0})
    with pytest.raises(ValueError, match="damaged vlad index: augmentation="):
        load_index(tmp_path / "index")


def test_search_parameters_are_refused_for_exact_search(tmp_path):
    with pytest.raises(ValueError, match="tune a faiss index, and this index searches"):
        build_index(np.eye(2), parameters="nprobe=4")
    build_index(np.eye(2)).save(tmp_path / "index")
    with pytest.raises(ValueError, match="parameters='nprobe=4' tune a faiss index"):
        load_index(tmp_path / "index", parameters="nprobe=4")


@pytest.mark.parametrize("power", [0.0, 0.5, 1.0])
def test_a_whitened_index_ranks_by_the_whitened_vectors(power):
    vectors = random_unit_rows(7, 40, 10)
    vectors[4] = 0
    queries = random_unit_rows(8, 6, 10)
    index = build_index(vectors, pca=6, whiten=power)
    expected = fit_whitening(vectors, 6, power=power)
    np.testing.assert_allclose(index.whitening.components, expected.components)
    whitened = expected.transform(vectors)
    wanted = brute_force_names(
        expected.transform(queries), whitened, [str(row) for row in range(40)], 5
    )
    for result, (names, scores) in zip(index.search(queries, 5), wanted, strict=True):
        assert list(result.names) == names
        np.testing.assert_allclose(result.scores, scores, atol=1e-5)
