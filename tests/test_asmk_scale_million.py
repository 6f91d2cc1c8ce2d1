"""The million-image ASMK benchmark on tiny problems: distractors drawn from
the base index's entries as it says, the stacked chunks searched as one
index in memory, and a run measuring each size in a child process; its
VLAD peer's distractors and rows; and the ``asmk`` package as a peer of the
same index, where it is installed."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.asmk import make_asmk_problem
from benchmarks.asmk_million import (
    build_distractors,
    distractor_entries,
    distractor_segment,
    entry_pool,
    main,
    stacked_index,
)
from benchmarks.asmk_package import (
    package_codebook,
    package_codes,
    package_inverted_file,
    package_search,
    ranking_agreement,
)
from benchmarks.vlad_million import descriptor_distractors, vlad_rows
from vlad.asmk import ASMKIndex, ASMKSegment, build_asmk_index

#: The benchmarks' own tests: a CI step of their own, not the default run.
pytestmark = pytest.mark.benchmarks


def image_entries(segments, n_words):
    """Image number to its {word: code bytes}, read by a plain loop over
    every list of every segment."""
    images = {}
    for segment in segments:
        for word in range(n_words):
            start, stop = segment.word_offsets[word], segment.word_offsets[word + 1]
            for row in range(start, stop):
                held = images.setdefault(int(segment.entry_images[row]), {})
                assert word not in held, "two entries of one image on one word"
                held[word] = bytes(segment.codes[row])
    return images


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.integers(0, 11), min_size=1, max_size=60),
    st.lists(st.integers(0, 12), min_size=1, max_size=8),
    st.integers(0, 2**32 - 1),
)
def test_each_image_gets_its_count_of_distinct_pool_words(pool, wanted, seed):
    pool_words = np.array(pool, np.int32)
    distinct = len(set(pool))
    counts = np.minimum(np.array(wanted), distinct)
    images, picks = distractor_entries(
        pool_words, counts, 12, np.random.default_rng(seed)
    )
    assert np.all(np.diff(images) >= 0)
    for image, count in enumerate(counts):
        drawn = pool_words[picks[images == image]]
        assert len(drawn) == count and len(set(drawn.tolist())) == count


def test_an_image_of_more_words_than_the_pool_holds_is_refused():
    with pytest.raises(ValueError, match="an image of 3 words from 2"):
        distractor_entries(np.array([0, 1, 1]), [3], 4, np.random.default_rng(0))


def test_distractors_are_entries_of_the_pooled_images_in_their_counts():
    sets, codebook = make_asmk_problem(20, 150, 64, n_features=64)
    (base,) = build_asmk_index(sets, codebook).segments
    pooled = np.arange(20) % 3 != 0  # images 0, 3, ... left out of the pool
    held = image_entries([base], 64)
    pool = {
        (word, code)
        for image, entries in held.items()
        if pooled[image]
        for word, code in entries.items()
    }
    pool_words, pool_codes = entry_pool(base, pooled)
    assert len(pool_words) == sum(len(held[i]) for i in range(20) if pooled[i])
    counts = np.random.default_rng(1).choice(base.image_entries[pooled], 30)
    segment = distractor_segment(
        pool_words, pool_codes, counts, 20, 64, np.random.default_rng(2)
    )
    assert (segment.first_image, segment.n_images) == (20, 30)
    drawn = image_entries([segment], 64)
    assert sorted(drawn) == list(range(20, 50))
    for image, entries in drawn.items():
        assert len(entries) == counts[image - 20] == segment.image_entries[image - 20]
        assert set(entries.items()) <= pool
    # The segment is one an index takes, following the base.
    names = [str(i) for i in range(50)]
    assert ASMKIndex.from_segments(codebook, names, [base, segment]).n_images == 50


def test_stacked_chunks_search_as_the_same_index_held_in_memory(tmp_path):
    sets, codebook = make_asmk_problem(12, 150, 32, n_features=128)
    base = build_asmk_index(sets, codebook)
    base.save(tmp_path / "base")
    built = build_distractors(
        str(tmp_path / "base"), 77, str(tmp_path / "chunks"), 20, 0, base.names[:4]
    )
    assert built["n_distractors"] == 65 and built["n_pool_images"] == 8
    assert len(list((tmp_path / "chunks").iterdir())) == 4  # 20, 20, 20, 5
    stacked = stacked_index(str(tmp_path / "base"), str(tmp_path / "chunks"))
    assert stacked.n_images == 77 and stacked.n_segments == 5
    assert isinstance(stacked.segments[1].codes, np.memmap)
    # The same entries, put in one segment by a plain loop.
    entries = image_entries(stacked.segments, 32)
    rows = sorted(
        (word, image, code)
        for image, held in entries.items()
        for word, code in held.items()
    )
    offsets = np.searchsorted([word for word, _, _ in rows], np.arange(33))
    one = ASMKSegment(
        0,
        77,
        offsets.astype(np.int64),
        np.array([image for _, image, _ in rows], np.int32),
        np.array([list(code) for _, _, code in rows], np.uint8),
    )
    in_memory = ASMKIndex.from_segments(codebook, stacked.names, [one])
    assert (
        stacked.names[:12] == base.names and stacked.names[12] == "distractor-0000012"
    )
    queries = [sets.descriptors[sets.offsets[i] : sets.offsets[i + 1]] for i in (0, 5)]
    for words in (3, 1):
        ours = stacked.search(queries, k=30, multiple_assignment=words)
        theirs = in_memory.search(queries, k=30, multiple_assignment=words)
        for mine, reference in zip(ours, theirs, strict=True):
            np.testing.assert_array_equal(mine.rows, reference.rows)
            np.testing.assert_allclose(mine.scores, reference.scores, rtol=1e-12)
    # A real image finds itself first among the distractors.
    assert stacked.search(queries[1:], k=1, multiple_assignment=1)[0].names == (
        base.names[5],
    )


def test_main_measures_quality_and_cost_of_each_size(tmp_path):
    report = tmp_path / "million.json"
    main(
        [
            *tiny_problem(tmp_path),
            "--sizes", "40", "--chunk", "16", "--multiple-assignment", "3", "1",
            "--stop-fractions", "0", "0.3",
            "--work", str(tmp_path), "--json", str(report),
        ]
    )  # fmt: skip
    result = json.loads(report.read_text())
    assert result["base"]["n_images"] == 12 and result["base"]["n_queries"] == 3
    assert [row["n_images"] for row in result["rows"]] == [12, 40]
    for row in result["rows"]:
        assert row["n_queries"] == 3
        searched = [
            (measured["stop_fraction"], measured["multiple_assignment"])
            for measured in row["searches"]
        ]
        assert searched == [(0, 3), (0, 1), (0.3, 3), (0.3, 1)]
        for measured in row["searches"]:
            assert 0 <= measured["mAP"] <= 1 and measured["cpu_ms_per_query"] > 0
            assert (measured["stop_words"] > 0) == (measured["stop_fraction"] > 0)
        assert 0 < row["search_peak_anon_mib"] <= row["search_peak_rss_mib"]
    grown = result["rows"][1]
    assert grown["searched"] == "folder" and grown["n_segments"] == 1
    assert grown["n_segments_saved"] == 3  # the base and two chunks
    assert grown["open_read_bytes"] > 0 and grown["bytes_per_image"] > 0
    assert sorted(path.name for path in tmp_path.iterdir()) == [
        "codebook.npz",
        "desc.npz",
        "million.json",
        "truth.json",
    ]


def test_vlad_distractors_are_pool_descriptors_drawn_without_replacement():
    pool = np.random.default_rng(0).standard_normal((50, 4)).astype(np.float32)
    sets = descriptor_distractors(pool, [3, 50, 0, 7], np.random.default_rng(1))
    assert len(sets) == 4 and list(np.diff(sets.offsets)) == [3, 50, 0, 7]
    rows = {tuple(row): number for number, row in enumerate(pool)}
    for image in range(4):
        drawn = sets.descriptors[sets.offsets[image] : sets.offsets[image + 1]]
        numbers = [rows[tuple(row)] for row in drawn]  # each a row of the pool
        assert len(set(numbers)) == len(numbers)


def test_vlad_peer_measures_exact_and_compressed_rows(tmp_path):
    sets, _ = make_asmk_problem(30, 300, 64, n_features=32)
    sets.save(tmp_path / "desc.npz")
    names = sets.names
    truth = {
        names[i]: {"relevant": [names[i + 10]], "junk": [names[i]]} for i in range(5)
    }
    (tmp_path / "truth.json").write_text(json.dumps(truth))
    result = vlad_rows(
        str(tmp_path / "desc.npz"),
        str(tmp_path / "truth.json"),
        [400],
        pca=16,
        factory="IVF{nlist},PQ4",
        whitening_sample=100,
    )
    assert [(row["n_images"], row["index"]) for row in result["rows"]] == [
        (30, "Flat, no whitening"),
        (30, "Flat, PCA-whitened to 16"),
        (400, "Flat, PCA-whitened to 16"),
        (400, "IVF8,PQ4"),
    ]
    for row in result["rows"]:
        assert 0 <= row["mAP"] <= 1 and row["cpu_ms_per_query"] >= 0


def tiny_problem(tmp_path):
    """The descriptors, codebook and ground truth of a run of :func:`main`."""
    sets, codebook = make_asmk_problem(12, 150, 32, n_features=128)
    sets.save(tmp_path / "desc.npz")
    codebook.save(tmp_path / "codebook.npz")
    names = sets.names
    truth = {
        names[i]: {"relevant": [names[i + 6]], "junk": [names[i]]} for i in range(3)
    }
    (tmp_path / "truth.json").write_text(json.dumps(truth))
    return [
        "--descriptors", str(tmp_path / "desc.npz"),
        "--codebook", str(tmp_path / "codebook.npz"),
        "--ground-truth", str(tmp_path / "truth.json"),
    ]  # fmt: skip


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 300), st.integers(0, 6), st.integers(0, 2**32 - 1))
def test_codes_are_repacked_as_the_package_packs_the_same_residuals(
    n_features, n_entries, seed
):
    hamming = pytest.importorskip("asmk.hamming")
    residuals = np.random.default_rng(seed).standard_normal((n_entries, n_features))
    residuals = residuals.astype(np.float32)
    packed = package_codes(np.packbits(residuals > 0, axis=1))
    assert packed.dtype == np.uint32 and packed.flags.c_contiguous
    np.testing.assert_array_equal(packed, hamming.binarize_and_pack_2D(residuals))


def test_bits_go_to_the_highest_bit_of_each_32_bit_word():
    bits = np.zeros((1, 40), bool)
    bits[0, [0, 31, 32]] = True  # first and last of the first word, first of the next
    assert package_codes(np.packbits(bits, axis=1)).tolist() == [[2**31 + 1, 2**31]]


def test_the_package_holds_the_index_entries_and_ranks_as_vlad_does():
    pytest.importorskip("asmk.hamming")
    sets, codebook = make_asmk_problem(30, 200, 64, n_features=128, seed=3)
    index = build_asmk_index(sets.between(0, 20), codebook)
    index.add(sets.between(20, 30))  # two segments, added in turn
    assert index.n_segments == 2
    inverted_file = package_inverted_file(index)
    # Each list holds the index's entries of that word: images and codes.
    held = image_entries(index.segments, 64)
    for word in range(64):
        count = inverted_file.counts[word]
        images = inverted_file.ivf_image_ids[word][:count].tolist()
        codes = inverted_file.ivf_vecs[word][:count]
        assert sorted(images) == sorted(i for i, words in held.items() if word in words)
        for image, code in zip(images, codes, strict=True):
            expected = np.frombuffer(held[image][word], np.uint8)[None]
            np.testing.assert_array_equal(code, package_codes(expected)[0])
    queries = sets.between(0, 6)
    rows, scores = package_search(
        package_codebook(codebook),
        inverted_file,
        queries,
        k=8,
        multiple_assignment=3,
        alpha=index.alpha,
        threshold=index.threshold,
    )
    assert rows.shape == scores.shape == (6, 8)
    for found, row, score in zip(
        index.search(queries, k=8, multiple_assignment=3), rows, scores, strict=True
    ):
        np.testing.assert_array_equal(found.rows, row)
        np.testing.assert_allclose(found.scores, score, rtol=1e-5)


def test_the_peer_takes_asmk_star_without_idf_only():
    sets, codebook = make_asmk_problem(4, 50, 16, n_features=32)
    for settings_ in ({"binary": False}, {"idf": True}):
        index = build_asmk_index(sets, codebook, **settings_)
        with pytest.raises(ValueError, match="ASMK\\* index without idf"):
            package_inverted_file(index)


def test_agreement_counts_the_same_first_images_and_their_scores():
    ours = [(["a", "b", "c"], [0.9, 0.5, 0.1]), (["a", "b", "c"], [0.9, 0.5, 0.1])]
    theirs = [(["a", "b", "d"], [0.9, 0.4, 0.2]), (["b", "a", "c"], [0.5, 0.9, 0.1])]
    assert ranking_agreement(ours, theirs, top=2) == {
        "top": 2,
        "n_queries": 2,
        "same_order": 1,
        "same_images": 2,
        "mean_overlap": 1.0,
        "max_score_difference": pytest.approx(0.1),
    }
    compared = ranking_agreement(ours, theirs, top=3)
    assert (compared["same_order"], compared["same_images"]) == (0, 1)
    assert compared["mean_overlap"] == pytest.approx(5 / 6)
    assert ranking_agreement(ours, ours)["same_order"] == 2
    with pytest.raises(ValueError, match="2 rankings against 1"):
        ranking_agreement(ours, theirs[:1])


def test_main_measures_the_package_on_the_same_database(tmp_path):
    pytest.importorskip("asmk.hamming")
    report = tmp_path / "million.json"
    main(
        tiny_problem(tmp_path) + [
            "--sizes", "40", "--chunk", "16", "--multiple-assignment", "3", "1",
            "--asmk-package-sizes", "40",
            "--work", str(tmp_path), "--json", str(report),
        ]
    )  # fmt: skip
    base, grown = json.loads(report.read_text())["rows"]
    assert "asmk_package" not in base
    package = grown["asmk_package"]
    assert package["n_images"] == 40 and package["multiple_assignment"] == 3
    assert package["n_entries"] == grown["n_entries"] and package["build_cpu_s"] > 0
    assert 0 < package["peak_anon_mib"] <= package["peak_rss_mib"]
    assert "anon_kib" not in package and "anon_kib" not in grown  # the child's own
    # The same database, the same kernel, the same exact words: vlad's ranks.
    (compared,) = package["agreement"]
    assert compared["quantizer"] == "Flat"
    assert compared["same_order"] == compared["n_queries"] == 3
    assert compared["max_score_difference"] < 1e-5
    (vlad_row,) = [s for s in grown["searches"] if s["multiple_assignment"] == 3]
    assert package["mAP"] == pytest.approx(vlad_row["mAP"])
    assert sorted(path.name for path in tmp_path.iterdir()) == [
        "codebook.npz",
        "desc.npz",
        "million.json",
        "truth.json",
    ]


def test_package_sizes_must_be_database_sizes(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(
            tiny_problem(tmp_path)
            + ["--sizes", "40", "--asmk-package-sizes", "40", "50"]
        )
    assert "--asmk-package-sizes [50] are not among --sizes" in capsys.readouterr().err
