"""Summaries of vlad files: vlad._info."""

from __future__ import annotations

import json
from pathlib import Path

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


def test_the_record_and_names_beside_vectors_stand_alone(tmp_path):
    record = {"format": "vlad vectors", "shape": [3, 4], "n_empty": 0}
    save_vectors(tmp_path / "v.npy", np.eye(3, 4), ["a", "b", "a"], record)
    record = describe_file(tmp_path / "v.json")
    assert record["kind"] == "vectors record" and record["n_images"] == 3
    assert record["vectors_file"] == str(tmp_path / "v.npy")
    names = describe_file(tmp_path / "v.names.txt")
    assert (names["kind"], names["n_names"], names["n_distinct"]) == (
        "vector names", 3, 2,
    )  # fmt: skip
    assert names["n_vectors"] == 3
    # Moved away from their vectors, they still say what they are.
    (tmp_path / "v.npy").unlink()
    assert describe_file(tmp_path / "v.json")["vectors_file"] is None
    assert describe_file(tmp_path / "v.json")["shape"] == [3, 4]
    assert "n_vectors" not in describe_file(tmp_path / "v.names.txt")


def test_a_picture_is_described_from_its_header_alone(tmp_path):
    # A header-only fake of 20000 x 20000 pixels: never decoded.
    fake = bytearray((Path(vlad.__file__).parents[1] / "data/camera.png").read_bytes())
    fake[16:24] = (20000).to_bytes(4, "big") * 2
    (tmp_path / "huge.png").write_bytes(bytes(fake))
    summary = describe_file(tmp_path / "huge.png")
    assert (summary["kind"], summary["format"]) == ("image", "PNG")
    assert (summary["width"], summary["height"]) == (20000, 20000)


def test_a_page_says_which_of_its_images_are_missing(tmp_path):
    page = tmp_path / "results.html"
    folder = tmp_path / "results_files" / "thumbnails"
    folder.mkdir(parents=True)
    (folder / f"{'0' * 24}.jpg").write_bytes(b"")
    (folder / "notes.txt").write_bytes(b"")
    page.write_text(
        "<!DOCTYPE html><html><head><title>vlad search results</title></head>"
        f'<body><img src="results_files/thumbnails/{"0" * 24}.jpg">'
        f'<img src="results_files/thumbnails/{"1" * 24}.jpg">'
        '<img src="https://example.org/x.jpg"><a href="/etc/passwd">x</a>'
        "<svg><title>not the page's</title></svg></body></html>"
    )
    assert describe_file(page) == {
        "file": str(page),
        "kind": "search page",
        "folder": str(tmp_path / "results_files"),
        "n_images": 2,
        "n_missing": 1,
    }
    assert describe_file(tmp_path / "results_files") == {
        "file": str(tmp_path / "results_files"),
        "kind": "page folder",
        "page": str(page),
        "n_thumbnails": 1,
        "n_matches_pictures": 0,
        "n_bytes": 0,
        "n_other_files": 1,
    }


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("other.html", b"<title>My page</title>", "not a vlad page: its title"),
        ("other.json", b'{"format": "other"}', "not a vlad file: a JSON file"),
        ("list.json", b"[1, 2]", "not a vlad file: a JSON file"),
        ("broken.json", b"{", "not a vlad file: not JSON"),
        ("notes.jpg", b"plain text", "not a vlad file: not an image"),
    ],
)
def test_other_pages_records_and_pictures_are_refused(tmp_path, name, content, message):
    (tmp_path / name).write_bytes(content)
    with pytest.raises(ValueError, match=message):
        describe_file(tmp_path / name)


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
