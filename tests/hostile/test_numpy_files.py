"""Hostile .npy and .npz files given to vlad fit, encode and info: pickles,
lying headers, zip bombs, missing members, malformed records, NaN, inf,
huge finite values, wrong dtypes and ranks.

Every file either works (finite results) or gets a one-line error with exit
status 1; nothing is ever unpickled (each pickle would create a marker
folder), and nothing is allocated because a header says so.
"""

from __future__ import annotations

import json
import os
import re

import numpy as np
import pytest
from photos import DATA

import vlad
from hostile.conftest import (
    assert_one_line_error,
    assert_valid_vectors,
    invoke,
    record,
)
from hostile.makers import (
    deep_json,
    npy_header_claiming,
    npz_with_lying_member,
    pickle_npy,
    pickle_npz,
    raw_pickle,
    record_archive,
    zip_bomb_npz,
)
from vlad.formats._descriptor_files import read_descriptor_file

RNG = np.random.default_rng(0)
DESCRIPTORS = RNG.random((40, 128), dtype=np.float32)
CENTERS = RNG.random((4, 128), dtype=np.float32)
SETS_RECORD = {"format": "descriptor sets", "format_version": 2, "descriptor": {}}
CODEBOOK_RECORD = {"format": "codebook", "format_version": 1}
VECTORS_RECORD = {"format": "vlad vectors", "format_version": 1}


def sets_npz(path, record=None, **arrays):
    """A descriptor sets file of 40 descriptors in 2 images, with members and
    record replaced as given."""
    members = {
        "descriptors": DESCRIPTORS,
        "offsets": np.array([0, 25, 40]),
        "names": np.array(["a.jpg", "b.jpg"]),
        **arrays,
    }
    members = {name: value for name, value in members.items() if value is not None}
    return record_archive(path, json.dumps(record or SETS_RECORD), **members)


def codebook_npz(path, record=None, **arrays):
    """A codebook file of 4 centres, with members and record replaced."""
    members = {"centers": CENTERS, **arrays}
    members = {name: value for name, value in members.items() if value is not None}
    return record_archive(path, json.dumps(record or CODEBOOK_RECORD), **members)


def descriptors_npy(values):
    def make(path, marker):
        np.save(path, values)
        return path

    return make


