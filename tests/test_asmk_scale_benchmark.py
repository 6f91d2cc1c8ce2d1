"""The ASMK scale benchmark on a tiny problem: copies perturbed as it says,
one row per size, the child's search measured."""

from __future__ import annotations

import json

import numpy as np
import pytest

from benchmarks.asmk import make_asmk_problem
from benchmarks.asmk_scale import DROPPED, FLIPPED, copied_segment, main
from vlad.asmk import ASMKIndex, build_asmk_index

#: The benchmarks' own tests: a CI step of their own, not the default run.
pytestmark = pytest.mark.benchmarks


def test_a_copy_drops_entries_flips_bits_and_follows_the_base():
    sets, codebook = make_asmk_problem(40, 200, 64, n_features=64)
    base = build_asmk_index(sets, codebook)
    (segment,) = base.segments
    copy = copied_segment(segment, 40, np.random.default_rng(0))
    assert (copy.first_image, copy.n_images) == (40, 40)
    assert copy.entry_images.min() >= 40 and copy.entry_images.max() < 80
    assert copy.n_entries == pytest.approx(segment.n_entries * (1 - DROPPED), rel=0.1)
    np.testing.assert_array_equal(
        copy.image_entries, np.bincount(copy.entry_images - 40, minlength=40)
    )
    # Within a word, images keep their order; a word's list only shrinks.
    assert np.all(copy.word_counts() <= segment.word_counts())
    for word in range(64):
        start, stop = copy.word_offsets[word], copy.word_offsets[word + 1]
        assert np.all(np.diff(copy.entry_images[start:stop]) > 0)
    index = ASMKIndex.from_segments(
        codebook, [str(i) for i in range(80)], [segment, copy]
    )
    assert index.n_images == 80
    # The bits flipped: about FLIPPED of them, over the entries kept.
    flipped = np.unpackbits(kept_codes_xor(segment, copy))
    assert flipped.mean() == pytest.approx(FLIPPED, abs=0.02)


def kept_codes_xor(segment, copy):
    """The codes of each entry the copy kept, XORed with the original's."""
    pairs = []
    for word in range(segment.n_words):
        ours = segment.entry_images[
            segment.word_offsets[word] : segment.word_offsets[word + 1]
        ]
        theirs = copy.entry_images[
            copy.word_offsets[word] : copy.word_offsets[word + 1]
        ]
        for row, image in enumerate(theirs):
            found = np.flatnonzero(ours == image - copy.first_image)
            if found.size:
                pairs.append(
                    segment.codes[segment.word_offsets[word] + found[0]]
                    ^ copy.codes[copy.word_offsets[word] + row]
                )
    return np.array(pairs)


def test_main_measures_each_size_in_a_child(tmp_path):
    sets, _ = make_asmk_problem(12, 150, 32, n_features=128)
    descriptors = tmp_path / "desc.npz"
    sets.save(descriptors)
    codebook_path = tmp_path / "codebook.npz"
    make_asmk_problem(12, 150, 32, n_features=128)[1].save(codebook_path)
    report = tmp_path / "scale.json"
    main(
        [
            "--descriptors", str(descriptors), "--codebook", str(codebook_path),
            "--sizes", "36", "--queries", "2", "--multiple-assignment", "3", "1",
            "--work", str(tmp_path), "--json", str(report),
        ]
    )  # fmt: skip
    result = json.loads(report.read_text())
    assert result["n_words"] == 32 and result["base"]["n_images"] == 12
    assert [row["n_images"] for row in result["rows"]] == [12, 36]
    for row in result["rows"]:
        assert set(row["assignments"]) == {"3", "1"}
        assert row["n_queries"] == 2 and row["search_peak_rss_mib"] > 0
    assert result["rows"][1]["bytes_per_image"] > 0
    assert result["rows"][1]["build_peak_rss_mib"] > 0
    assert result["base"]["peak_rss_mib"] > 0
    assert sorted(path.name for path in tmp_path.iterdir()) == [
        "codebook.npz",
        "desc.npz",
        "scale.json",
    ]
