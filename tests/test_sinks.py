"""Every output of one run holds the same rows: VLAD vectors in memory, in a
``.npy``, in hloc's ``.h5`` and in a folder of shards, and descriptors in
memory, in an ``.npz`` and in a folder, each read back and compared with the
in-memory result, exactly; a file's run resumed from its staged shards; and
what no output can do refused in one line."""

from __future__ import annotations

import json

import numpy as np
import pytest
from photos import FAST_OPTIONS, MESSY_NAMES, MESSY_SKIPPED
from shard_folders import interrupt_after_the_first_shard

import vlad
from vlad.formats._descriptor_files import read_descriptor_file
from vlad.formats._hloc_global import read_global_features
from vlad.formats._vectors import load_vectors
from vlad.pipeline import encode_images, extract_images
from vlad.pipeline._sinks import staging_folder


def read_vectors(path):
    """The vectors and names an output holds, as its own reader gives them."""
    if path.suffix == ".h5":
        vectors, names, _ = read_global_features(path)
        return np.asarray(vectors), list(names)
    vectors, names, _ = load_vectors(path)
    return np.asarray(vectors), list(names)


@pytest.fixture(scope="module")
def in_memory(messy, small_codebook):
    """The messy folder's vectors and descriptors, kept in memory."""
    encoded = encode_images(messy, small_codebook, n_jobs=1)
    sets, report = extract_images(messy, FAST_OPTIONS, n_jobs=1)
    return encoded, sets, report


# Shards of 2 images: the 6 files of the messy folder make 3, each with a
# skipped or empty image somewhere.
VECTOR_OUTPUTS = [
    pytest.param("v.npy", False, id="npy"),
    pytest.param("v.h5", False, id="h5"),
    pytest.param("v", False, id="folder"),
    pytest.param("v.npy", True, id="npy-staged"),
]


@pytest.mark.parametrize(("name", "resume"), VECTOR_OUTPUTS)
def test_every_vector_output_holds_the_rows_kept_in_memory(
    in_memory, messy, small_codebook, tmp_path, name, resume
):
    expected = in_memory[0]
    assert expected.names == MESSY_NAMES
    assert set(expected.report.skipped) == set(MESSY_SKIPPED)
    output = tmp_path / name
    result = encode_images(
        messy, small_codebook, output=output, shard_images=2, resume=resume, n_jobs=1
    )
    vectors, names = read_vectors(output)
    assert names == expected.names == result.names
    assert vectors.dtype == np.float32
    assert vectors.tobytes() == expected.vectors.tobytes()
    assert np.asarray(result.vectors).tobytes() == expected.vectors.tobytes()
    assert result.report == expected.report
    assert not staging_folder(output).exists()
    if output.suffix == ".npy":
        record = json.loads(output.with_suffix(".json").read_text())
        record.pop("checksums")
        assert record == expected.record()


DESCRIPTOR_OUTPUTS = [
    pytest.param("d.npz", False, id="npz"),
    pytest.param("d", False, id="folder"),
    pytest.param("d.npz", True, id="npz-staged"),
]


@pytest.mark.parametrize(("name", "resume"), DESCRIPTOR_OUTPUTS)
def test_every_descriptor_output_holds_the_sets_kept_in_memory(
    in_memory, messy, tmp_path, name, resume
):
    _, expected, expected_report = in_memory
    output = tmp_path / name
    sets, report = extract_images(
        messy, FAST_OPTIONS, output=output, shard_images=2, resume=resume, n_jobs=1
    )
    written = read_descriptor_file(output)
    for held in (written, sets if output.suffix else sets.to_sets()):
        assert held.names == expected.names == MESSY_NAMES
        assert held.descriptors.dtype == np.float32
        assert held.descriptors.tobytes() == expected.descriptors.tobytes()
        assert held.keypoints.tobytes() == expected.keypoints.tobytes()
        assert np.array_equal(held.offsets, expected.offsets)
        assert held.metadata == expected.metadata
    assert report == expected_report
    assert not staging_folder(output).exists()


def test_a_callable_extractors_descriptors_go_to_memory_or_an_npz_only(messy, tmp_path):
    """Its descriptors, without keypoints, are those it gives each image (as
    float32); a folder, or a file's staged shards, would hold keypoints."""

    def gradients(image):
        return np.diff(image[:8, :9].astype(np.float64), axis=1).reshape(-1, 6)

    listed = vlad.DescriptorSets.from_list(
        [
            gradients(vlad.images.read_image(messy / name, colour=True))
            for name in MESSY_NAMES
        ]
    )
    sets, _ = extract_images(messy, extractor=gradients, shard_images=1, n_jobs=1)
    extract_images(messy, extractor=gradients, output=tmp_path / "g.npz", n_jobs=1)
    for held in (sets, vlad.DescriptorSets.load(tmp_path / "g.npz")):
        assert held.keypoints is None and held.names == MESSY_NAMES
        assert np.array_equal(held.offsets, listed.offsets)
        assert held.descriptors.dtype == np.float32
        assert np.array_equal(held.descriptors, listed.descriptors.astype(np.float32))
    refusals = [
        {"output": tmp_path / "g"},
        {"output": tmp_path / "h.npz", "resume": True},
    ]
    for refused in refusals:
        with pytest.raises(ValueError, match="callable extractor does not give"):
            extract_images(messy, extractor=gradients, **refused)
    assert not (tmp_path / "g").exists() and not (tmp_path / "h.npz").exists()


def test_an_interrupted_file_run_resumes_from_its_staged_shards(
    in_memory, messy, small_codebook, tmp_path, monkeypatch
):
    """Interrupted after its first shard, a run into a ``.npy`` with
    ``resume`` leaves that shard staged and no file; resumed, it keeps it,
    makes the others and writes the same file, then removes the staging."""
    output = tmp_path / "v.npy"
    arguments = {"output": output, "shard_images": 2, "resume": True, "n_jobs": 1}
    interrupt_after_the_first_shard(monkeypatch)
    with pytest.raises(KeyboardInterrupt):
        encode_images(messy, small_codebook, **arguments)
    assert not output.exists()
    assert len(list(staging_folder(output).glob("part-00000-*.json"))) == 1
    monkeypatch.undo()
    encode_images(messy, small_codebook, **arguments)
    vectors, names = read_vectors(output)
    assert names == MESSY_NAMES
    assert vectors.tobytes() == in_memory[0].vectors.tobytes()
    assert not staging_folder(output).exists()


def test_what_an_output_cannot_do_is_refused_in_one_line(
    messy, small_codebook, tmp_path
):
    with pytest.raises(ValueError, match="kept in memory leaves nothing to resume"):
        encode_images(messy, small_codebook, resume=True)
    with pytest.raises(ValueError, match="must end in .npy or .h5, or have no"):
        encode_images(messy, small_codebook, output=tmp_path / "v.npz")
    with pytest.raises(ValueError, match="must end in .npz, or have no suffix"):
        extract_images(messy, output=tmp_path / "d.npy")
    (tmp_path / "v.npy").write_bytes(b"")
    with pytest.raises(FileExistsError, match="--resume finishes a run stopped"):
        encode_images(messy, small_codebook, output=tmp_path / "v.npy", resume=True)
    with pytest.raises(FileNotFoundError, match="the folder of"):
        extract_images(messy, output=tmp_path / "none" / "d")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["v.npy"]
