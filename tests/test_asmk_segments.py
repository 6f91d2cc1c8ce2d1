"""ASMK indexes in segments: adding images makes a segment, merging makes one
of them all, and a folder of segments is appended to and merged in place.
Every form ranks as the index built at once and as the kernel's definition;
folders of format version 1 are still read; damaged folders are refused in
one line and left as they were."""

from __future__ import annotations

import gzip
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from asmk_reference import random_problem, reference_scores, scores_by_row
from hypothesis import given, settings
from hypothesis import strategies as st

import vlad
from vlad.asmk import (
    ASMKIndex,
    ASMKSegment,
    append_asmk_index,
    build_asmk_index,
    load_asmk_index,
    merge_asmk_index,
)
from vlad.asmk._segments import merge_segments
from vlad.search import DamagedIndexError
from vlad.search._index_folders import file_checksum

HERE = Path(__file__).parent
VERSION_1 = HERE / "data" / "asmk-index-v1"
OUTPUTS = HERE / "data" / "outputs"


def split(database, cuts):
    """``database`` cut before each position in ``cuts`` (parts may be empty)."""
    bounds = [0, *sorted(cut % (len(database) + 1) for cut in cuts), len(database)]
    names = [str(position) for position in range(len(database))]
    return [
        vlad.DescriptorSets.from_list(database[a:b], names[a:b], n_features=8)
        for a, b in zip(bounds[:-1], bounds[1:], strict=True)
    ]


def grown_index(parts, codebook, **settings):
    """An index built from the first part, each other part added."""
    index = build_asmk_index(parts[0], codebook, **settings)
    for part in parts[1:]:
        index.add(part)
    return index


#: Scores (float32) of sums taken in another order: a product of a list split
#: between segments may round otherwise in BLAS.
ROUNDING = 1e-5


def assert_same_results(ours, theirs):
    """The same images and scores for each query, within float32 rounding;
    the same rankings, except between scores that tie within it."""
    assert len(ours) == len(theirs)
    for mine, other in zip(ours, theirs, strict=True):
        assert sorted(mine.rows.tolist()) == sorted(other.rows.tolist())
        expected = dict(zip(other.rows.tolist(), other.scores.tolist(), strict=True))
        found = [expected[row] for row in mine.rows.tolist()]
        np.testing.assert_allclose(mine.scores, found, rtol=ROUNDING, atol=ROUNDING)
        for position, (row, score) in enumerate(
            zip(mine.rows.tolist(), mine.scores.tolist(), strict=True)
        ):
            their_row = int(other.rows[position])
            if their_row != row:  # a tie within rounding, ranked otherwise
                assert abs(expected[their_row] - score) <= ROUNDING


def assert_same_lists(index, other):
    for name in ("word_offsets", "entry_images", "codes"):
        np.testing.assert_array_equal(getattr(index, name), getattr(other, name))


def folder_bytes(folder: Path) -> dict[str, bytes]:
    return {
        path.relative_to(folder).as_posix(): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    n_words=st.integers(1, 6),
    lengths=st.lists(st.integers(0, 6), min_size=1, max_size=8),
    cuts=st.lists(st.integers(0, 8), max_size=4),
    binary=st.booleans(),
    idf=st.booleans(),
)
def test_segments_rank_as_one_index_and_as_the_definition(
    seed, n_words, lengths, cuts, binary, idf
):
    """Segments cut anywhere, empty ones and images without descriptors
    included, with and without idf."""
    centers, database, rng = random_problem(seed, n_words, lengths)
    codebook = vlad.Codebook(centers)
    queries = [rng.standard_normal((5, 8)).astype(np.float32) for _ in range(2)]
    settings_ = {"binary": binary, "idf": idf}
    whole = build_asmk_index(database, codebook, **settings_)
    grown = grown_index(split(database, cuts), codebook, **settings_)
    assert grown.names == whole.names and grown.n_entries == whole.n_entries
    assert grown.n_empty == whole.n_empty
    found = grown.search(queries, k=len(database), multiple_assignment=2)
    assert_same_results(
        found, whole.search(queries, k=len(database), multiple_assignment=2)
    )
    for query, result in zip(queries, found, strict=True):
        expected = reference_scores(
            database, query, centers, min(2, n_words), binary, 3.0, 0.0, idf=idf
        )
        if all(score is None for score in expected):
            assert result.names == ()
            continue
        scores = scores_by_row(result, len(database))
        for score, reference in zip(scores, expected, strict=True):
            assert (score is None) == (reference is None)
            if reference is not None:
                assert score == pytest.approx(reference, abs=1e-5)
    grown.merge()
    assert grown.n_segments == 1
    assert_same_lists(grown, whole)
    assert_same_results(
        grown.search(queries, k=len(database)), whole.search(queries, k=len(database))
    )


