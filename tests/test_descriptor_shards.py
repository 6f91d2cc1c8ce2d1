"""Folders of descriptor shards: the same descriptors, keypoints and names as
one extraction in memory, read back lazily by fit and encode, refusal of
incomplete or foreign folders, and resuming."""

from __future__ import annotations

import json
import shutil

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from photos import DATA, FAST_OPTIONS, MESSY_NAMES
from shard_folders import folder_bytes, shard_file

import vlad
from vlad.formats._descriptor_files import read_descriptor_file
from vlad.formats._descriptor_shards import open_descriptor_shards
from vlad.formats._shards import MANIFEST_NAME
from vlad.pipeline._extraction import extract_images_to_folder
from vlad.pipeline._vector_shards import encode_images_to_folder


@pytest.fixture(scope="module")
def photo_folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("shards") / "descriptors"
    extract_images_to_folder(DATA, folder, FAST_OPTIONS, shard_images=3, n_jobs=2)
    return folder


def assert_same_sets(sets, expected):
    assert sets.names == expected.names
    assert np.array_equal(sets.offsets, expected.offsets)
    assert sets.descriptors.tobytes() == expected.descriptors.tobytes()
    assert sets.keypoints.tobytes() == expected.keypoints.tobytes()
    assert sets.metadata == expected.metadata


@pytest.mark.parametrize("shard_images", [1, 2, 5, 64])
def test_shards_hold_what_one_extraction_in_memory_gives(messy, tmp_path, shard_images):
    expected, report = vlad.extract_images(messy, FAST_OPTIONS, n_jobs=2)
    shards = extract_images_to_folder(
        messy, tmp_path / "d", FAST_OPTIONS, shard_images=shard_images, n_jobs=2
    )
    n_found = len(MESSY_NAMES) + 3
    assert shards.n_shards == -(-n_found // shard_images)
    assert_same_sets(shards.to_sets(), expected)
    assert shards.names == MESSY_NAMES
    assert np.array_equal(shards.lengths, expected.lengths)
    for t in range(len(expected)):
        assert np.array_equal(shards[t], expected[t])
        assert np.array_equal(shards.keypoints_of(t), expected.keypoints_of(t))
    record = shards.record
    assert {entry["name"]: entry["reason"] for entry in record["skipped"]} == (
        report.skipped
    )
    assert record["empty"] == report.empty == ["blank.png"]
    assert record["n_descriptors"] == len(expected.descriptors)


def test_a_folder_reads_whole_or_a_shard_at_a_time(photo_folder, photo_sets):
    expected = photo_sets
    assert_same_sets(read_descriptor_file(photo_folder), expected)
    lazy = read_descriptor_file(photo_folder, lazy=True)
    shard = lazy.shard(1)
    # Mapped read-only, not read.
    assert not shard.descriptors.flags.owndata
    assert not shard.descriptors.flags.writeable
    assert shard.names == expected.names[3:6]
    assert_same_sets(lazy.between(2, 7), expected.between(2, 7))


def test_vocabularies_read_a_folder_as_they_read_an_npz(
    photo_folder, photo_sets, tmp_path
):
    expected = photo_sets
    expected.save(tmp_path / "d.npz")
    from_npz, _ = vlad.fit_vocabularies_to_images(
        tmp_path / "d.npz", 4, 2, sample=3000, n_jobs=1
    )
    from_folder, report = vlad.fit_vocabularies_to_images(
        photo_folder, 4, 2, sample=3000, n_jobs=1
    )
    assert report.names == expected.names
    assert np.array_equal(from_folder.centers, from_npz.centers)
    # Vocabulary i is the codebook fitted alone with seed i, on the same file.
    for index, vocabulary in enumerate(vlad.split_vocabularies(from_folder)):
        alone, _ = vlad.fit_codebook_to_images(
            photo_folder, 4, sample=3000, seed=index, n_jobs=1
        )
        assert np.array_equal(vocabulary.centers, alone.centers)


def test_fit_and_encode_read_a_folder_as_they_read_an_npz(
    photo_folder, photo_sets, tmp_path
):
    expected = photo_sets
    expected.save(tmp_path / "d.npz")
    from_npz, _ = vlad.fit_codebook_to_images(tmp_path / "d.npz", 4, sample=3000)
    from_folder, report = vlad.fit_codebook_to_images(photo_folder, 4, sample=3000)
    assert report.names == expected.names
    assert np.array_equal(from_folder.centers, from_npz.centers)
    assert from_folder.metadata == from_npz.metadata
    whole, _ = vlad.fit_codebook_to_images(photo_folder, 4, sample=None)
    assert np.array_equal(whole.centers, vlad.fit_codebook(expected, 4).centers)
    encoded = vlad.encode_images(photo_folder, from_npz, n_jobs=1)
    reference = vlad.encode(expected, from_npz, n_jobs=1)
    assert np.allclose(encoded.vectors, reference, atol=1e-6)
    assert encoded.names == expected.names
    vectors = encode_images_to_folder(
        photo_folder, from_npz, tmp_path / "v", shard_images=2, n_jobs=1
    )
    assert np.array_equal(np.asarray(vectors), encoded.vectors)
    assert vectors.names == expected.names
    assert vectors.record["descriptor"] == expected.metadata


def test_a_folder_without_its_manifest_is_never_read(photo_folder, tmp_path):
    copy = tmp_path / "d"
    shutil.copytree(photo_folder, copy)
    (copy / MANIFEST_NAME).unlink()
    for reader in (open_descriptor_shards, vlad.fit_codebook_to_images):
        with pytest.raises(
            ValueError,
            match=r"no manifest.json .*resume it with resume=True or --resume\)$",
        ):
            reader(copy)


def test_a_folder_of_vectors_is_not_descriptors(tmp_path):
    codebook, _ = vlad.fit_codebook_to_images(DATA, 4, descriptor_options=FAST_OPTIONS)
    encode_images_to_folder(DATA, codebook, tmp_path / "v")
    with pytest.raises(ValueError, match="not a folder of descriptor shards"):
        vlad.fit_codebook_to_images(tmp_path / "v", 4)


def test_a_replaced_shard_is_refused(photo_folder, tmp_path):
    copy = tmp_path / "d"
    shutil.copytree(photo_folder, copy)
    record_path = shard_file(copy, 1, ".json")
    record = json.loads(record_path.read_text())
    record["lengths"][0] += 1
    record_path.write_text(json.dumps(record))
    shards = open_descriptor_shards(copy)
    assert len(shards[0]) == len(vlad.extract_images(DATA, FAST_OPTIONS)[0][0])
    with pytest.raises(ValueError, match="is not the shard the manifest names"):
        shards[4]
    record["lengths"][0] = "many"
    record_path.write_text(json.dumps(record))
    with pytest.raises(ValueError, match="is not the shard the manifest names"):
        open_descriptor_shards(copy)[4]


def test_resume_keeps_finished_shards_and_redoes_the_rest(photo_folder, tmp_path):
    expected = folder_bytes(photo_folder)
    resumed = tmp_path / "resumed"
    shutil.copytree(photo_folder, resumed)
    # As a killed run leaves it: no manifest, shards missing or unfinished.
    (resumed / MANIFEST_NAME).unlink()
    shard_file(resumed, 1, ".json").unlink()
    shard_file(resumed, 2, ".keypoints.npy").unlink()
    # The same file (an atomic write would make another inode) shows that a
    # finished shard is kept.
    first = shard_file(resumed, 0, ".npy")
    kept = first.stat().st_ino
    extract_images_to_folder(
        DATA, resumed, FAST_OPTIONS, shard_images=3, n_jobs=2, resume=True
    )
    assert first.stat().st_ino == kept
    assert folder_bytes(resumed) == expected
    # Other options: nothing is kept, the result is the other run's.
    other_options = {**FAST_OPTIONS, "max_keypoints": 30}
    extract_images_to_folder(
        DATA, resumed, other_options, shard_images=3, n_jobs=2, resume=True
    )
    other = extract_images_to_folder(
        DATA, tmp_path / "o", other_options, shard_images=3, n_jobs=2
    )
    assert folder_bytes(resumed) == folder_bytes(tmp_path / "o")
    assert len(other.to_sets().descriptors) == 30 * len(other)


def test_folders_are_replaced_only_when_asked(photo_folder, tmp_path):
    with pytest.raises(
        FileExistsError,
        match=r"exists; pass overwrite=True \(--overwrite\) to replace it or "
        r"resume=True \(--resume\) to finish it$",
    ):
        extract_images_to_folder(DATA, photo_folder, FAST_OPTIONS)
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "keep.txt").write_text("mine")
    with pytest.raises(ValueError, match="not a folder of descriptor shards"):
        extract_images_to_folder(DATA, tmp_path / "other", overwrite=True)
    assert (tmp_path / "other" / "keep.txt").read_text() == "mine"


