"""Folders of vector shards: the same vectors and names as one encoding in
memory, any file name, refusal of incomplete or mixed folders, and resuming."""

from __future__ import annotations

import json
import os
import shutil

import numpy as np
import pytest
from photos import DATA, FAST_OPTIONS, MESSY_NAMES
from shard_folders import folder_bytes, shard_file

import vlad
from vlad.formats._shards import MANIFEST_NAME, ShardedVectors, ShardWriter, open_shards
from vlad.pipeline._vector_shards import encode_images_to_folder


@pytest.fixture(scope="module")
def codebook(small_codebook):
    return small_codebook


@pytest.fixture(scope="module")
def messy_encoded(codebook, messy):
    return vlad.encode_images(messy, codebook, n_jobs=2)


@pytest.mark.parametrize("shard_images", [1, 2, 5, 64])
def test_shards_hold_what_one_encoding_in_memory_gives(
    codebook, messy, messy_encoded, tmp_path, shard_images
):
    whole = messy_encoded
    shards = encode_images_to_folder(
        messy, codebook, tmp_path / "v", shard_images=shard_images, n_jobs=2
    )
    n_found = len(MESSY_NAMES) + 3
    assert len(shards.blocks) == -(-n_found // shard_images)
    assert np.array_equal(np.asarray(shards), whole.vectors)
    assert shards.names == whole.names == MESSY_NAMES
    record = whole.record()
    for field in ("shape", "codebook", "descriptor", "encoding", "n_found", "empty"):
        assert shards.record[field] == record[field], field
    assert sorted(shards.record["skipped"], key=str) == sorted(
        record["skipped"], key=str
    )
    vectors, names, manifest = vlad.load_vectors(tmp_path / "v")
    assert np.array_equal(vectors, whole.vectors) and names == whole.names
    mapped, _, _ = vlad.load_vectors(tmp_path / "v", mmap=True)
    assert isinstance(mapped, ShardedVectors) and mapped.shape == whole.vectors.shape
    assert all(isinstance(block, np.memmap) for block in mapped.blocks)


def test_descriptor_files_are_sharded_too(codebook, tmp_path):
    sets, _ = vlad.extract_images(DATA, FAST_OPTIONS, n_jobs=2)
    sets.save(tmp_path / "d.npz")
    whole = vlad.encode_images(tmp_path / "d.npz", codebook)
    shards = encode_images_to_folder(
        tmp_path / "d.npz", codebook, tmp_path / "v", shard_images=3
    )
    assert np.array_equal(np.asarray(shards), whole.vectors)
    assert shards.names == whole.names and len(shards.blocks) == 3


HOSTILE_NAMES = [b"new\nline.jpg", b"tab\there.jpg", b"caf\xe9.jpg", b"\rcr.jpg"]


def test_any_file_name_keeps_its_row(codebook, tmp_path):
    folder = tmp_path / "photos"
    folder.mkdir()
    photo = (DATA / "chelsea.jpg").read_bytes()
    for name in HOSTILE_NAMES:
        with open(os.fsencode(folder) + b"/" + name, "wb") as handle:
            handle.write(photo)
    shards = encode_images_to_folder(folder, codebook, tmp_path / "v", shard_images=2)
    assert sorted(os.fsencode(name) for name in shards.names) == sorted(HOSTILE_NAMES)
    # Every row is the photo's; each name maps back to its file.
    expected = vlad.encode_images(DATA / "chelsea.jpg", codebook).vectors
    assert np.array_equal(np.asarray(shards), np.repeat(expected, 4, axis=0))
    for name in shards.names:
        assert os.path.isfile(os.fsencode(folder) + b"/" + os.fsencode(name))
    # A vectors .npy's one-name-per-line file has no room for line breaks:
    # those images are skipped, saying why; a list holding one is refused.
    whole = vlad.encode_images(folder, codebook)
    assert sorted(whole.report.skipped) == ["\rcr.jpg", "new\nline.jpg"]
    assert "a folder of vector shards can" in whole.report.skipped["\rcr.jpg"]
    with pytest.raises(ValueError, match="must not hold line breaks.*folder of shards"):
        vlad.save_vectors(tmp_path / "v.npy", expected, ["new\nline.jpg"], {})
    assert not (tmp_path / "v.npy").exists()


def test_undecodable_names_round_trip_in_names_txt(tmp_path):
    names = ["caf\udce9.jpg", "tab\there.jpg"]
    vlad.save_vectors(tmp_path / "v.npy", np.eye(2), names, {})
    assert (tmp_path / "v.names.txt").read_bytes() == b"caf\xe9.jpg\ntab\there.jpg\n"
    assert vlad.load_vectors(tmp_path / "v.npy")[1] == names


def test_a_folder_without_its_manifest_is_never_read(codebook, tmp_path):
    encode_images_to_folder(DATA, codebook, tmp_path / "v", shard_images=3)
    (tmp_path / "v" / MANIFEST_NAME).unlink()
    with pytest.raises(
        ValueError,
        match=r"no manifest.json .*resume it with resume=True or --resume\)$",
    ):
        vlad.load_vectors(tmp_path / "v")


def test_a_folder_of_something_else_is_not_vectors(tmp_path):
    (tmp_path / "photos").mkdir()
    (tmp_path / "photos" / "a.jpg").write_bytes(b"")
    with pytest.raises(ValueError, match="not a folder of vectors: it has no manifest"):
        vlad.load_vectors(tmp_path / "photos")


def test_shards_of_another_run_are_never_mixed_in(codebook, tmp_path):
    encode_images_to_folder(DATA, codebook, tmp_path / "a", shard_images=3)
    encode_images_to_folder(DATA, codebook, tmp_path / "b", shard_images=3, power=0.5)
    # Files of another run have other names: the manifest never leads to them.
    assert shard_file(tmp_path / "a", 1, ".npy").name != (
        shard_file(tmp_path / "b", 1, ".npy").name
    )
    # Another run's content under this run's name is refused by its key...
    shutil.copyfile(
        shard_file(tmp_path / "b", 1, ".json"), shard_file(tmp_path / "a", 1, ".json")
    )
    with pytest.raises(ValueError, match="part-00001-.*json belongs to another run"):
        open_shards(tmp_path / "a")
    # ... and vectors of another shape by their shape.
    np.save(shard_file(tmp_path / "b", 2, ".npy"), np.zeros((1, 512), np.float32))
    with pytest.raises(ValueError, match="part-00002-.*npy is not the shard"):
        open_shards(tmp_path / "b")
    # A replacing run removes the files a reader would follow: an error.
    shard_file(tmp_path / "b", 0, ".json").unlink()
    with pytest.raises(ValueError, match="part-00000-.*json is missing"):
        open_shards(tmp_path / "b")


def test_folders_are_replaced_only_when_asked(codebook, tmp_path):
    encode_images_to_folder(DATA, codebook, tmp_path / "v", shard_images=3)
    with pytest.raises(
        FileExistsError,
        match=r"exists; pass overwrite=True \(--overwrite\) to replace it or "
        r"resume=True \(--resume\) to finish it$",
    ):
        encode_images_to_folder(DATA, codebook, tmp_path / "v")
    replaced = encode_images_to_folder(DATA, codebook, tmp_path / "v", overwrite=True)
    assert len(replaced.blocks) == 1
    assert sorted(os.listdir(tmp_path / "v")) == [
        MANIFEST_NAME,
        shard_file(tmp_path / "v", 0, ".json").name,
        shard_file(tmp_path / "v", 0, ".npy").name,
    ]
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "keep.txt").write_text("mine")
    with pytest.raises(ValueError, match="not a folder of vector shards.*keep.txt"):
        ShardWriter(tmp_path / "other", overwrite=True)
    assert (tmp_path / "other" / "keep.txt").read_text() == "mine"


