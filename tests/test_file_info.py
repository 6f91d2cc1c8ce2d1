"""Summaries of vlad files: vlad._info."""

from __future__ import annotations

import json

import numpy as np
import pytest

import vlad
from vlad._info import describe_file
from vlad.formats._vectors import save_vectors


@pytest.fixture(scope="module")
def sets():
    return vlad.datasets.make_descriptor_sets(5, 40, 16, ragged=True, seed=3)


def test_codebook(tmp_path, sets):
    codebook = vlad.fit_codebook(sets, 4, seed=1)
    codebook.save(tmp_path / "codebook.npz")
    summary = describe_file(tmp_path / "codebook.npz")
    assert summary["kind"] == "codebook"
    assert (summary["n_clusters"], summary["n_features"]) == (4, 16)
    assert summary["fingerprint"] == codebook.fingerprint
    assert summary["seed"] == 1
    json.dumps(summary)


def test_descriptor_sets(tmp_path, sets):
    sets.save(tmp_path / "descriptors.npz")
    summary = describe_file(tmp_path / "descriptors.npz")
    assert summary["kind"] == "descriptor sets"
    assert summary["n_images"] == 5 and summary["n_features"] == 16
    assert summary["n_descriptors"] == sets.descriptors.shape[0]
    assert summary["descriptors_per_image"]["max"] == sets.lengths.max()
    assert summary["n_empty"] == int((sets.lengths == 0).sum())
    assert "keypoints" not in summary


def test_descriptor_sets_with_keypoints_say_so(tmp_path, sets):
    with_keypoints = vlad.DescriptorSets(
        sets.descriptors,
        sets.offsets,
        keypoints=np.zeros((sets.descriptors.shape[0], 4)),
    )
    with_keypoints.save(tmp_path / "descriptors.npz")
    summary = describe_file(tmp_path / "descriptors.npz")
    assert summary["keypoints"] == ["x", "y", "size", "angle"]
    assert summary["n_descriptors"] == sets.descriptors.shape[0]
    json.dumps(summary)


def test_vectors(tmp_path):
    vectors = np.eye(3, 4, dtype=np.float32)
    vectors[2] = 0
    save_vectors(tmp_path / "v.npy", vectors, ["a", "b", "c"], {"n_skipped": 2})
    summary = describe_file(tmp_path / "v.npy")
    assert summary["kind"] == "vectors"
    assert (summary["n_images"], summary["n_dimensions"]) == (3, 4)
    assert summary["n_zero_rows"] == 1 and summary["all_finite"]
    assert summary["n_skipped"] == 2
    assert summary["names_file"].endswith("v.names.txt")


def test_a_plain_array(tmp_path):
    np.save(tmp_path / "a.npy", np.zeros((2, 3, 4)))
    assert describe_file(tmp_path / "a.npy") == {
        "file": str(tmp_path / "a.npy"),
        "kind": "array",
        "shape": [2, 3, 4],
        "dtype": "float64",
    }


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("photo.jpg", b"\xff\xd8", "not a vlad file"),
        ("other.npz", None, "not a vlad file"),
        ("broken.npz", b"not a zip", "is not a vlad file: it is not a NumPy"),
        ("broken.npy", b"not an array", "is not a vlad file: it is not a NumPy"),
    ],
)
def test_other_files_are_refused(tmp_path, name, content, message):
    path = tmp_path / name
    if content is None:
        np.savez(path, values=np.zeros(3))
    else:
        path.write_bytes(content)
    with pytest.raises(ValueError, match=message):
        describe_file(path)


def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError):
        describe_file(tmp_path / "missing.npz")
