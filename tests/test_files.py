"""Atomic writes and the one reader of .npy/.npz files."""

from __future__ import annotations

import os
import pickle
import stat

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from vlad.core._files import (
    atomic_write,
    atomic_writes,
    read_numpy_file,
    read_record_archive,
    save_record_archive,
)

KIND = "vlad test file"


def test_atomic_write_replaces_the_file_whole(tmp_path):
    path = tmp_path / "out.bin"
    path.write_bytes(b"old")
    with atomic_write(path) as handle:
        handle.write(b"new")
        assert path.read_bytes() == b"old"
    assert path.read_bytes() == b"new"
    assert [p.name for p in tmp_path.iterdir()] == ["out.bin"]


def test_a_failed_write_leaves_the_targets_and_no_temporary_file(tmp_path):
    first, second = tmp_path / "a.txt", tmp_path / "b.txt"
    first.write_bytes(b"a")
    with pytest.raises(RuntimeError), atomic_writes(first, second) as handles:
        handles[0].write(b"changed")
        raise RuntimeError("interrupted")
    assert first.read_bytes() == b"a" and not second.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt"]


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_files_get_the_mode_of_a_new_file_without_reading_the_umask(
    tmp_path, monkeypatch, umask
):
    previous = os.umask(umask)
    try:
        plain = tmp_path / "plain"
        plain.write_bytes(b"")
        monkeypatch.setattr(os, "umask", _no_umask)
        path = tmp_path / "out.npz"
        save_record_archive(path, {"format": "test"}, values=np.zeros(2))
    finally:
        monkeypatch.undo()
        os.umask(previous)
    assert stat.S_IMODE(path.stat().st_mode) == stat.S_IMODE(plain.stat().st_mode)
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask


def _no_umask(mask):
    raise AssertionError("the process umask must not be changed")


def test_reads_an_npy_and_maps_it(tmp_path):
    path = tmp_path / "values.npy"
    np.save(path, np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(read_numpy_file(path, KIND), [[0, 1, 2], [3, 4, 5]])
    mapped = read_numpy_file(path, KIND, mmap=True)
    assert isinstance(mapped, np.memmap) and not mapped.flags.writeable


def test_reads_the_members_of_an_npz(tmp_path):
    path = tmp_path / "values.npz"
    np.savez(path, a=np.ones(2), b=np.zeros(3))
    assert sorted(read_numpy_file(path, KIND)) == ["a", "b"]
    assert list(read_numpy_file(path, KIND, members=("b",))) == ["b"]
    with pytest.raises(ValueError, match=f"is not a {KIND}: it lacks c, d$"):
        read_numpy_file(path, KIND, members=("a", "c", "d"))


def test_a_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such file"):
        read_numpy_file(tmp_path / "missing.npy", KIND)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "it is not a NumPy .npy or .npz file"),
        (b"hello, world", "it is not a NumPy .npy or .npz file"),
        (b"\xff\xd8\xff\xe0 a jpeg", "it is not a NumPy .npy or .npz file"),
        (pickle.dumps({"a": 1}), "it is a Python pickle, which vlad never loads"),
    ],
)
def test_files_that_are_not_numpy_files(tmp_path, content, message):
    path = tmp_path / "file.npy"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=f"{path} is not a {KIND}: {message}"):
        read_numpy_file(path, KIND)