@settings(max_examples=20, deadline=None)
@given(
    lengths=st.lists(st.integers(0, 40), min_size=1, max_size=6),
    max_entries=st.integers(1, 50),
)
def test_merging_in_runs_of_any_size_keeps_every_list_in_order(lengths, max_entries):
    """The runs of words copied at a time never change what is merged."""
    rng = np.random.default_rng(sum(lengths) + max_entries)
    n_words, segments, first = 7, [], 0
    expected_words, expected_images = [], []
    for n_images, n_entries in enumerate(lengths, start=1):
        images = rng.integers(0, n_images, n_entries)
        words = rng.integers(0, n_words, n_entries)
        codes = rng.integers(0, 256, (n_entries, 3), np.uint8)
        order = np.lexsort((images, words))
        offsets = np.zeros(n_words + 1, np.int64)
        np.cumsum(np.bincount(words, minlength=n_words), out=offsets[1:])
        segments.append(
            ASMKSegment(
                first,
                n_images,
                offsets,
                (images + first)[order].astype(np.int32),
                codes[order],
            )
        )
        expected_words.append(words)
        expected_images.append(images + first)
        first += n_images
    merged = merge_segments(segments, max_entries=max_entries)
    # A plain loop: word after word, segment after segment.
    rows = []
    for word in range(n_words):
        for segment in segments:
            start, stop = segment.word_offsets[word], segment.word_offsets[word + 1]
            rows.extend(
                (int(image), bytes(code))
                for image, code in zip(
                    segment.entry_images[start:stop],
                    segment.codes[start:stop],
                    strict=True,
                )
            )
    assert [
        (int(image), bytes(code))
        for image, code in zip(merged.entry_images, merged.codes, strict=True)
    ] == rows
    counts = np.bincount(np.concatenate(expected_words), minlength=n_words)
    np.testing.assert_array_equal(np.diff(merged.word_offsets), counts)
    assert merged.n_images == first
    np.testing.assert_array_equal(
        merged.image_entries,
        np.bincount(np.concatenate(expected_images), minlength=first),
    )


@pytest.mark.parametrize("idf", [False, True])
def test_a_folder_appended_to_and_merged_ranks_as_one_index(tmp_path, idf):
    centers, database, rng = random_problem(11, 12, [9, 0, 14, 6, 11, 3, 8])
    codebook = vlad.Codebook(centers)
    names = [f"{position}.jpg" for position in range(len(database))]
    queries = [rng.standard_normal((6, 8)).astype(np.float32) for _ in range(3)]
    whole = build_asmk_index(database, codebook, names=names, idf=idf)
    expected = whole.search(queries, k=7)
    folder = tmp_path / "index"
    build_asmk_index(database[:2], codebook, names=names[:2], idf=idf).save(folder)
    append_asmk_index(folder, database[2:5], names=names[2:5])
    appended = append_asmk_index(folder, database[5:], names=names[5:])
    assert appended.n_segments == 3 and appended.names == names
    assert sorted(p.name for p in folder.iterdir() if p.name.startswith("seg")) == [
        "segment-00000",
        "segment-00001",
        "segment-00002",
    ]
    for mmap in (True, False):
        assert_same_results(
            load_asmk_index(folder, mmap=mmap).search(queries, k=7), expected
        )
    merged = merge_asmk_index(folder)
    assert merged.n_segments == 1
    assert_same_lists(merged, whole)
    assert sorted(p.name for p in folder.iterdir() if p.name.startswith("seg")) == [
        "segment-00003"
    ]
    assert_same_results(load_asmk_index(folder).search(queries, k=7), expected)
    stored = [p.name for p in folder.iterdir() if p.name.startswith("self-")]
    assert stored == (["self-similarities-00002.npy"] if idf else [])


