"""DescriptorSets: construction, access, validation and files."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import vlad
from vlad.core._descriptors import FORMAT_VERSION, KEYPOINT_FIELDS
from vlad.core._files import save_record_archive


def test_from_list_builds_flat_descriptors_and_offsets():
    arrays = [np.ones((2, 3)), np.zeros((0, 3)), np.full((1, 3), 2.0), np.array([])]
    sets = vlad.DescriptorSets.from_list(arrays, names=["a", "b", "c", "d"])
    assert len(sets) == 4
    assert sets.offsets.tolist() == [0, 2, 2, 3, 3]
    assert sets.offsets.dtype == np.int64
    assert sets.descriptors.shape == (3, 3)
    assert sets.lengths.tolist() == [2, 0, 1, 0]
    assert sets.names == ["a", "b", "c", "d"]
    np.testing.assert_array_equal(sets[2], [[2.0, 2.0, 2.0]])
    assert sets[-1].shape == (0, 3)
    assert [block.shape[0] for block in sets] == [2, 0, 1, 0]


def test_default_names_and_dtypes():
    sets = vlad.DescriptorSets.from_list([np.ones((1, 2)), np.ones((1, 2))])
    assert sets.names == ["0", "1"]
    assert sets.dtype == np.float64
    mixed = vlad.DescriptorSets.from_list(
        [np.ones((1, 2)), np.ones((1, 2), np.float32)]
    )
    assert mixed.dtype == np.float32
    integers = vlad.DescriptorSets.from_list([np.ones((1, 2), np.uint8)])
    assert integers.dtype == np.float32


@pytest.mark.parametrize(
    ("arrays", "error", "message"),
    [
        ([np.ones((2, 3), complex)], ValueError, "Complex data not supported"),
        ([np.array([["a", "b"]])], TypeError, "array 0 must hold real numbers"),
        (np.ones((2, 2, 3), complex), ValueError, "Complex data not supported"),
    ],
)
def test_non_real_descriptors_are_refused(arrays, error, message):
    with pytest.raises(error, match=message):
        vlad.core._descriptors.as_descriptor_sets(arrays)


def test_all_empty_needs_n_features():
    with pytest.raises(ValueError, match="pass n_features"):
        vlad.DescriptorSets.from_list([np.array([])])
    sets = vlad.DescriptorSets.from_list([np.array([])], n_features=5)
    assert sets.descriptors.shape == (0, 5)


@pytest.mark.parametrize(
    ("arrays", "kwargs", "message"),
    [
        (
            [np.ones((2, 3)), np.ones((2, 4))],
            {},
            "array 1 has 4 features; expected 3 "
            r"\(as array 0\)",
        ),
        ([np.ones((2, 3))], {"n_features": 4}, r"expected 4 \(as n_features\)"),
        ([np.ones(3)], {}, "must be 2-D"),
        ([np.ones((1, 2))], {"names": ["a", "b"]}, "one name per image"),
    ],
)
def test_bad_lists_get_a_clear_error(arrays, kwargs, message):
    with pytest.raises(ValueError, match=message):
        vlad.DescriptorSets.from_list(arrays, **kwargs)


def test_constructor_validates_offsets():
    with pytest.raises(ValueError, match="end at the number of descriptors"):
        vlad.DescriptorSets(np.ones((3, 2)), [0, 1, 2])


def test_save_load_round_trip(tmp_path):
    sets = vlad.DescriptorSets.from_list(
        [np.ones((2, 3), np.float32), np.empty((0, 3))],
        names=["dir/a.jpg", "b.png"],
        metadata={"kind": "rootsift", "max_side": 640},
    )
    path = tmp_path / "descriptors.npz"
    sets.save(path)
    loaded = vlad.DescriptorSets.load(path)
    np.testing.assert_array_equal(loaded.descriptors, sets.descriptors)
    np.testing.assert_array_equal(loaded.offsets, sets.offsets)
    assert loaded.names == sets.names
    assert loaded.metadata == {"kind": "rootsift", "max_side": 640}
    assert loaded.dtype == np.float32
    assert [p.name for p in tmp_path.iterdir()] == ["descriptors.npz"]


def test_load_refuses_other_files(tmp_path):
    codebook_path = tmp_path / "codebook.npz"
    vlad.Codebook(np.ones((2, 2))).save(codebook_path)
    with pytest.raises(ValueError, match="is not a vlad descriptor sets file"):
        vlad.DescriptorSets.load(codebook_path)
    text = tmp_path / "notes.npz"
    text.write_text("hello")
    with pytest.raises(
        ValueError, match="is not a vlad descriptor sets file: it is not a NumPy"
    ):
        vlad.DescriptorSets.load(text)
    with pytest.raises(FileNotFoundError, match="no such file"):
        vlad.DescriptorSets.load(tmp_path / "missing.npz")


def test_load_never_unpickles(tmp_path):
    path = tmp_path / "pickled.npz"
    np.savez(
        path,
        descriptors=np.ones((1, 2)),
        offsets=np.array([0, 1]),
        names=np.array([object()], dtype=object),
        metadata=np.array('{"format": "descriptor sets"}'),
    )
    with pytest.raises(
        ValueError,
        match="is not a vlad descriptor sets file: its names holds Python objects",
    ):
        vlad.DescriptorSets.load(path)


def test_load_truncated_file(tmp_path):
    path = tmp_path / "descriptors.npz"
    vlad.DescriptorSets.from_list([np.ones((50, 8))]).save(path)
    content = path.read_bytes()
    path.write_bytes(content[: len(content) // 2])
    with pytest.raises(ValueError, match="is a truncated vlad descriptor sets file"):
        vlad.DescriptorSets.load(path)


def test_failed_save_leaves_no_file(tmp_path):
    sets = vlad.DescriptorSets.from_list([np.ones((2, 2))], metadata={"bad": object()})
    with pytest.raises(TypeError):
        sets.save(tmp_path / "out.npz")
    assert list(tmp_path.iterdir()) == []


def test_index_must_be_an_integer():
    sets = vlad.DescriptorSets.from_list([np.ones((2, 2)), np.ones((1, 2))])
    np.testing.assert_array_equal(sets[np.int64(1)], [[1.0, 1.0]])
    with pytest.raises(TypeError, match="indexed by an integer image index; got slice"):
        sets[0:1]
    with pytest.raises(IndexError):
        sets[2]


def keypoint_block(length: int, seed: int) -> np.ndarray:
    """``length`` rows of (x, y, size, angle), all different."""
    rng = np.random.default_rng(seed)
    return rng.uniform(0.0, 360.0, size=(length, 4))


@settings(max_examples=40, deadline=None)
@given(
    lengths=st.lists(st.integers(0, 5), min_size=1, max_size=6),
    empty_as_1d=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_from_list_keeps_each_images_keypoints_beside_its_descriptors(
    lengths, empty_as_1d, seed
):
    arrays = [np.full((length, 3), float(t)) for t, length in enumerate(lengths)]
    blocks = [keypoint_block(length, seed + t) for t, length in enumerate(lengths)]
    if empty_as_1d:
        blocks = [block if len(block) else np.array([]) for block in blocks]
    sets = vlad.DescriptorSets.from_list(arrays, keypoints=blocks, n_features=3)
    assert sets.keypoints.shape == (sum(lengths), 4)
    assert sets.keypoints.dtype == np.float32 and sets.keypoints.flags.c_contiguous
    for t, (array, block) in enumerate(zip(arrays, blocks, strict=True)):
        assert len(sets.keypoints_of(t)) == len(sets[t]) == len(array)
        expected = np.asarray(block, np.float32).reshape(-1, 4)
        np.testing.assert_array_equal(sets.keypoints_of(t), expected)
    # The same rows as a plain concatenation of the blocks.
    flat = [np.asarray(b, np.float32).reshape(-1, 4) for b in blocks]
    np.testing.assert_array_equal(sets.keypoints, np.concatenate(flat))


def test_keypoints_are_optional_and_their_absence_is_a_clear_error():
    sets = vlad.DescriptorSets.from_list([np.ones((2, 3))])
    assert sets.keypoints is None
    with pytest.raises(ValueError, match="hold no keypoint positions; extract"):
        sets.keypoints_of(0)


def test_keypoints_of_indexes_as_the_descriptors_do():
    sets = vlad.DescriptorSets.from_list(
        [np.ones((2, 3)), np.ones((1, 3))],
        keypoints=[keypoint_block(2, 0), keypoint_block(1, 1)],
    )
    np.testing.assert_array_equal(sets.keypoints_of(-1), sets.keypoints[2:])
    np.testing.assert_array_equal(sets.keypoints_of(np.int64(0)), sets.keypoints[:2])
    with pytest.raises(IndexError):
        sets.keypoints_of(2)
    with pytest.raises(TypeError, match="integer image index; got slice"):
        sets.keypoints_of(slice(0, 1))


@pytest.mark.parametrize(
    ("keypoints", "error", "message"),
    [
        (np.zeros((3, 4)), ValueError, r"shape \(n_descriptors, 4\) = \(2, 4\)"),
        (np.zeros((2, 3)), ValueError, r"got shape \(2, 3\)"),
        (np.zeros(8), ValueError, r"got shape \(8,\)"),
        (
            np.array([[1, 2, 3, np.nan], [1, 2, np.inf, 4]]),
            ValueError,
            "keypoints contains 2 NaN or infinite",
        ),
        (np.array([["a"] * 4] * 2), TypeError, "keypoints must hold real numbers"),
    ],
)
def test_constructor_validates_keypoints(keypoints, error, message):
    with pytest.raises(error, match=message):
        vlad.DescriptorSets(np.ones((2, 3)), [0, 2], keypoints=keypoints)


@pytest.mark.parametrize(
    ("blocks", "message"),
    [
        ([np.zeros((2, 4))], "one block per image \\(2\\); got 1"),
        ([np.zeros((2, 4)), np.zeros((2, 4))], r"block 1 must have shape \(1, 4\)"),
        ([np.zeros((2, 2)), np.zeros((1, 4))], r"block 0 must have shape \(2, 4\)"),
    ],
)
def test_from_list_checks_keypoint_blocks(blocks, message):
    with pytest.raises(ValueError, match=message):
        vlad.DescriptorSets.from_list(
            [np.ones((2, 3)), np.ones((1, 3))], keypoints=blocks
        )


def test_keypoints_round_trip_through_a_file(tmp_path):
    blocks = [keypoint_block(3, 0), np.zeros((0, 4)), keypoint_block(2, 1)]
    sets = vlad.DescriptorSets.from_list(
        [np.ones((3, 5), np.float32), np.zeros((0, 5)), np.ones((2, 5))],
        names=["a", "b", "c"],
        keypoints=blocks,
    )
    path = tmp_path / "descriptors.npz"
    sets.save(path)
    with np.load(path, allow_pickle=False) as archive:
        assert "keypoints" in archive.files
        record = json.loads(str(archive["metadata"]))
    assert record["format_version"] == FORMAT_VERSION == 2
    assert record["keypoint_fields"] == list(KEYPOINT_FIELDS)
    loaded = vlad.DescriptorSets.load(path)
    expected = np.concatenate(blocks).astype(np.float32)
    np.testing.assert_array_equal(loaded.keypoints, expected)
    assert loaded.keypoints.dtype == np.float32
    np.testing.assert_array_equal(loaded.keypoints_of(2), sets.keypoints_of(2))


def test_sets_without_keypoints_write_no_keypoints_member(tmp_path):
    path = tmp_path / "descriptors.npz"
    vlad.DescriptorSets.from_list([np.ones((2, 3))]).save(path)
    with np.load(path, allow_pickle=False) as archive:
        assert sorted(archive.files) == ["descriptors", "metadata", "names", "offsets"]
    assert vlad.DescriptorSets.load(path).keypoints is None


def write_by_hand(path, format_version, **extra_record):
    """A descriptor sets file as an earlier or later vlad would write it."""
    save_record_archive(
        path,
        {
            "format": "descriptor sets",
            "format_version": format_version,
            "descriptor": {"extractor": "opencv-sift"},
            **extra_record,
        },
        overwrite=True,
        descriptors=np.arange(6, dtype=np.float32).reshape(3, 2),
        offsets=np.array([0, 1, 3]),
        names=np.array(["a.jpg", "b.jpg"]),
    )


def test_version_1_files_still_load(tmp_path):
    path = tmp_path / "old.npz"
    write_by_hand(path, 1)
    sets = vlad.DescriptorSets.load(path)
    assert sets.names == ["a.jpg", "b.jpg"] and sets.keypoints is None
    np.testing.assert_array_equal(sets[1], [[2.0, 3.0], [4.0, 5.0]])
    assert sets.metadata == {"extractor": "opencv-sift"}


def test_files_from_a_newer_vlad_are_refused(tmp_path):
    path = tmp_path / "new.npz"
    write_by_hand(path, 3)
    with pytest.raises(ValueError) as raised:
        vlad.DescriptorSets.load(path)
    assert str(raised.value) == (
        f"{path} was written by a newer vlad (descriptor sets format version 3; "
        "this version reads up to 2): upgrade vlad"
    )


def test_keypoints_promised_but_missing_or_odd_are_refused(tmp_path):
    path = tmp_path / "damaged.npz"
    write_by_hand(path, 2, keypoint_fields=list(KEYPOINT_FIELDS))
    with pytest.raises(
        ValueError, match="is not a vlad descriptor sets file: it lacks"
    ):
        vlad.DescriptorSets.load(path)
    write_by_hand(path, 2, keypoint_fields=["x", "y"])
    with pytest.raises(ValueError, match="is a damaged vlad descriptor sets file"):
        vlad.DescriptorSets.load(path)
