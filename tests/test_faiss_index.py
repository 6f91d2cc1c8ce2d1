"""faiss indexes by factory string: vlad.search._faiss_store, through
build_index, against exact search."""

from __future__ import annotations

import json
import os
import re
import sys
import threading
import time

import numpy as np
import pytest

from vlad._extras import install_command
from vlad.search import QueryExpansion, build_index, load_index

faiss = pytest.importorskip("faiss")


def unit_rows(seed, n_rows, n_dimensions):
    rows = np.random.default_rng(seed).standard_normal((n_rows, n_dimensions))
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def same_results(first, second, atol=1e-5):
    assert len(first) == len(second)
    for a, b in zip(first, second, strict=True):
        assert (a.query, a.names, a.reason) == (b.query, b.names, b.reason)
        np.testing.assert_array_equal(a.rows, b.rows)
        np.testing.assert_allclose(a.scores, b.scores, atol=atol)


@pytest.fixture(scope="module")
def database():
    """600 unit vectors of 32 dimensions (enough to train 8-bit PQ), 3 zero."""
    vectors = unit_rows(0, 600, 32)
    vectors[[7, 100, 599]] = 0
    return vectors, [f"image{row:03d}.jpg" for row in range(600)]


@pytest.fixture(scope="module")
def queries(database):
    """Noisy copies of some database vectors, and one all-zero query."""
    vectors, _ = database
    noisy = vectors[::50] + 0.2 * unit_rows(1, 12, 32)
    return np.vstack([noisy, np.zeros((1, 32), np.float32)])


@pytest.mark.parametrize("pca", [None, 16])
def test_flat_returns_what_exact_search_does(database, queries, pca):
    vectors, names = database
    flat = build_index(vectors, names, pca=pca, factory="Flat")
    exact = build_index(vectors, names, pca=pca)
    assert flat.factory == "Flat" and exact.factory is None
    assert flat.bytes_per_image == exact.bytes_per_image == 4 * (pca or 32)
    same_results(flat.search(queries, 20), exact.search(queries, 20))
    same_results(
        flat.search(queries, 20, expansion=QueryExpansion(3, 3.0)),
        exact.search(queries, 20, expansion=QueryExpansion(3, 3.0)),
    )


def test_a_full_probe_of_an_inverted_file_is_exact(database, queries):
    """IVF lists hold the vectors whole: probing every list is exact search,
    and query expansion reads the vectors back from the lists."""
    vectors, names = database
    ivf = build_index(vectors, names, factory="IVF8,Flat", parameters="nprobe=8")
    exact = build_index(vectors, names)
    same_results(ivf.search(queries, 10), exact.search(queries, 10))
    expansion = QueryExpansion(2, 0.0)
    same_results(
        ivf.search(queries, 10, expansion=expansion),
        exact.search(queries, 10, expansion=expansion),
    )


