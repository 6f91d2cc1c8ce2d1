"""DescriptorSets: construction, access, validation and files."""

from __future__ import annotations

import numpy as np
import pytest

import vlad


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
        vlad.core.descriptors.as_descriptor_sets(arrays)


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