#: Descriptor files given to `vlad fit`: name -> (file maker, error fragment;
#: None when the file must work).
DESCRIPTOR_FILES = {
    "pickled.npy": (pickle_npy, "holds Python objects"),
    "pickled-member.npz": (
        lambda path, marker: pickle_npz(
            path,
            marker,
            "descriptors",
            metadata=np.array(json.dumps(SETS_RECORD)),
            offsets=np.array([0, 1]),
            names=np.array(["a"]),
        ),
        "holds Python objects",
    ),
    "pickled-record.npz": (
        lambda path, marker: pickle_npz(path, marker, "metadata", offsets=[0]),
        "holds Python objects",
    ),
    "raw-pickle.npy": (raw_pickle, "it is a Python pickle"),
    "raw-pickle.npz": (raw_pickle, "it is a Python pickle"),
    "lying-header.npy": (
        lambda path, marker: npy_header_claiming(path, (10**12, 128)),
        "truncated",
    ),
    "lying-member.npz": (
        lambda path, marker: npz_with_lying_member(
            path,
            "descriptors",
            (10**9, 128),
            metadata=np.array(json.dumps(SETS_RECORD)),
            offsets=np.array([0, 10**9]),
            names=np.array(["a"]),
        ),
        "promises 512000000000 bytes",
    ),
    "no-offsets.npz": (
        lambda path, marker: sets_npz(path, offsets=None),
        "lacks offsets",
    ),
    "no-record.npz": (
        lambda path, marker: np.savez(path, descriptors=DESCRIPTORS) or path,
        "lacks metadata",
    ),
    "not-json.npz": (lambda path, marker: record_archive(path, "{oops"), "damaged"),
    "json-list.npz": (lambda path, marker: record_archive(path, "[1]"), "format=None"),
    "deep-json.npz": (
        lambda path, marker: record_archive(path, deep_json(100_000)),
        "damaged",
    ),
    "numbers-record.npz": (
        lambda path, marker: record_archive(path, np.arange(3)),
        "not one JSON string",
    ),
    "string-descriptor-record.npz": (
        lambda path, marker: sets_npz(path, {**SETS_RECORD, "descriptor": "sift"}),
        "descriptor record is a str",
    ),
    "newer.npz": (
        lambda path, marker: sets_npz(path, {**SETS_RECORD, "format_version": 99}),
        "written by a newer vlad",
    ),
    "bad-keypoint-fields.npz": (
        lambda path, marker: sets_npz(path, {**SETS_RECORD, "keypoint_fields": "xy"}),
        "keypoint fields",
    ),
    "decreasing-offsets.npz": (
        lambda path, marker: sets_npz(path, offsets=np.array([0, 30, 20, 40])),
        "non-decreasing",
    ),
    "float-offsets.npz": (
        lambda path, marker: sets_npz(path, offsets=np.array([0.0, 40.0])),
        "offsets must hold integers",
    ),
    "too-many-names.npz": (
        lambda path, marker: sets_npz(path, names=np.array(["a", "b", "c"])),
        "one name per image",
    ),
    "nan.npy": (descriptors_npy(np.full((40, 128), np.nan, np.float32)), "NaN"),
    "inf.npz": (
        lambda path, marker: sets_npz(path, descriptors=np.full((40, 128), np.inf)),
        "NaN or infinite",
    ),
    "complex.npy": (descriptors_npy(np.ones((40, 8), complex)), "Complex data"),
    "strings.npy": (descriptors_npy(np.full((40, 8), "1.5")), "real numbers"),
    "flat.npy": (descriptors_npy(np.ones(40)), "must hold descriptors of shape"),
    "four-d.npy": (descriptors_npy(np.ones((2, 2, 2, 2))), "must hold descriptors"),
    "scalar.npy": (descriptors_npy(np.float32(3)), "must hold descriptors"),
    "no-features.npy": (descriptors_npy(np.ones((40, 0))), "at least one feature"),
    "no-descriptors.npy": (descriptors_npy(np.ones((0, 8))), "cannot fit 2 centres"),
    "vectors.npy": (
        lambda path, marker: (
            vlad.save_vectors(
                path,
                RNG.random((15, 8192)),
                [str(i) for i in range(15)],
                VECTORS_RECORD,
            )
            or path
        ),
        "holds VLAD vectors",
    ),
    "pickled-vectors.npy": (
        lambda path, marker: (
            pickle_npy(path, marker)
            if path.with_suffix(".json").write_text(json.dumps(VECTORS_RECORD))
            else path
        ),
        "holds VLAD vectors",
    ),
    "pipe.npy": (
        lambda path, marker: os.mkfifo(path) or path,
        "not a regular file",
    ),
    "huge-float32.npy": (descriptors_npy(DESCRIPTORS * np.float32(5e36)), None),
    "huge-float64.npy": (descriptors_npy(DESCRIPTORS.astype(np.float64) * 1e307), None),
    "tiny-float32.npy": (descriptors_npy(DESCRIPTORS * np.float32(1e-40)), None),
    "float16.npy": (descriptors_npy(DESCRIPTORS.astype(np.float16)), None),
    "int8.npy": (descriptors_npy((DESCRIPTORS * 100).astype(np.int8)), None),
    "bool.npy": (descriptors_npy(DESCRIPTORS > 0.5), None),
}