@pytest.mark.parametrize(
    ("factory", "code_bytes"),
    [
        # "np": without faiss's polysemous training, which takes seconds and
        # serves only Hamming-threshold search.
        ("PQ8np", 8 * 8 // 8),
        ("PQ16x4np", 16 * 4 // 8),
        ("IVF8,PQ8np", 8 * 8 // 8),
        pytest.param("OPQ4,IVF8,PQ4np", 4 * 8 // 8, marks=pytest.mark.slow),
        ("IVF8,PQ8np,RFlat", 8 + 4 * 32),
        ("SQ8", 32),
        ("HNSW8", 4 * 32),
        ("PCA16,Flat", 4 * 16),
        pytest.param("IVF8,PQ8", 8 * 8 // 8, marks=pytest.mark.slow),
    ],
)
def test_compressed_indexes_report_their_code_bytes_and_find_near_copies(
    database, queries, factory, code_bytes
):
    vectors, names = database
    index = build_index(vectors, names, factory=factory, parameters=None)
    assert index.bytes_per_image == code_bytes
    assert index.record()["bytes_per_image"] == code_bytes
    assert f"bytes_per_image={code_bytes}" in repr(index)
    assert (index.n_images, index.n_empty) == (600, 3)
    results = index.search(queries, 10)
    # Each noisy copy's original is among its ten best, even compressed.
    for row, result in zip(range(0, 600, 50), results, strict=False):
        assert row == 100 or names[row] in result.names
        assert all(
            name not in result.names for name in ("image007.jpg", "image100.jpg")
        )
    assert results[-1].names == () and "no descriptors" in results[-1].reason


def test_pq_code_size_is_m_times_nbits_over_eight_in_faiss_too(database):
    """The reported bytes are the codes faiss stores: M * nbits / 8."""
    vectors, _ = database
    for m, nbits in [(8, 8), (16, 4)]:
        index = build_index(vectors, factory=f"IVF4,PQ{m}x{nbits}np")
        ivf = faiss.extract_index_ivf(index.store.index)
        assert index.bytes_per_image == m * nbits // 8 == ivf.code_size
        assert ivf.invlists.code_size == m * nbits // 8


@pytest.mark.parametrize(
    ("factory", "parameters"),
    [("IVF8,PQ8np", "nprobe=3"), ("PQ8np", None), ("HNSW8", "efSearch=16")],
)
def test_save_and_load_give_identical_results(
    tmp_path, database, queries, factory, parameters
):
    vectors, names = database
    index = build_index(
        vectors, names, factory=factory, parameters=parameters, pca=24, whiten=0.5
    )
    index.save(tmp_path / "index")
    assert sorted(path.name for path in (tmp_path / "index").iterdir()) == [
        "index.json",
        "names.json",
        "rows.npy",
        "vectors.faiss",
        "whitening.npz",
    ]
    loaded = load_index(tmp_path / "index")
    assert loaded.record() == index.record()
    assert loaded.factory == factory and loaded.store.parameters == parameters
    same_results(loaded.search(queries, 15), index.search(queries, 15), atol=0)
    expansion = QueryExpansion(3, 3.0)
    same_results(
        loaded.search(queries, 15, expansion=expansion),
        index.search(queries, 15, expansion=expansion),
        atol=0,
    )


def test_search_parameters_given_at_load_replace_the_saved_ones(tmp_path, database):
    vectors, names = database
    build_index(vectors, names, factory="IVF16,Flat", parameters="nprobe=1").save(
        tmp_path / "index"
    )
    assert load_index(tmp_path / "index").record()["parameters"] == "nprobe=1"
    wider = load_index(tmp_path / "index", parameters="nprobe=16")
    assert wider.record()["parameters"] == "nprobe=16"
    same_results(
        wider.search(vectors[:20], 10),
        build_index(vectors, names).search(vectors[:20], 10),
    )


def test_an_approximate_index_that_finds_fewer_says_so():
    """Sixteen lists of about two vectors, one probed: fewer than k found."""
    vectors = unit_rows(3, 32, 8)
    index = build_index(vectors, factory="IVF16,Flat", parameters="nprobe=1")
    results = index.search(vectors[:4], 10)
    for result in results:
        assert 0 < len(result.names) < 10
        assert "returned fewer images than asked" in result.reason
        assert np.all(result.rows >= 0)
        assert len(result.scores) == len(result.names)
    expanded = index.search(vectors[:4], 10, expansion=QueryExpansion(5, 0.0))
    assert all(len(result.names) < 10 for result in expanded)


def test_add_to_a_flat_index_equals_building_at_once(database, queries):
    vectors, names = database
    grown = build_index(vectors[:250], names[:250], factory="Flat")
    grown.add(vectors[250:], names[250:])
    at_once = build_index(vectors, names, factory="Flat")
    same_results(grown.search(queries, 12), at_once.search(queries, 12))


@pytest.mark.parametrize(
    ("factory", "parameters", "message"),
    [
        ("NoSuchIndex", None, "faiss could not build 'NoSuchIndex' for 32 dimensions"),
        (
            "IVF4096,Flat",
            None,
            "faiss could not train 'IVF4096,Flat' on 597 vectors: .*; 597 vectors "
            "fit IVF8 \\(39 a list\\), IVF597 at most",
        ),
        ("PQ7", None, "faiss could not"),
        ("Flat", "nprobe=4", "faiss could not set 'nprobe=4' on 'Flat'"),
        ("", None, "^factory must be None or a faiss index_factory string; got .."),
    ],
)
def test_what_faiss_refuses_is_one_line(database, factory, parameters, message):
    vectors, _ = database
    with pytest.raises(ValueError, match=message) as raised:
        build_index(vectors, factory=factory, parameters=parameters)
    assert "\n" not in str(raised.value)


@pytest.mark.parametrize(
    ("factory", "parameters"),
    [
        ("IVF8,PQ4", None),
        ("PQ4", None),
        pytest.param("OPQ4,IVF8,PQ4", None, marks=pytest.mark.slow),
        pytest.param("PQ4", "ht=12", marks=pytest.mark.slow),  # trains it: 26 s
    ],
)
def test_polysemous_training_only_where_hamming_search_is_asked_for(
    database, factory, parameters
):
    """It serves only ht= search and costs several times the rest of training:
    as faiss's np suffix, unless the parameters set ht."""
    vectors, _ = database
    index = build_index(vectors, factory=factory, parameters=parameters)
    quantiser = faiss.downcast_index(index.store.index)
    if isinstance(quantiser, faiss.IndexPreTransform):
        quantiser = faiss.downcast_index(quantiser.index)
    assert quantiser.do_polysemous_training == (parameters is not None)


def test_faiss_clustering_warnings_are_one_line_with_the_lists_that_fit(
    database, capfd, caplog
):
    """faiss would print one warning per k-means (4 PQ sub-quantisers and the
    lists) on the C++ standard error; vlad logs one line instead, and
    standard error shows nothing."""
    vectors, _ = database
    with caplog.at_level("WARNING", logger="vlad.search._faiss_store"):
        build_index(vectors, factory="IVF32,PQ4")
    assert capfd.readouterr().err == ""
    [record] = caplog.records
    assert record.getMessage() == (
        "training 'IVF32,PQ4' on 597 vectors, fewer than its k-means asks for "
        "(faiss suggests 1248 for 32 centres, 9984 for 256 centres); the codes "
        "may be coarser; 597 vectors fit IVF8 (39 a list)"
    )


def plain_faiss_index(vectors, factory):
    """The index faiss itself trains and fills, without polysemous training
    (as vlad skips it)."""
    index = faiss.index_factory(vectors.shape[1], factory, faiss.METRIC_INNER_PRODUCT)
    inner = faiss.downcast_index(index)
    if isinstance(inner, faiss.IndexPreTransform):
        inner = faiss.downcast_index(inner.index)
    if isinstance(inner, (faiss.IndexIVFPQ, faiss.IndexPQ)):
        inner.do_polysemous_training = False
    index.train(vectors)
    index.add(vectors)
    return index


@pytest.mark.parametrize(
    ("factory", "suggested"),
    [
        ("PQ4", "9984 for 256 centres"),
        ("IVF32,PQ4x4fs", "624 for 16 centres, 1248 for 32 centres"),
        pytest.param(
            "OPQ4,IVF32,PQ4",
            "1248 for 32 centres, 9984 for 256 centres",
            marks=pytest.mark.slow,  # seconds: 50 rounds of 4 k-means
        ),
        ("RQ2x4", "624 for 16 centres"),
    ],
)
def test_training_prints_nothing_and_trains_what_faiss_trains(
    database, capfd, caplog, factory, suggested
):
    """Each kind of k-means that faiss warns about (an IVF's lists, a product,
    residual or OPQ rotation's quantiser) is quiet, and trains as faiss does
    alone: the index written is the same, byte for byte (one process, one
    code path)."""
    vectors, _ = database
    with caplog.at_level("WARNING", logger="vlad.search._faiss_store"):
        index = build_index(vectors, factory=factory)
    assert capfd.readouterr().err == ""
    [record] = caplog.records
    assert f"(faiss suggests {suggested})" in record.getMessage()
    # vlad trains on and stores the vectors that are not zero.
    expected = plain_faiss_index(vectors[np.any(vectors, axis=1)], factory)
    capfd.readouterr()  # faiss's own warnings, of the plain index
    assert bytes(faiss.serialize_index(index.store.index)) == bytes(
        faiss.serialize_index(expected)
    )


def test_enough_training_vectors_log_nothing(caplog):
    vectors = unit_rows(2, 32 * 39, 8)
    with caplog.at_level("WARNING", logger="vlad.search._faiss_store"):
        build_index(vectors, factory="IVF32,Flat")
    assert caplog.records == []


def test_standard_error_of_other_threads_is_untouched_while_faiss_trains(
    database, capfd
):
    """Another thread writes to descriptor 2 and to ``sys.stderr`` all the
    while an index trains: every line arrives, in order, and descriptor 2
    stays the file it was."""
    vectors, _ = database
    before = os.fstat(2)
    targets, built = [], threading.Event()

    def write() -> None:
        line = 0
        while not built.is_set() or line < 3:
            os.write(2, f"other thread {line}\n".encode())
            line += 1
            print(f"other thread {line}", file=sys.stderr, flush=True)
            line += 1
            found = os.fstat(2)
            targets.append((found.st_dev, found.st_ino))
            time.sleep(0.001)

    writer = threading.Thread(target=write)
    writer.start()
    try:
        build_index(vectors, factory="IVF32,PQ4")
    finally:
        built.set()
        writer.join()
    written = [
        line for line in capfd.readouterr().err.splitlines() if "other thread" in line
    ]
    assert written == [f"other thread {line}" for line in range(2 * len(targets))]
    assert set(targets) == {(before.st_dev, before.st_ino)}


def test_an_index_of_another_metric_is_refused(tmp_path):
    build_index(unit_rows(4, 10, 4), factory="Flat").save(tmp_path / "index")
    faiss.write_index(faiss.IndexFlatL2(4), str(tmp_path / "index" / "vectors.faiss"))
    with pytest.raises(ValueError, match="vectors.faiss is not the file"):
        load_index(tmp_path / "index")
    # Without the checksums of its files (as vlad 0.4 wrote it), the index is
    # refused by what faiss reads.
    record = json.loads((tmp_path / "index" / "index.json").read_text())
    del record["checksums"]
    (tmp_path / "index" / "index.json").write_text(json.dumps(record))
    with pytest.raises(ValueError, match="its metric is not inner product"):
        load_index(tmp_path / "index")


def test_without_faiss_the_error_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "faiss", None)
    with pytest.raises(ImportError, match=re.escape(install_command("faiss"))):
        build_index(unit_rows(5, 10, 4), factory="Flat")
    # Exact search needs nothing more.
    assert build_index(unit_rows(5, 10, 4)).search(np.eye(4), 1)[0].names