def test_resume_keeps_finished_shards_and_redoes_the_rest(codebook, tmp_path):
    reference = tmp_path / "reference"
    encode_images_to_folder(DATA, codebook, reference, shard_images=2)
    expected = folder_bytes(reference)
    resumed = tmp_path / "resumed"
    shutil.copytree(reference, resumed)
    # As a killed run leaves it: no manifest, a shard missing, one unfinished.
    (resumed / MANIFEST_NAME).unlink()
    shard_file(resumed, 1, ".json").unlink()
    shard_file(resumed, 2, ".npy").unlink()
    record = json.loads(shard_file(resumed, 0, ".json").read_bytes())
    encode_images_to_folder(DATA, codebook, resumed, shard_images=2, resume=True)
    assert folder_bytes(resumed) == expected
    assert json.loads(shard_file(resumed, 0, ".json").read_bytes()) == record
    # Other options: nothing is kept, the result is the other run's.
    encode_images_to_folder(
        DATA, codebook, resumed, shard_images=2, resume=True, power=0.5
    )
    other = encode_images_to_folder(DATA, codebook, tmp_path / "o", power=0.5)
    assert np.array_equal(np.asarray(open_shards(resumed)), np.asarray(other))


def test_resume_keeps_a_shard_it_need_not_remake(codebook, tmp_path):
    encode_images_to_folder(DATA, codebook, tmp_path / "v", shard_images=4)
    expected = folder_bytes(tmp_path / "v")
    # The same file (written atomically, a new one would be another inode)
    # shows that a finished shard was kept.
    kept = shard_file(tmp_path / "v", 0, ".npy").stat().st_ino
    # A marker row in another (same shape and key): changed since it was
    # written, so made again.
    marked = np.load(shard_file(tmp_path / "v", 1, ".npy"))
    marked[0] = 7.0
    np.save(shard_file(tmp_path / "v", 1, ".npy"), marked)
    (tmp_path / "v" / MANIFEST_NAME).unlink()
    encode_images_to_folder(DATA, codebook, tmp_path / "v", shard_images=4, resume=True)
    assert shard_file(tmp_path / "v", 0, ".npy").stat().st_ino == kept
    assert folder_bytes(tmp_path / "v") == expected


@pytest.mark.parametrize("shard_images", [0, 65, True, 2.0])
def test_bad_shard_sizes_are_refused(codebook, tmp_path, shard_images):
    with pytest.raises((ValueError, TypeError), match="shard_images"):
        encode_images_to_folder(
            DATA, codebook, tmp_path / "v", shard_images=shard_images
        )
    assert not (tmp_path / "v").exists()