@pytest.mark.parametrize("name", sorted(DESCRIPTOR_FILES))
def test_fit_on_hostile_descriptor_files(tmp_path, name):
    make, fragment = DESCRIPTOR_FILES[name]
    marker = tmp_path / "unpickled"
    path = make(tmp_path / name, marker)
    made = sorted(p.name for p in tmp_path.iterdir())
    output = tmp_path / "codebook.npz"
    if fragment is None:
        invoke("fit", path, "--n-clusters", 2, "-o", output, "-q")
        codebook = vlad.Codebook.load(output)
        assert np.isfinite(codebook.centers).all()
        vectors = vlad.encode(read_descriptor_file(path), codebook)
        assert np.isfinite(vectors).all() and np.abs(vectors).max() > 0
        invoke("encode", path, "-c", output, "-o", tmp_path / "v.npy", "-q")
        assert_valid_vectors(tmp_path / "v.npy")
        np.testing.assert_allclose(np.load(tmp_path / "v.npy"), vectors, atol=1e-6)
        record("handled")
    else:
        result = invoke("fit", path, "--n-clusters", 2, "-o", output, exit_code=1)
        assert_one_line_error(result.output, fragment)
        with pytest.raises((TypeError, ValueError), match=re.escape(fragment)):
            vlad.fit_codebook(read_descriptor_file(path), 2)
        assert sorted(p.name for p in tmp_path.iterdir()) == made
    assert not marker.exists()


#: Codebook files given to `vlad encode`: name -> (file maker, error fragment).
CODEBOOK_FILES = {
    "pickled-centres.npz": (
        lambda path, marker: pickle_npz(
            path, marker, "centers", metadata=np.array(json.dumps(CODEBOOK_RECORD))
        ),
        "holds Python objects",
    ),
    "raw-pickle.npz": (raw_pickle, "it is a Python pickle"),
    "zip-bomb.npz": (
        lambda path, marker: zip_bomb_npz(
            path, "centers", 128 << 20, metadata=np.array(json.dumps(CODEBOOK_RECORD))
        ),
        "expands",
    ),
    "no-centres.npz": (lambda path, marker: codebook_npz(path, centers=None), "lacks"),
    "list-record.npz": (
        lambda path, marker: codebook_npz(path, {**CODEBOOK_RECORD, "descriptor": [1]}),
        "descriptor record is a list",
    ),
    "orb.npz": (
        lambda path, marker: codebook_npz(
            path, {**CODEBOOK_RECORD, "descriptor": {"extractor": "orb"}}
        ),
        "fitted on 'orb' descriptors",
    ),
    "bad-options.npz": (
        lambda path, marker: codebook_npz(
            path,
            {
                **CODEBOOK_RECORD,
                "descriptor": {"extractor": "opencv-sift", "max_side": "big"},
            },
        ),
        "max_side must be an integer",
    ),
    "nan-centres.npz": (
        lambda path, marker: codebook_npz(path, centers=np.full((4, 128), np.nan)),
        "NaN",
    ),
    "three-d-centres.npz": (
        lambda path, marker: codebook_npz(path, centers=np.ones((2, 2, 128))),
        "2-D array",
    ),
    "other-dimension.npz": (
        lambda path, marker: codebook_npz(path, centers=np.ones((4, 64))),
        "features",
    ),
}


@pytest.mark.parametrize("name", sorted(CODEBOOK_FILES))
def test_encode_with_hostile_codebook_files(tmp_path, name):
    make, fragment = CODEBOOK_FILES[name]
    marker = tmp_path / "unpickled"
    path = make(tmp_path / name, marker)
    descriptors = tmp_path / "d.npy"
    np.save(descriptors, DESCRIPTORS[None])
    output = tmp_path / "v.npy"
    inputs = [DATA] if name in ("orb.npz", "bad-options.npz") else [descriptors]
    result = invoke("encode", *inputs, "-c", path, "-o", output, exit_code=1)
    assert_one_line_error(result.output, fragment)
    assert not output.exists() and not marker.exists()


#: Files vlad info must refuse whatever else it may say about the others.
INFO_REFUSES = {"pickled-vectors.npy"} | {
    name
    for name, (_, fragment) in (DESCRIPTOR_FILES | CODEBOOK_FILES).items()
    if fragment
    and any(
        word in fragment
        for word in ("Python", "pickle", "truncated", "promises", "expands", "lacks")
    )
}