@pytest.mark.parametrize("shard_images", [0, True, 2.0])
def test_bad_shard_sizes_are_refused(tmp_path, shard_images):
    with pytest.raises((ValueError, TypeError), match="shard_images"):
        extract_images_to_folder(DATA, tmp_path / "d", shard_images=shard_images)
    assert not (tmp_path / "d").exists()


@given(
    lengths=st.lists(st.integers(0, 4), min_size=1, max_size=8),
    data=st.data(),
)
def test_between_is_the_images_of_a_plain_loop(lengths, data):
    n_rows = sum(lengths)
    descriptors = data.draw(
        hnp.arrays(np.float32, (n_rows, 3), elements=st.floats(-9, 9, width=32))
    )
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    sets = vlad.DescriptorSets(descriptors, offsets, keypoints=np.ones((n_rows, 4)))
    start = data.draw(st.integers(0, len(lengths)))
    stop = data.draw(st.integers(start, len(lengths)))
    part = sets.between(start, stop)
    assert part.names == [str(t) for t in range(start, stop)]
    assert len(part) == stop - start
    for t in range(start, stop):
        assert np.array_equal(part[t - start], sets[t])
        assert np.array_equal(part.keypoints_of(t - start), sets.keypoints_of(t))


def test_a_folder_of_images_with_a_manifest_of_its_own_is_images(tmp_path):
    photos = tmp_path / "photos"
    photos.mkdir()
    shutil.copyfile(DATA / "chelsea.jpg", photos / "chelsea.jpg")
    (photos / MANIFEST_NAME).write_text('{"dataset": "mine"}')
    codebook, report = vlad.fit_codebook_to_images(
        photos, 2, descriptor_options=FAST_OPTIONS
    )
    assert report.names == ["chelsea.jpg"]


def test_encoding_a_folder_into_a_folder_resumes(photo_folder, tmp_path):
    codebook, _ = vlad.fit_codebook_to_images(photo_folder, 4, sample=3000)
    reference = encode_images_to_folder(
        photo_folder, codebook, tmp_path / "v", shard_images=2, n_jobs=1
    )
    expected = folder_bytes(tmp_path / "v")
    (tmp_path / "v" / MANIFEST_NAME).unlink()
    shard_file(tmp_path / "v", 2, ".json").unlink()
    resumed = encode_images_to_folder(
        photo_folder, codebook, tmp_path / "v", shard_images=2, resume=True
    )
    assert folder_bytes(tmp_path / "v") == expected
    assert resumed.names == reference.names