def test_opening_a_folder_maps_its_entries(tmp_path):
    centers, database, _ = random_problem(12, 5, [4, 6, 5])
    index = build_asmk_index(database[:1], vlad.Codebook(centers))
    index.add(database[1:])
    index.save(tmp_path / "index")
    opened = load_asmk_index(tmp_path / "index", mmap=True)
    assert opened.n_segments == 2
    for segment in opened.segments:
        assert isinstance(segment.entry_images, np.memmap)
        assert isinstance(segment.codes, np.memmap)
    loaded = load_asmk_index(tmp_path / "index")
    assert not isinstance(loaded.segments[1].codes, np.memmap)
    with pytest.raises(ValueError, match="2 segments: merge"):
        _ = loaded.codes


def test_version_1_folders_are_read_and_saved_again_as_segments(tmp_path):
    """The index vlad 0.4 wrote, searched as it was then."""
    descriptors = tmp_path / "desc.npz"
    descriptors.write_bytes(gzip.decompress((OUTPUTS / "desc.npz.gz").read_bytes()))
    sets = vlad.DescriptorSets.load(descriptors)
    old = load_asmk_index(VERSION_1)
    assert json.loads((VERSION_1 / "index.json").read_text())["format_version"] == 1
    found = old.search(sets, k=3)
    lines = [f"{result.query} {name}" for result in found for name in result.names]
    assert lines == (OUTPUTS / "results-asmk.txt").read_text().splitlines()
    before = folder_bytes(VERSION_1)
    with pytest.raises(ValueError, match="format version 1, which cannot take"):
        append_asmk_index(VERSION_1, sets)
    assert folder_bytes(VERSION_1) == before
    old.save(tmp_path / "index")
    record = json.loads((tmp_path / "index" / "index.json").read_text())
    assert record["format_version"] == 2 and len(record["segments"]) == 1
    again = load_asmk_index(tmp_path / "index")
    assert_same_lists(again, old)
    assert_same_results(again.search(sets, k=3), found)


def saved_in_segments(folder: Path, seed: int = 13, idf: bool = False):
    """An index folder of three segments, and the database it holds."""
    centers, database, _ = random_problem(seed, 6, [5, 4, 6, 3, 7])
    codebook = vlad.Codebook(centers)
    index = build_asmk_index(database[:2], codebook, idf=idf)
    index.add(database[2:4])
    index.add(database[4:])
    index.save(folder)
    return codebook, database


def truncate_codes(folder: Path) -> None:
    codes = folder / "segment-00001" / "codes.npy"
    codes.write_bytes(codes.read_bytes()[:-3])


def edit_json(path: Path, **changes) -> None:
    record = json.loads(path.read_text())
    record.update(changes)
    path.write_text(json.dumps(record))


def shift_a_segment(folder: Path) -> None:
    edit_json(folder / "segment-00001" / "segment.json", first_image=3)


def miscount_a_segment(folder: Path) -> None:
    record = json.loads((folder / "index.json").read_text())
    record["segments"][2]["n_images"] += 1
    (folder / "index.json").write_text(json.dumps(record))


