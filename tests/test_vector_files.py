"""Vector files and their names and records: vlad.formats._vectors."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest

from vlad.formats._vectors import load_vectors, save_vectors, vector_file_paths


def test_vectors_names_and_record_round_trip(tmp_path):
    vectors = np.arange(6, dtype=np.float64).reshape(3, 2)
    names = ["a.jpg", "sub/b é.png", "c\udcff.jpg"]
    save_vectors(tmp_path / "v.npy", vectors, names, {"answer": 42})
    loaded, loaded_names, record = load_vectors(tmp_path / "v.npy")
    assert loaded.dtype == np.float32
    np.testing.assert_array_equal(loaded, vectors)
    assert loaded_names == names
    checksums = record.pop("checksums")
    assert record == {"answer": 42}
    assert checksums == {
        "vectors": "sha256:" + hashlib.sha256(loaded.tobytes()).hexdigest(),
        "names": "sha256:"
        + hashlib.sha256((tmp_path / "v.names.txt").read_bytes()).hexdigest(),
    }
    record["checksums"] = checksums
    assert (tmp_path / "v.names.txt").read_bytes().count(b"\n") == 3
    assert json.loads((tmp_path / "v.json").read_text()) == record


def test_names_are_optional_when_loading(tmp_path):
    np.save(tmp_path / "plain.npy", np.zeros((2, 3), np.float32))
    vectors, names, record = load_vectors(tmp_path / "plain.npy")
    assert vectors.shape == (2, 3) and names is None and record is None


def test_a_failed_save_leaves_earlier_files_and_no_temporary_ones(tmp_path):
    save_vectors(tmp_path / "v.npy", np.ones((1, 2)), ["a"], {"run": 1})
    before = {path.name: path.read_bytes() for path in tmp_path.iterdir()}
    with pytest.raises(TypeError):
        save_vectors(tmp_path / "v.npy", np.zeros((1, 2)), ["b"], {"bad": object()})
    after = {path.name: path.read_bytes() for path in tmp_path.iterdir()}
    assert after == before


def test_paths_of_a_vectors_file():
    assert [path.name for path in vector_file_paths("x/run.1.npy")] == [
        "run.1.npy",
        "run.1.names.txt",
        "run.1.json",
    ]
    with pytest.raises(ValueError, match="must end in .npy"):
        vector_file_paths("vectors.json")


def test_names_must_match_the_rows(tmp_path):
    with pytest.raises(ValueError, match="shape"):
        save_vectors(tmp_path / "v.npy", np.zeros((2, 3)), ["one"], {})
    save_vectors(tmp_path / "v.npy", np.zeros((2, 3)), ["a", "b"], {})
    (tmp_path / "v.names.txt").write_text("a\n")
    with pytest.raises(ValueError, match="1 names for 2 vectors"):
        load_vectors(tmp_path / "v.npy")


def test_a_file_that_is_not_npy_is_refused(tmp_path):
    (tmp_path / "v.npy").write_text("text")
    with pytest.raises(ValueError, match="is not a vectors file: it is not a NumPy"):
        load_vectors(tmp_path / "v.npy")
