"""Index folders whose files are not those they were written with: a codebook
swapped for another of the same shape, NaN or infinite vectors and residuals,
a file changed, cut short or missing. Each is refused when read, in one line
naming the file, by the library and by ``vlad search``; an index written
before its record held checksums (vlad 0.4) is refused by what its files
hold."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

import vlad
from hostile.conftest import assert_one_line_error, invoke, record
from vlad.asmk import build_asmk_index, load_asmk_index
from vlad.search import DamagedIndexError, build_index, load_index

N_IMAGES, N_FEATURES = 12, 16
NAMES = [f"{i:02d}.jpg" for i in range(N_IMAGES)]


@pytest.fixture(scope="module")
def indexes(tmp_path_factory):
    """Exact, whitened, faiss and ASMK (sign bits and full residuals)
    indexes of the same images, and their queries as files."""
    folder = tmp_path_factory.mktemp("indexes")
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(N_IMAGES, N_FEATURES)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    build_index(vectors, NAMES).save(folder / "exact")
    build_index(vectors, NAMES, pca=8).save(folder / "whitened")
    if faiss_installed():
        build_index(vectors, NAMES, factory="Flat").save(folder / "faiss")
    vlad.save_vectors(folder / "queries.npy", vectors[:2], NAMES[:2], {})
    sets = vlad.DescriptorSets.from_list(
        [rng.random((6, N_FEATURES), dtype=np.float32) for _ in NAMES], NAMES
    )
    sets.save(folder / "queries.npz")
    codebook = vlad.Codebook(rng.random((4, N_FEATURES), dtype=np.float32))
    build_asmk_index(sets, codebook).save(folder / "asmk")
    build_asmk_index(sets, codebook, binary=False).save(folder / "asmk-full")
    return folder


def faiss_installed() -> bool:
    try:
        import faiss  # noqa: F401
    except ImportError:
        return False
    return True


def copy_of(indexes, tmp_path, kind: str):
    if kind == "faiss" and not faiss_installed():
        pytest.skip("faiss is not installed")
    return shutil.copytree(indexes / kind, tmp_path / kind)


def load(folder):
    asmk = folder.name.startswith("asmk")
    return load_asmk_index(folder) if asmk else load_index(folder)


def as_written_by_0_4(folder) -> None:
    """The record without the checksums of the files (vlad 0.4's); an ASMK
    index in vlad 0.4's format (version 1: one inverted file, no segments)."""
    if folder.name.startswith("asmk"):
        as_version_1(folder)
        return
    recorded = json.loads((folder / "index.json").read_text())
    del recorded["checksums"]
    (folder / "index.json").write_text(json.dumps(recorded))


def as_version_1(folder) -> None:
    """An ASMK index folder of one segment rewritten as vlad 0.4 wrote it."""
    recorded = json.loads((folder / "index.json").read_text())
    segment = folder / recorded["segments"][0]["folder"]
    for name in ("names.json", "word_offsets.npy", "entry_images.npy", "codes.npy"):
        shutil.move(segment / name, folder / name)
    shutil.rmtree(segment)
    for name in ("segments", "self_similarities", "checksums"):
        del recorded[name]
    recorded["format_version"] = 1
    (folder / "index.json").write_text(json.dumps(recorded))


def assert_refused(folder, *fragments: str, error=DamagedIndexError) -> None:
    """Refused in one line holding ``fragments`` by the library, and by
    ``vlad search`` (exit status 1, one error line)."""
    with pytest.raises(error) as raised:
        load(folder)
    message = str(raised.value)
    assert "\n" not in message
    for fragment in fragments:
        assert fragment in message, (fragment, message)
    queries = folder.parent / (
        "queries.npz" if "asmk" in folder.name else "queries.npy"
    )
    result = invoke("search", folder, queries, "--top", 2, exit_code=1)
    assert_one_line_error(result.output, *fragments)


def with_first_value(path, value) -> None:
    """Set the first value of the ``.npy`` at ``path``, nothing else."""
    array = np.load(path)
    array.reshape(-1)[0] = value
    np.save(path, array)


@pytest.fixture
def queries(indexes, tmp_path):
    for name in ("queries.npy", "queries.names.txt", "queries.json", "queries.npz"):
        shutil.copy(indexes / name, tmp_path)


@pytest.mark.parametrize("written_by", ["this vlad", "vlad 0.4"])
def test_a_codebook_swapped_for_another_of_the_same_shape(
    indexes, tmp_path, queries, written_by
):
    """The words of another vocabulary would give wrong scores silently: the
    file's checksum says so, and without it the codebook's fingerprint."""
    folder = copy_of(indexes, tmp_path, "asmk")
    if written_by == "vlad 0.4":
        as_written_by_0_4(folder)
    other = vlad.Codebook(np.random.default_rng(1).random((4, N_FEATURES)))
    other.save(folder / "codebook.npz", overwrite=True)
    said = "is not the file" if written_by == "this vlad" else "not the codebook"
    assert_refused(folder, str(folder / "codebook.npz"), said)


@pytest.mark.parametrize("written_by", ["this vlad", "vlad 0.4"])
@pytest.mark.parametrize(
    ("kind", "name", "value"),
    [
        ("asmk-full", "segment-00000/codes.npy", np.nan),
        ("exact", "vectors.npy", np.nan),
        ("exact", "vectors.npy", -np.inf),
    ],
)
def test_nan_and_inf_are_refused(
    indexes, tmp_path, queries, written_by, kind, name, value
):
    """NaN in the residuals or the vectors used to change the scores
    silently."""
    folder = copy_of(indexes, tmp_path, kind)
    if written_by == "vlad 0.4":
        as_written_by_0_4(folder)
        name = name.split("/")[-1]  # version 1 has no segment folders
    with_first_value(folder / name, value)
    said = "is not the file" if written_by == "this vlad" else "1 NaN or infinite"
    assert_refused(folder, str(folder / name), said)


#: Every file of every kind of index.
MEMBERS = [
    (kind, name)
    for kind, names in {
        "exact": ["names.json", "rows.npy", "vectors.npy"],
        "whitened": ["names.json", "rows.npy", "vectors.npy", "whitening.npz"],
        "faiss": ["names.json", "rows.npy", "vectors.faiss"],
        "asmk": [
            "codebook.npz",
            "segment-00000/segment.json",
            "segment-00000/names.json",
            "segment-00000/word_offsets.npy",
            "segment-00000/image_entries.npy",
            "segment-00000/entry_images.npy",
            "segment-00000/codes.npy",
        ],
    }.items()
    for name in names
]


@pytest.mark.parametrize(("kind", "name"), MEMBERS)
def test_a_changed_file_is_named(indexes, tmp_path, queries, kind, name):
    """One byte changed, at the end of the file (its data, not its header):
    the file is named, whatever the change does to what it holds."""
    folder = copy_of(indexes, tmp_path, kind)
    content = bytearray((folder / name).read_bytes())
    content[-2] ^= 0x01
    (folder / name).write_bytes(bytes(content))
    assert_refused(folder, str(folder / name), "is not the file index.json records")
    record("clear error")


@pytest.mark.parametrize(("kind", "name"), MEMBERS)
def test_a_truncated_file_is_named(indexes, tmp_path, queries, kind, name):
    folder = copy_of(indexes, tmp_path, kind)
    content = (folder / name).read_bytes()
    (folder / name).write_bytes(content[: len(content) // 2])
    assert_refused(folder, str(folder / name))
    record("clear error")


@pytest.mark.parametrize(
    ("kind", "name"),
    [("exact", "vectors.npy"), ("asmk", "codes.npy"), ("whitened", "whitening.npz")],
)
def test_a_truncated_file_of_an_index_without_checksums(
    indexes, tmp_path, queries, kind, name
):
    folder = copy_of(indexes, tmp_path, kind)
    as_written_by_0_4(folder)
    content = (folder / name).read_bytes()
    (folder / name).write_bytes(content[: len(content) // 2])
    assert_refused(folder, str(folder / name), error=ValueError)
    record("clear error")


@pytest.mark.parametrize(("kind", "name"), MEMBERS[:3] + MEMBERS[-5:])
def test_a_missing_file_is_named(indexes, tmp_path, queries, kind, name):
    folder = copy_of(indexes, tmp_path, kind)
    (folder / name).unlink()
    assert_refused(folder, f"no {name.split('/')[-1]}")
    record("clear error")


@pytest.mark.parametrize("kind", ["exact", "asmk"])
def test_a_record_without_the_checksum_of_a_file(indexes, tmp_path, queries, kind):
    folder = copy_of(indexes, tmp_path, kind)
    recorded = json.loads((folder / "index.json").read_text())
    if kind == "asmk":  # a segment's files are recorded in its entry
        del recorded["segments"][0]["checksums"]["names.json"]
    else:
        del recorded["checksums"]["names.json"]
    (folder / "index.json").write_text(json.dumps(recorded))
    assert_refused(folder, "records no checksum of names.json")
    record("clear error")


@pytest.mark.parametrize("kind", ["exact", "whitened", "faiss", "asmk", "asmk-full"])
def test_untouched_indexes_load_and_search(indexes, tmp_path, queries, kind):
    """The checks pass the files as written, those of vlad 0.4 included."""
    folder = copy_of(indexes, tmp_path, kind)
    assert load(folder).names == NAMES
    as_written_by_0_4(folder)
    index = load(folder)
    assert index.names == NAMES
    if "asmk" in kind:
        queries = tmp_path / "queries.npz"
        expected = index.search(vlad.DescriptorSets.load(queries), 2)
    else:
        queries = tmp_path / "queries.npy"
        expected = index.search(vlad.load_vectors(queries)[0], 2)
    result = invoke("search", folder, queries, "--top", 2)
    query, rank, _, found = result.stdout.splitlines()[0].split("\t")
    assert (query, rank, found) == (NAMES[0], "1", expected[0].names[0])