def test_object_arrays_are_never_unpickled(tmp_path):
    npy, npz = tmp_path / "objects.npy", tmp_path / "objects.npz"
    np.save(npy, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    np.savez(npz, names=np.array([object()], dtype=object))
    with pytest.raises(ValueError, match="holds Python objects"):
        read_numpy_file(npy, KIND)
    with pytest.raises(ValueError, match="its names holds Python objects"):
        read_numpy_file(npz, KIND)


@pytest.mark.parametrize("mmap", [False, True])
def test_a_truncated_npy_is_named_before_anything_is_allocated(tmp_path, mmap):
    path = tmp_path / "cut.npy"
    np.save(path, np.ones((100, 8), dtype=np.float32))
    path.write_bytes(path.read_bytes()[:-10])
    with pytest.raises(ValueError, match="is a truncated vlad test file: its header"):
        read_numpy_file(path, KIND, mmap=mmap)


def test_a_header_that_claims_a_huge_array_is_refused(tmp_path):
    """64 KB whose header promises 10^12 rows: refused, not allocated."""
    path = tmp_path / "huge.npy"
    with open(path, "wb") as handle:
        header = {"descr": "<f4", "fortran_order": False, "shape": (10**12, 128)}
        np.lib.format.write_array_header_1_0(handle, header)
        handle.write(bytes(1 << 16))
    with pytest.raises(ValueError, match="truncated.*promises 512000000000000 bytes"):
        read_numpy_file(path, KIND)


def test_a_truncated_npz(tmp_path):
    path = tmp_path / "cut.npz"
    np.savez(path, values=np.ones(1000))
    path.write_bytes(path.read_bytes()[:300])
    with pytest.raises(ValueError, match=f"{path} is a truncated {KIND}"):
        read_numpy_file(path, KIND)


@given(
    prefix=st.sampled_from([b"", b"\x93NUMPY", b"\x93NUMPY\x01\x00", b"PK\x03\x04"]),
    tail=st.binary(max_size=200),
)
def test_any_bytes_give_an_array_or_one_clear_error(tmp_path_factory, prefix, tail):
    path = tmp_path_factory.mktemp("fuzz") / "file.npy"
    path.write_bytes(prefix + tail)
    try:
        read_numpy_file(path, KIND)
    except ValueError as error:
        assert str(error).startswith(str(path))
        assert "\n" not in str(error)


def test_record_archives_round_trip_and_check_their_format(tmp_path):
    path = tmp_path / "thing.npz"
    save_record_archive(path, {"format": "thing", "seed": 3}, values=np.arange(3))
    arrays, metadata = read_record_archive(path, "thing", ("values",))
    np.testing.assert_array_equal(arrays["values"], [0, 1, 2])
    assert metadata == {"format": "thing", "seed": 3}
    with pytest.raises(ValueError, match="is not a vlad codebook file: its metadata"):
        read_record_archive(path, "codebook", ("values",))


@pytest.mark.parametrize(
    ("metadata", "message"),
    [
        ("not json", "is a damaged vlad thing file"),
        ('"a string"', "its metadata says format=None"),
        ("[1, 2]", "its metadata says format=None"),
        ('{"format": "thing", "descriptor": "sift"}', "descriptor record is a str"),
        ('{"format": "thing", "descriptor": [1]}', "descriptor record is a list"),
    ],
)
def test_record_archives_with_a_bad_record(tmp_path, metadata, message):
    path = tmp_path / "thing.npz"
    np.savez(path, metadata=np.array(metadata), values=np.zeros(1))
    with pytest.raises(ValueError, match=message):
        read_record_archive(path, "thing", ("values",))


def test_a_single_array_is_not_a_record_archive(tmp_path):
    path = tmp_path / "thing.npz"
    with open(path, "wb") as handle:
        np.save(handle, np.zeros(3))
    with pytest.raises(ValueError, match="holds a single array, not an .npz archive"):
        read_record_archive(path, "thing", ())


def _savers():
    """Every public way to write a file or folder, as ``save(path, **kwargs)``."""
    import vlad
    from vlad.asmk import build_asmk_index
    from vlad.formats._hloc_global import write_global_features
    from vlad.search import build_index, fit_whitening

    sets = vlad.datasets.make_descriptor_sets(3, 6, 4, seed=0)
    codebook = vlad.fit_codebook(sets, 2, seed=0)
    vectors = vlad.encode(sets, codebook)
    names = ["a", "b", "c"]
    return {
        "save_vectors": lambda path, **kw: vlad.save_vectors(
            path.with_suffix(".npy"), vectors, names, {}, **kw
        ),
        "write_global_features": lambda path, **kw: write_global_features(
            path.with_suffix(".h5"), vectors, names, **kw
        ),
        "Codebook.save": lambda path, **kw: codebook.save(
            path.with_suffix(".npz"), **kw
        ),
        "DescriptorSets.save": lambda path, **kw: sets.save(
            path.with_suffix(".npz"), **kw
        ),
        "PCAWhitening.save": lambda path, **kw: fit_whitening(vectors).save(
            path.with_suffix(".npz"), **kw
        ),
        "VectorIndex.save": lambda path, **kw: build_index(vectors, names).save(
            path, **kw
        ),
        "ASMKIndex.save": lambda path, **kw: build_asmk_index(sets, codebook).save(
            path, **kw
        ),
    }


@pytest.mark.parametrize("saver", sorted(_savers()))
def test_every_save_refuses_an_existing_output_unless_told(tmp_path, saver):
    save = _savers()[saver]
    save(tmp_path / "out")
    with pytest.raises(FileExistsError, match="exists"):
        save(tmp_path / "out")
    save(tmp_path / "out", overwrite=True)
