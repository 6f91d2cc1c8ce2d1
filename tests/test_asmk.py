"""ASMK and ASMK* search against a plain-loop evaluation of the kernel's
definition, its edge cases, adding images, and one-line errors."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
from asmk_reference import (
    assert_matches_reference,
    random_problem,
    reference_scores,
    scores_by_row,
)
from hypothesis import given, settings
from hypothesis import strategies as st

import vlad
from vlad.asmk import ASMKIndex, build_asmk_index
from vlad.asmk import _scoring as asmk_scoring
from vlad.asmk._kernel import (
    binary_similarities,
    popcount,
    selectivity,
    word_quantizer,
)

SIFT = {"extractor": "opencv-sift", "features": "sift", "root_sift": True}
#: An index folder of format version 1, as vlad 0.4 wrote it.
VERSION_1 = Path(__file__).parent / "data" / "asmk-index-v1"


@pytest.mark.parametrize("binary", [True, False])
@pytest.mark.parametrize(("alpha", "tau"), [(3.0, 0.0), (1.0, -1.0), (2.5, 0.3)])
def test_search_matches_the_kernel_s_definition(binary, alpha, tau):
    centers, database, rng = random_problem(0, 6, [7, 0, 12, 1, 5])
    query = rng.standard_normal((9, 8)).astype(np.float32)
    index = build_asmk_index(
        database, vlad.Codebook(centers), binary=binary, alpha=alpha, threshold=tau
    )
    result = index.search([query], k=10, multiple_assignment=3)[0]
    expected = reference_scores(database, query, centers, 3, binary, alpha, tau)
    assert_matches_reference(result, expected)


@pytest.mark.parametrize(("binary", "words"), [(True, 5), (False, 3)])
def test_query_descriptors_take_the_kernel_s_number_of_words_by_default(binary, words):
    centers, database, rng = random_problem(1, 8, [7, 3, 12, 5])
    queries = [rng.standard_normal((6, 8)).astype(np.float32) for _ in range(2)]
    index = build_asmk_index(database, vlad.Codebook(centers), binary=binary)
    assert index.default_multiple_assignment == words
    found = index.search(queries, k=4)
    assert found.record["multiple_assignment"] == words
    assert (
        found.rankings()
        == index.search(queries, k=4, multiple_assignment=words).rankings()
    )
    # The reference kernel with that many words, not another number.
    expected = reference_scores(database, queries[0], centers, words, binary, 3.0, 0.0)
    scores = scores_by_row(found[0], len(database))
    assert None not in expected
    assert scores == pytest.approx(expected, abs=1e-5)


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    n_words=st.integers(1, 5),
    lengths=st.lists(st.integers(0, 6), min_size=1, max_size=5),
    query_length=st.integers(0, 6),
    n_nearest=st.integers(1, 6),
    binary=st.booleans(),
)
def test_edge_cases_match_the_definition(
    seed, n_words, lengths, query_length, n_nearest, binary
):
    """Empty images and queries, one word, every word (n_nearest >= K)."""
    centers, database, rng = random_problem(seed, n_words, lengths)
    query = rng.standard_normal((query_length, 8)).astype(np.float32)
    index = build_asmk_index(database, vlad.Codebook(centers), binary=binary)
    result = index.search([query], k=10, multiple_assignment=n_nearest)[0]
    expected = reference_scores(
        database, query, centers, min(n_nearest, n_words), binary, 3.0, 0.0
    )
    if query_length == 0 or all(length == 0 for length in lengths):
        assert result.names == ()
        assert result.reason
        return
    assert_matches_reference(result, expected)
    assert np.all(np.diff(result.scores) <= 0)


def test_ties_go_to_the_image_added_first():
    centers, database, _ = random_problem(1, 4, [6, 6])
    database = [database[1], database[0], database[1], database[0]]
    index = build_asmk_index(database, vlad.Codebook(centers), names=list("abcd"))
    result = index.search([database[1]], k=4, multiple_assignment=1)[0]
    assert result.names == ("b", "d", "a", "c")
    assert result.scores[0] == result.scores[1] == pytest.approx(1.0)
    assert result.scores[2] == result.scores[3]


def test_k_keeps_the_best_and_notes_when_too_large():
    centers, database, _ = random_problem(2, 5, [4, 4, 4, 0])
    index = build_asmk_index(database, vlad.Codebook(centers))
    everything = index.search([database[0]], k=3, multiple_assignment=1)
    best = index.search([database[0]], k=1, multiple_assignment=1)
    assert best[0].names == everything[0].names[:1]
    assert everything[0].names[0] == "0"
    assert "3 images with descriptors" in index.search([database[0]], k=9).notes[0]


def test_adding_images_equals_building_with_them():
    centers, database, rng = random_problem(3, 6, [5, 3, 0, 8, 4])
    codebook = vlad.Codebook(centers)
    whole = build_asmk_index(database, codebook)
    grown = build_asmk_index(database[:2], codebook)
    grown.add(database[2:])
    assert grown.names == whole.names
    assert (grown.n_segments, whole.n_segments) == (2, 1)
    grown.merge()
    for name in ("word_offsets", "entry_images", "codes"):
        np.testing.assert_array_equal(getattr(grown, name), getattr(whole, name))


def test_save_and_load_round_trip(tmp_path):
    centers, database, rng = random_problem(4, 6, [5, 3, 0, 8])
    codebook = vlad.Codebook(centers, {"descriptor": SIFT})
    sets = vlad.DescriptorSets.from_list(database, list("abcd"), metadata=SIFT)
    index = build_asmk_index(sets, codebook, binary=False, alpha=2.0, idf=True)
    index.save(tmp_path / "index")
    with pytest.raises(FileExistsError):
        index.save(tmp_path / "index")
    queries = vlad.DescriptorSets.from_list(
        [rng.standard_normal((4, 8))], ["q"], metadata=SIFT
    )
    for mmap in (False, True):
        loaded = vlad.asmk.load_asmk_index(tmp_path / "index", mmap=mmap)
        assert repr(loaded) == repr(index)
        assert loaded.source == index.source
        ours, theirs = index.search(queries, k=4)[0], loaded.search(queries, k=4)[0]
        assert ours.names == theirs.names
        np.testing.assert_array_equal(ours.scores, theirs.scores)


def test_idf_weighs_rare_words_more():
    """A word in every image weighs log(1) ** 2 = 0: an image sharing only
    it scores 0."""
    centers = np.array([[0.0, 0.0], [10.0, 0.0], [0.0, 10.0]], np.float32)
    database = [[[1.0, 1.0], [10.0, 1.0]], [[1.0, 1.0]], [[1.0, 1.0], [0.0, 11.0]]]
    index = build_asmk_index(database, vlad.Codebook(centers), idf=True)
    result = index.search([database[0]], k=3, multiple_assignment=1)[0]
    assert result.names[0] == "0"
    assert dict(zip(result.names, result.scores.tolist(), strict=True))["1"] == 0.0


def test_loading_refuses_what_is_not_an_index(tmp_path):
    with pytest.raises(FileNotFoundError):
        vlad.asmk.load_asmk_index(tmp_path / "missing")
    (tmp_path / "plain").mkdir()
    with pytest.raises(ValueError, match="damaged"):
        vlad.asmk.load_asmk_index(tmp_path / "plain")
    # A folder of format version 1 (one inverted file, no segments).
    shutil.copytree(VERSION_1, tmp_path / "index")
    np.save(tmp_path / "index" / "entry_images.npy", np.zeros(1, np.int32))
    # Without the checksums of its files (as vlad 0.4 wrote it), the index is
    # refused by what they hold.
    with pytest.raises(ValueError, match="files disagree"):
        vlad.asmk.load_asmk_index(tmp_path / "index")


def test_descriptors_of_another_kind_are_refused():
    centers, database, _ = random_problem(6, 3, [3, 3])
    codebook = vlad.Codebook(centers, {"descriptor": SIFT})
    sets = vlad.DescriptorSets.from_list(database, metadata=SIFT)
    plain = vlad.DescriptorSets.from_list(
        database, metadata={**SIFT, "root_sift": False}
    )
    orb = vlad.DescriptorSets.from_list(
        database, metadata={"extractor": "opencv-orb", "features": "orb"}
    )
    with pytest.raises(ValueError, match="RootSIFT"):
        build_asmk_index(plain, codebook)
    index = build_asmk_index(sets, codebook)
    with pytest.raises(ValueError, match="RootSIFT at detected keypoints but"):
        index.search(plain)
    with pytest.raises(ValueError, match="'opencv-orb'"):
        index.search(orb)
    with pytest.raises(ValueError, match="'opencv-orb'"):
        index.add(orb)
    with pytest.raises(ValueError, match="have 4 values each"):
        index.search([np.ones((2, 4))])
    assert index.n_images == 2


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"alpha": 0.0}, "^alpha must be a positive finite number; got 0.0$"),
        ({"threshold": 1.0}, r"^threshold must be a number in \[-1, 1\); got 1.0$"),
        ({"alpha": "3"}, "^alpha must be a positive finite number; got '3'$"),
        ({"binary": 1}, "^binary must be True or False; got 1$"),
        ({"idf": "no"}, "^idf must be True or False; got 'no'$"),
        (
            {"quantizer": ""},
            "^quantizer must be 'Flat' or a faiss index_factory string",
        ),
    ],
)
def test_bad_kernel_parameters_are_refused(arguments, message):
    centers, database, _ = random_problem(7, 3, [2])
    with pytest.raises((TypeError, ValueError), match=message):
        build_asmk_index(database, vlad.Codebook(centers), **arguments)


def test_codebooks_of_several_vocabularies_are_refused():
    codebook = vlad.Codebook(np.eye(4), vocabulary_sizes=[2, 2])
    with pytest.raises(ValueError, match="one Euclidean vocabulary"):
        build_asmk_index([np.eye(4)], codebook)


def test_binary_similarity_and_selectivity_by_hand():
    codes = np.packbits(np.array([[1, 0, 1, 1, 0, 0, 0, 0, 1, 1]], bool), axis=1)
    others = np.packbits(np.array([[1, 1, 1, 0, 0, 0, 0, 0, 1, 0]], bool), axis=1)
    assert popcount(np.bitwise_xor(codes, others)).tolist() == [3]
    assert binary_similarities(codes, others, 10).tolist() == [pytest.approx(0.4)]
    values = selectivity(np.array([-1.0, -0.2, 0.0, 0.2, 1.0]), 3.0, -0.5)
    np.testing.assert_allclose(values, [0.0, -0.008, 0.0, 0.008, 1.0], rtol=1e-6)


def test_both_quantizers_find_the_nearest_words(monkeypatch):
    rng = np.random.default_rng(8)
    centers = rng.standard_normal((50, 16)).astype(np.float32)
    descriptors = rng.standard_normal((200, 16)).astype(np.float32)
    distances = ((descriptors[:, None] - centers[None]) ** 2).sum(axis=2)
    expected = np.argsort(distances, axis=1)[:, :3]
    pytest.importorskip("faiss")
    np.testing.assert_array_equal(word_quantizer(centers)(descriptors, 3), expected)
    monkeypatch.setitem(sys.modules, "faiss", None)  # faiss not installed
    np.testing.assert_array_equal(word_quantizer(centers)(descriptors, 3), expected)


def test_repr_names_the_kernel():
    centers, database, _ = random_problem(9, 3, [2])
    index = build_asmk_index(database, vlad.Codebook(centers), binary=False)
    assert isinstance(index, ASMKIndex)
    assert repr(index) == (
        "ASMKIndex(n_images=1, n_words=3, n_entries="
        f"{index.n_entries}, kernel='ASMK', alpha=3, threshold=0, "
        "bytes_per_entry=36)"
    )


@pytest.mark.parametrize("n_bytes", [1, 3, 8, 16])
def test_popcount_counts_every_set_bit(n_bytes):
    bits = np.random.default_rng(n_bytes).integers(0, 256, (50, n_bytes), np.uint8)
    expected = [sum(bin(value).count("1") for value in row) for row in bits.tolist()]
    assert popcount(bits).tolist() == expected


@pytest.mark.parametrize("binary", [True, False])
def test_threads_rank_each_query_as_one_does(binary):
    """Queries ranked on several threads: the same results, bit for bit (each
    query's scores are summed in one order on one thread)."""
    centers, database, rng = random_problem(10, 12, [8, 0, 5, 9, 7, 3, 6])
    index = build_asmk_index(database[:4], vlad.Codebook(centers), binary=binary)
    index.add(database[4:])
    queries = [rng.standard_normal((6, 8)).astype(np.float32) for _ in range(9)]
    queries[3] = np.zeros((0, 8), np.float32)
    alone = index.search(queries, k=7, n_jobs=1)
    together = index.search(queries, k=7, n_jobs=3)
    assert [r.query for r in together] == [str(t) for t in range(9)]
    assert together[3].reason and together.rankings() == alone.rankings()
    for ours, theirs in zip(together, alone, strict=True):
        np.testing.assert_array_equal(ours.scores, theirs.scores)


@pytest.mark.parametrize("bound", [1, 7, 40])
def test_queries_in_parts_of_bounded_descriptors_rank_as_all_at_once(
    monkeypatch, bound
):
    """Queries are assigned to their words a bounded number of descriptors
    at a time (their residuals' memory bounded whatever the number of
    queries), one query at least: the same results as every query at once."""
    centers, database, rng = random_problem(21, 16, [9, 4, 12, 7, 3])
    index = build_asmk_index(database, vlad.Codebook(centers))
    queries = [
        *(rng.standard_normal((n, 8)).astype(np.float32) for n in (5, 11, 2)),
        np.empty((0, 8), np.float32),
        database[2],
    ]
    whole = index.search(queries, k=4)
    monkeypatch.setattr(asmk_scoring, "QUERY_DESCRIPTORS", bound)
    parts = []
    words_of = asmk_scoring._words_of

    def recorded(index, sets, *args):
        parts.append([len(array) for array in sets])
        return words_of(index, sets, *args)

    monkeypatch.setattr(asmk_scoring, "_words_of", recorded)
    parted = index.search(queries, k=4)
    assert sum(parts, []) == [len(query) for query in queries]
    assert all(sum(part) <= bound or len(part) == 1 for part in parts)
    assert parted.rankings() == whole.rankings()
    for ours, theirs in zip(parted, whole, strict=True):
        np.testing.assert_array_equal(ours.scores, theirs.scores)