def another_codebook_s_segment(folder: Path) -> None:
    """segment-00001 replaced by the same images indexed with other words."""
    centers, database, _ = random_problem(13, 6, [5, 4, 6, 3, 7])
    other = build_asmk_index(database[:2], vlad.Codebook(centers + 0.5))
    other.add(database[2:4])
    other.save(folder.parent / "other")
    shutil.rmtree(folder / "segment-00001")
    shutil.copytree(folder.parent / "other" / "segment-00001", folder / "segment-00001")


def remove_a_segment(folder: Path) -> None:
    shutil.rmtree(folder / "segment-00002")


def scramble_offsets(folder: Path) -> None:
    offsets = np.load(folder / "segment-00000" / "word_offsets.npy")
    np.save(folder / "segment-00000" / "word_offsets.npy", offsets[::-1].copy())


def drop_a_name(folder: Path) -> None:
    names = json.loads((folder / "segment-00002" / "names.json").read_text())
    (folder / "segment-00002" / "names.json").write_text(json.dumps(names[1:]))


def recorded_again(folder: Path) -> None:
    """index.json's checksums made those of the files as they now are, as a
    folder put together by hand would have them: what the files hold is
    then all that tells."""
    record = json.loads((folder / "index.json").read_text())
    for entry in record["segments"]:
        place = folder / entry["folder"]
        if place.is_dir():
            entry["checksums"] = {
                name: file_checksum(place / name) for name in entry["checksums"]
            }
    (folder / "index.json").write_text(json.dumps(record))


@pytest.mark.parametrize(
    ("damage", "changed", "message"),
    [
        (
            truncate_codes,
            "segment-00001/codes.npy is not the file",
            r"segment-00001/codes.npy is a truncated",
        ),
        (
            shift_a_segment,
            "segment-00001/segment.json is not the file",
            r"segments disagree \(segment-00001 has first_image=3",
        ),
        (miscount_a_segment, "segments disagree", "segments disagree"),
        (
            another_codebook_s_segment,
            "segment-00001 is a segment of another codebook",
            "segment-00001 is a segment of another codebook",
        ),
        (
            remove_a_segment,
            "damaged vlad ASMK index: no segment-00002",
            "damaged vlad ASMK index: no segment-00002",
        ),
        (
            scramble_offsets,
            "segment-00000/word_offsets.npy is not the file",
            "word_offsets.npy does not cover its entries",
        ),
        (
            drop_a_name,
            "segment-00002/names.json is not the file",
            "names.json names 0 images; the segment holds 1",
        ),
    ],
)
@pytest.mark.parametrize("recorded", [False, True], ids=["as-damaged", "re-recorded"])
def test_damaged_folders_are_refused_in_one_line_and_left_as_they_were(
    tmp_path, damage, changed, message, recorded
):
    """Each damage is told by the checksum of the file it changed and,
    where index.json's checksums were made to agree, by what the files hold."""
    folder = tmp_path / "index"
    _, database = saved_in_segments(folder)
    damage(folder)
    if recorded:
        recorded_again(folder)
    before = folder_bytes(folder)
    for attempt in (
        lambda: load_asmk_index(folder),
        lambda: load_asmk_index(folder, mmap=True),
        lambda: append_asmk_index(folder, database[:1]),
        lambda: merge_asmk_index(folder),
    ):
        expected = message if recorded else changed
        with pytest.raises(ValueError, match=expected) as error:
            attempt()
        assert "\n" not in str(error.value)
        assert folder_bytes(folder) == before


def test_a_large_mapped_index_is_opened_without_reading_its_entries(tmp_path):
    """The entries' checksums are compared when asked, or when the index is
    read; mapped and unchecked, their headers and sizes still are."""
    folder = tmp_path / "index"
    saved_in_segments(folder)
    codes = folder / "segment-00001" / "codes.npy"
    content = bytearray(codes.read_bytes())
    content[-1] ^= 0x01
    codes.write_bytes(bytes(content))
    load_asmk_index(folder, mmap=True, check_entries=False)
    for attempt in (
        lambda: load_asmk_index(folder),
        lambda: load_asmk_index(folder, mmap=True),
        lambda: load_asmk_index(folder, mmap=True, check_entries=True),
    ):
        with pytest.raises(DamagedIndexError, match="codes.npy is not the file"):
            attempt()
    truncate_codes(folder)
    with pytest.raises(ValueError, match="codes.npy is a truncated"):
        load_asmk_index(folder, mmap=True, check_entries=False)


