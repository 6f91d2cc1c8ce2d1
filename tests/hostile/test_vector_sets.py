"""A vectors set (``.npy``, ``.names.txt``, ``.json``) whose parts disagree:
a record claiming another shape, number of images or codebook size, or
files of two runs (two ``--overwrite`` runs to one output at once). Refused
in one line by ``load_vectors`` and ``vlad info``; sets written before the
record held checksums still load."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import numpy as np
import pytest
from photos import DATA

import vlad
from hostile.conftest import assert_one_line_error, invoke, record, run_vlad

VECTORS = np.arange(12, dtype=np.float32).reshape(3, 4)
NAMES = ["a.jpg", "b.jpg", "c.jpg"]
RECORD = {
    "format": "vlad vectors",
    "shape": [3, 4],
    "codebook": {"fingerprint": "0123", "n_clusters": 2, "n_features": 2},
    "n_images": 3,
}


def old_set(folder, **changes):
    """A set as vlad 0.4 wrote it (no checksums), its record changed."""
    np.save(folder / "v.npy", VECTORS)
    (folder / "v.names.txt").write_text("".join(f"{name}\n" for name in NAMES))
    (folder / "v.json").write_text(json.dumps({**RECORD, **changes}))
    return folder / "v.npy"


def assert_refused(path, *fragments) -> None:
    with pytest.raises(ValueError, match="does not describe the vectors beside it"):
        vlad.load_vectors(path)
    result = invoke("info", path, exit_code=1)
    assert_one_line_error(result.output, "v.json", *fragments)


def test_an_old_set_without_checksums_loads(tmp_path):
    vectors, names, loaded = vlad.load_vectors(old_set(tmp_path))
    np.testing.assert_array_equal(vectors, VECTORS)
    assert names == NAMES and loaded == RECORD
    assert "kind: vectors" in invoke("info", tmp_path / "v.npy").output
    record("handled")


@pytest.mark.parametrize(
    ("changes", "fragment"),
    [
        ({"shape": [3, 8]}, "shape [3, 8]"),
        ({"shape": "3x4"}, "shape '3x4'"),
        ({"n_images": 2}, "n_images 2"),
        ({"codebook": {"n_clusters": 4, "n_features": 2}}, "a codebook of 4 x 2"),
        ({"checksums": "none"}, "checksums 'none'"),
    ],
)
def test_a_record_that_disagrees_with_the_vectors_is_refused(
    tmp_path, changes, fragment
):
    assert_refused(old_set(tmp_path, **changes), fragment, "3 x 4 vectors")


def test_files_of_two_runs_are_refused(tmp_path):
    """What two --overwrite runs to one output can leave: each file whole,
    the set mixed (same shape, same number of names)."""
    first, second = tmp_path / "first", tmp_path / "second"
    for folder, scale in ((first, 1), (second, 2)):
        folder.mkdir()
        vlad.save_vectors(folder / "v.npy", VECTORS * scale, NAMES, RECORD)
    shutil.copy(second / "v.npy", first / "v.npy")
    assert_refused(first / "v.npy", "another checksum of the vectors")
    shutil.copy(second / "v.json", first / "v.json")  # now of one run
    vlad.load_vectors(first / "v.npy")
    renamed = [name.upper() for name in NAMES]
    vlad.save_vectors(second / "v.npy", VECTORS * 2, renamed, RECORD, overwrite=True)
    shutil.copy(second / "v.names.txt", first / "v.names.txt")
    assert_refused(first / "v.npy", "another checksum of the names")


def test_a_set_written_now_is_read_back_whole(tmp_path):
    vlad.save_vectors(tmp_path / "v.npy", VECTORS, NAMES, RECORD)
    vectors, names, loaded = vlad.load_vectors(tmp_path / "v.npy", mmap=True)
    np.testing.assert_array_equal(vectors, VECTORS)
    assert names == NAMES and set(loaded) == {*RECORD, "checksums"}
    record("handled")


@pytest.mark.slow
def test_two_overwriting_runs_at_once_never_leave_an_accepted_mix(
    tmp_path, codebook_path
):
    """Two ``vlad encode --overwrite`` of different photos to one output, at
    once, three times: what is left is refused, absent or one run's whole set
    (the same vectors and names as that run alone writes)."""
    photos = {name: DATA / f"{name}.jpg" for name in ("chelsea", "coffee")}
    alone = {}
    for name, photo in photos.items():
        args = encode_args(photo, codebook_path, tmp_path / f"{name}.npy")
        assert run_vlad(*args).returncode == 0
        alone[name] = vlad.load_vectors(tmp_path / f"{name}.npy")[:2]
    output = tmp_path / "both" / "v.npy"
    output.parent.mkdir()
    for _ in range(3):
        processes = [
            subprocess.Popen(
                [sys.executable, "-m", "vlad"]
                + [str(arg) for arg in encode_args(photo, codebook_path, output)],
                stderr=subprocess.DEVNULL,
            )
            for photo in photos.values()
        ]
        for process in processes:
            process.wait()
        if not output.exists():
            continue
        try:
            vectors, names = vlad.load_vectors(output)[:2]
        except ValueError as error:
            assert "does not describe the vectors beside it" in str(error)
            continue
        assert any(
            names == known_names and np.array_equal(vectors, known)
            for known, known_names in alone.values()
        )
    record("handled")


def encode_args(photo, codebook_path, output):
    fast = ("--max-side", 128, "-q", "--overwrite")
    return ("encode", photo, "-c", codebook_path, "-o", output, *fast)