@pytest.mark.parametrize("name", sorted(DESCRIPTOR_FILES | CODEBOOK_FILES))
def test_info_on_hostile_files(tmp_path, name):
    """vlad info reads no more than its summary needs: pickles, bombs and
    lying headers are refused in one line; what it can describe, it does."""
    make, _ = (DESCRIPTOR_FILES | CODEBOOK_FILES)[name]
    marker = tmp_path / "unpickled"
    path = make(tmp_path / name, marker)
    result = invoke("info", path, exit_code=None)
    if name in INFO_REFUSES:
        assert result.exit_code == 1
    if result.exit_code == 0:
        assert "kind:" in result.output
        record("handled")
    else:
        assert result.exit_code == 1
        assert_one_line_error(result.output)
    assert not marker.exists()


def test_info_shows_what_it_computes_not_what_the_record_claims(tmp_path):
    path = tmp_path / "codebook.npz"
    spoof = {
        **CODEBOOK_RECORD,
        "file": "innocent.npz",
        "kind": "vectors",
        "fingerprint": "0000000000000000",
        "n_clusters": 999,
        "note": "\x1b[2J\x1b]0;owned\x07",
    }
    codebook_npz(path, spoof)
    summary = vlad.describe_file(path)
    codebook = vlad.Codebook.load(path)
    assert summary["file"] == str(path) and summary["kind"] == "codebook"
    assert summary["fingerprint"] == codebook.fingerprint != "0000000000000000"
    assert summary["n_clusters"] == 4
    shown = invoke("info", path).output
    assert "\x1b" not in shown and "\x07" not in shown
    assert "note: \\x1b[2J\\x1b]0;owned\\x07" in shown
    assert "\\u001b" in invoke("info", path, "--json").output
    record("handled")


def test_info_on_descriptor_sets_reads_no_descriptors(tmp_path):
    """A bomb in the descriptors member: info describes the file from its
    header, without reading (or expanding) it."""
    path = zip_bomb_npz(
        tmp_path / "sets.npz",
        "descriptors",
        128 << 20,
        metadata=np.array(json.dumps(SETS_RECORD)),
        offsets=np.array([0, 1 << 18]),
        names=np.array(["a.jpg"]),
    )
    summary = vlad.describe_file(path)
    assert summary["n_descriptors"] == 1 << 18 and summary["n_features"] == 128
    with pytest.raises(ValueError, match="expands"):
        vlad.DescriptorSets.load(path)
    record("handled")


def test_a_codebook_without_a_descriptor_record_warns_on_images(tmp_path):
    """Fitted on a raw .npy, a codebook does not know how its descriptors
    were made: encoding images with it says so."""
    path = tmp_path / "sift.npy"
    np.save(path, DESCRIPTORS)
    invoke("fit", path, "--n-clusters", 2, "-o", tmp_path / "codebook.npz", "-q")
    result = invoke(
        "encode", DATA / "chelsea.jpg", "-c", tmp_path / "codebook.npz",
        "-o", tmp_path / "v.npy", "--max-side", 128,
    )  # fmt: skip
    assert "warning: the codebook does not record how its descriptors" in result.output
    assert_valid_vectors(tmp_path / "v.npy", ["chelsea.jpg"])
    record("handled")


def _vectors(path, record_text=None, names="0\n1\n"):
    np.save(path, np.ones((2, 4), np.float32))
    path.with_suffix(".names.txt").write_text(names)
    path.with_suffix(".json").write_text(record_text or json.dumps(VECTORS_RECORD))
    return path


@pytest.mark.parametrize(
    ("record_text", "names", "fragment"),
    [
        (deep_json(100_000), "0\n1\n", "not readable JSON"),
        ("[1, 2]", "0\n1\n", "not a vectors record"),
        ("\udcff", "0\n1\n", "not readable JSON"),
        (None, "0\n1\n2\n", "holds 3 names for 2 vectors"),
        (None, "0\n", "holds 1 names for 2 vectors"),
    ],
)
def test_info_on_vectors_with_a_broken_record_or_names(
    tmp_path, record_text, names, fragment
):
    path = tmp_path / "vectors.npy"
    if record_text == "\udcff":
        _vectors(path)
        path.with_suffix(".json").write_bytes(b"\xff\xfe{")
    else:
        _vectors(path, record_text, names)
    result = invoke("info", path, exit_code=1)
    assert_one_line_error(result.output, fragment)