def test_a_second_writer_is_refused_while_one_writes(tmp_path):
    fcntl = pytest.importorskip("fcntl")
    folder = tmp_path / "index"
    _, database = saved_in_segments(folder)
    before = folder_bytes(folder)
    holder = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(holder, fcntl.LOCK_EX)
        for attempt in (
            lambda: append_asmk_index(folder, database[:1]),
            lambda: merge_asmk_index(folder),
        ):
            with pytest.raises(ValueError, match="another process is changing"):
                attempt()
    finally:
        os.close(holder)
    assert folder_bytes(folder) == before
    assert append_asmk_index(folder, database[:1]).n_segments == 4


def test_what_a_killed_writer_left_is_removed_by_the_next(tmp_path):
    """A segment written but never named in index.json (the writer killed
    between the two), a half-written one, and replaced self-similarities:
    the index ignores them, and the next append removes them."""
    folder = tmp_path / "index"
    _, database = saved_in_segments(folder, idf=True)
    shutil.copytree(folder / "segment-00002", folder / "segment-00003")
    shutil.copytree(
        folder / "segment-00002", folder / ".segment-00004.999999999.abcdefgh.partial"
    )
    shutil.copy(
        folder / "self-similarities-00002.npy", folder / "self-similarities-00001.npy"
    )
    expected = load_asmk_index(folder)
    assert expected.n_segments == 3
    grown = append_asmk_index(folder, database[:2])
    assert grown.n_images == expected.n_images + 2
    left = sorted(p.name for p in folder.iterdir())
    assert left == [
        "codebook.npz",
        "index.json",
        "segment-00000",
        "segment-00001",
        "segment-00002",
        "segment-00003",
        "self-similarities-00003.npy",
    ]


def test_indexes_stacked_from_segments_rank_as_one(tmp_path):
    """Two indexes of the same words built apart (on two machines, say),
    their segments stacked without a copy."""
    centers, database, rng = random_problem(14, 6, [5, 4, 6, 3, 7])
    codebook = vlad.Codebook(centers)
    first = build_asmk_index(database[:2], codebook).segments[0]
    second = build_asmk_index(database[2:], codebook).segments[0]
    renumbered = ASMKSegment(
        2,
        second.n_images,
        second.word_offsets,
        second.entry_images + 2,
        second.codes,
        second.image_entries,
    )
    names = [str(position) for position in range(5)]
    stacked = ASMKIndex.from_segments(codebook, names, [first, renumbered])
    whole = build_asmk_index(database, codebook)
    queries = [rng.standard_normal((5, 8)).astype(np.float32)]
    assert_same_results(stacked.search(queries, k=5), whole.search(queries, k=5))
    bad = [
        ([first, second], names, "segment 1 starts at image 0, not 2"),
        ([first, renumbered], names[:4], "4 names for the 5 images"),
        ([renumbered], names, "segment 0 starts at image 2, not 0"),
        ([], names, "a non-empty sequence of ASMKSegment"),
    ]
    for segments, named, message in bad:
        with pytest.raises(ValueError, match=message):
            ASMKIndex.from_segments(codebook, named, segments)
    with pytest.raises(ValueError, match=r"segment 0 has uint8 codes of shape"):
        ASMKIndex.from_segments(codebook, names, [first, renumbered], binary=False)
    other_words = build_asmk_index(database[:2], vlad.Codebook(centers[:4]))
    with pytest.raises(ValueError, match=r"int64 offsets of shape \(5,\)"):
        ASMKIndex.from_segments(codebook, names[:2], other_words.segments)
