"""``vlad index`` on the bundled photos' vectors: the folder it writes is the
library's index of the same vectors."""

from __future__ import annotations

import numpy as np
import pytest
from photos import DATA, PHOTOS

import vlad
import vlad.search._exact
from vlad.formats._vectors import load_vectors
from vlad.search import build_index, load_index

from .conftest import run


@pytest.fixture(scope="module")
def vectors_path(tmp_path_factory, codebook_path):
    """The bundled photos' vectors, encoded with the fast codebook."""
    path = tmp_path_factory.mktemp("index-vectors") / "v.npy"
    run("encode", DATA, "-c", codebook_path, "-o", path)
    return path


def same_search(first, second, queries, k=8):
    for a, b in zip(first.search(queries, k), second.search(queries, k), strict=True):
        assert a.names == b.names
        np.testing.assert_allclose(a.scores, b.scores, atol=1e-5)


def test_help_shows_an_example():
    assert "Example:" in run("index", "--help").output


def test_the_index_is_the_library_s_index_of_the_vectors(
    tmp_path, vectors_path, codebook_path
):
    result = run("index", vectors_path, "-o", tmp_path / "index")
    assert result.stdout == ""
    assert (
        "wrote an index of 8 images (2048 dimensions, exact search, 8192 bytes per "
        f"image) to {tmp_path / 'index'}"
    ) in result.stderr
    vectors, names, record = load_vectors(vectors_path)
    index = load_index(tmp_path / "index")
    assert index.names == names == PHOTOS
    codebook = vlad.Codebook.load(codebook_path)
    assert index.source["codebook"]["fingerprint"] == codebook.fingerprint
    assert index.source["encoding"] == record["encoding"]
    assert index.source["descriptor"] == record["descriptor"]
    same_search(index, build_index(vectors, names), vectors)


def test_whitened_index(tmp_path, vectors_path):
    vectors, names, _ = load_vectors(vectors_path)
    run("index", vectors_path, "-o", tmp_path / "pca", "--pca", 4, "--whiten")
    index = load_index(tmp_path / "pca")
    assert index.record()["whitening"] == {
        "n_features": 2048,
        "n_components": 4,
        "power": 1.0,
    }
    same_search(index, build_index(vectors, names, pca=4, whiten=1.0), vectors)
    # --whiten alone keeps every direction the eight vectors span.
    run("index", vectors_path, "-o", tmp_path / "half", "--whiten", 0.5)
    assert load_index(tmp_path / "half").whitening.record() == {
        "n_features": 2048,
        "n_components": 7,
        "power": 0.5,
    }


def test_augmented_index(tmp_path, vectors_path):
    run("index", vectors_path, "-o", tmp_path / "index", "--augment", 2)
    assert load_index(tmp_path / "index").record()["augmentation"] == {
        "neighbours": 2,
        "alpha": 3.0,
    }


@pytest.mark.parametrize(
    ("factory", "code_bytes"), [("Flat", 4 * 2048), ("PQ16x2", 16 * 2 // 8)]
)
def test_faiss_indexes(tmp_path, vectors_path, factory, code_bytes):
    pytest.importorskip("faiss")
    vectors, names, _ = load_vectors(vectors_path)
    result = run("index", vectors_path, "-o", tmp_path / "index", "--factory", factory)
    assert f"faiss '{factory}', {code_bytes} bytes per image" in result.stderr
    index = load_index(tmp_path / "index")
    assert index.factory == factory and index.bytes_per_image == code_bytes
    assert (tmp_path / "index" / "vectors.faiss").is_file()
    same_search(index, build_index(vectors, names, factory=factory), vectors)


def test_images_without_descriptors_are_counted(tmp_path, vectors_path):
    vectors, names, record = load_vectors(vectors_path)
    vectors[2] = 0
    vlad.save_vectors(tmp_path / "blank.npy", vectors, names, record)
    result = run("index", tmp_path / "blank.npy", "-o", tmp_path / "index")
    assert "1 image has no descriptors and will never match" in result.stderr
    assert load_index(tmp_path / "index").n_empty == 1


def test_an_existing_index_is_replaced_only_with_overwrite(tmp_path, vectors_path):
    run("index", vectors_path, "-o", tmp_path / "index", "--pca", 3)
    result = run("index", vectors_path, "-o", tmp_path / "index", exit_code=1)
    assert "already exists; pass --overwrite to replace it" in result.stderr
    assert load_index(tmp_path / "index").dimension == 3
    run("index", vectors_path, "-o", tmp_path / "index", "--overwrite")
    assert load_index(tmp_path / "index").dimension == 2048


def test_an_interrupted_index_leaves_no_partial_folder(
    tmp_path, vectors_path, monkeypatch
):
    """Interrupted while the vectors are written: no index folder (or the
    previous one, whole), and nothing hidden left beside it."""
    run("index", vectors_path, "-o", tmp_path / "index", "--pca", 3)

    def interrupted(store, path):
        path.write_bytes(b"\x93NUMPY")
        raise KeyboardInterrupt

    monkeypatch.setattr(vlad.search._exact.ExactStore, "save", interrupted)
    result = run("index", vectors_path, "-o", tmp_path / "new", exit_code=130)
    assert result.stderr.endswith(
        "interrupted; outputs written before are kept, the one being written was "
        "removed\n"
    )
    run("index", vectors_path, "-o", tmp_path / "index", "--overwrite", exit_code=130)
    monkeypatch.undo()
    assert [path.name for path in tmp_path.iterdir()] == ["index"]
    assert load_index(tmp_path / "index").dimension == 3


@pytest.mark.parametrize(
    ("arguments", "exit_code", "message"),
    [
        (["--pca", 100], 1, "n_components=100 is more than 8 vectors"),
        (["--factory", "NoSuchIndex"], 1, "faiss could not build 'NoSuchIndex'"),
        (["--factory", "IVF64,Flat"], 1, "faiss could not train 'IVF64,Flat' on 8"),
        (["--factory", "Flat", "--parameters", "nprobe=2"], 1, "could not set"),
        (["--whiten", 2], 2, "--whiten"),
        (["--pca", 0], 2, "--pca"),
        (["--augment", -1], 2, "--augment"),
    ],
)
def test_bad_options_are_one_line_errors(
    tmp_path, vectors_path, arguments, exit_code, message
):
    if "--factory" in arguments:
        pytest.importorskip("faiss")
    result = run(
        "index", vectors_path, "-o", tmp_path / "index", *arguments, exit_code=exit_code
    )
    assert message in result.stderr
    if exit_code == 1:
        assert result.stderr.count("\n") == 1 and result.stderr.startswith("Error: ")
    assert not (tmp_path / "index").exists()


def test_what_is_not_a_vectors_file_is_refused(tmp_path):
    (tmp_path / "text.npy").write_text("not numpy")
    result = run("index", tmp_path / "text.npy", "-o", tmp_path / "a", exit_code=1)
    assert "is not a vectors file" in result.stderr
    np.save(tmp_path / "nan.npy", np.array([[1.0, np.nan], [0.0, 1.0]]))
    result = run("index", tmp_path / "nan.npy", "-o", tmp_path / "b", exit_code=1)
    assert "vectors contains 1 NaN or infinite value(s)" in result.stderr
    run("index", tmp_path / "missing.npy", "-o", tmp_path / "c", exit_code=2)
