"""``vlad index --method asmk`` and ``vlad search`` on it, with the bundled
photos: the CLI gives the library's results, and bad input one line."""

from __future__ import annotations

import json

import numpy as np
import pytest
from photos import DATA, PHOTOS

import vlad
from vlad.asmk import build_asmk_index, load_asmk_index
from vlad.search import read_rankings

from .conftest import FAST, run


@pytest.fixture(scope="module")
def asmk_built(tmp_path_factory):
    """The bundled photos' descriptors, a 64-word codebook of them, and their
    ASMK* index."""
    folder = tmp_path_factory.mktemp("asmk")
    run("extract", DATA, *FAST, "-o", folder / "descriptors.npz")
    run(
        "fit",
        folder / "descriptors.npz",
        "--n-clusters",
        64,
        "-o",
        folder / "codebook.npz",
    )
    run(
        "index",
        folder / "descriptors.npz",
        "--method",
        "asmk",
        "-c",
        folder / "codebook.npz",
        "-o",
        folder / "index",
    )
    return folder


def test_the_index_is_the_library_s(asmk_built):
    sets = vlad.DescriptorSets.load(asmk_built / "descriptors.npz")
    codebook = vlad.Codebook.load(asmk_built / "codebook.npz")
    expected = build_asmk_index(sets, codebook)
    written = load_asmk_index(asmk_built / "index")
    assert written.names == expected.names == sorted(PHOTOS)
    np.testing.assert_array_equal(written.codes, expected.codes)
    np.testing.assert_array_equal(written.entry_images, expected.entry_images)


@pytest.mark.parametrize("queries", ["descriptors", "images"])
def test_search_gives_the_library_s_results(asmk_built, tmp_path, queries):
    inputs = asmk_built / "descriptors.npz" if queries == "descriptors" else DATA
    output = tmp_path / "results.json"
    run(
        "search",
        asmk_built / "index",
        inputs,
        "-c",
        asmk_built / "codebook.npz",
        "--top",
        3,
        "--multiple-assignment",
        2,
        "--stop-fraction",
        0.1,
        "-o",
        output,
    )
    sets = vlad.DescriptorSets.load(asmk_built / "descriptors.npz")
    index = load_asmk_index(asmk_built / "index")
    expected = index.search(sets, 3, multiple_assignment=2, stop_fraction=0.1)
    assert expected.record["stop_words"] > 0
    assert read_rankings(output) == expected.rankings()
    document = json.loads(output.read_text())
    assert document["multiple_assignment"] == 2
    assert document["stop_fraction"] == 0.1
    assert document["index"]["binary"] is True
    for name, ranked in expected.rankings().items():
        assert ranked[0] == name


def test_full_residuals_and_kernel_options_are_kept(asmk_built, tmp_path):
    run(
        "index",
        asmk_built / "descriptors.npz",
        "--method",
        "asmk",
        "-c",
        asmk_built / "codebook.npz",
        "--full",
        "--alpha",
        2,
        "--threshold",
        0.1,
        "--idf",
        "-o",
        tmp_path / "index",
    )
    index = load_asmk_index(tmp_path / "index")
    assert (index.binary, index.alpha, index.threshold, index.idf) == (
        False,
        2.0,
        0.1,
        True,
    )
    assert index.codes.dtype == np.float32
    # Its queries take three words each unless told otherwise.
    output = tmp_path / "results.json"
    run("search", tmp_path / "index", asmk_built / "descriptors.npz", "-o", output)
    assert json.loads(output.read_text())["multiple_assignment"] == 3
    sets = vlad.DescriptorSets.load(asmk_built / "descriptors.npz")
    expected = index.search(sets, 10, multiple_assignment=3).rankings()
    assert read_rankings(output) == expected


def test_another_codebook_is_refused_in_one_line(asmk_built, tmp_path):
    codebook = vlad.Codebook.load(asmk_built / "codebook.npz")
    vlad.Codebook(codebook.centers[:8], codebook.metadata).save(tmp_path / "other.npz")
    result = run(
        "search",
        asmk_built / "index",
        asmk_built / "descriptors.npz",
        "-c",
        tmp_path / "other.npz",
        exit_code=1,
    )
    assert "but the index's vectors were made with codebook" in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_descriptors_of_another_kind_are_refused_in_one_line(asmk_built, tmp_path):
    run("extract", DATA, *FAST, "--no-root-sift", "-o", tmp_path / "sift.npz")
    for command in (
        ["search", asmk_built / "index", tmp_path / "sift.npz"],
        [
            "index",
            tmp_path / "sift.npz",
            "--method",
            "asmk",
            "-c",
            asmk_built / "codebook.npz",
            "-o",
            tmp_path / "index",
        ],
    ):
        result = run(*command, exit_code=1)
        assert "RootSIFT at detected keypoints" in result.output
        assert len(result.output.strip().splitlines()) == 1
    assert not (tmp_path / "index").exists()


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--method", "asmk"], "--method asmk needs --codebook"),
        (["--method", "asmk", "-c", "CODEBOOK", "--pca", 8], "--pca do not apply"),
        (["--full"], "--binary do not apply to --method vlad"),
    ],
)
def test_options_of_the_other_method_are_refused(asmk_built, arguments, message):
    arguments = [
        asmk_built / "codebook.npz" if argument == "CODEBOOK" else argument
        for argument in arguments
    ]
    result = run(
        "index",
        asmk_built / "descriptors.npz",
        *arguments,
        "-o",
        asmk_built / "never",
        exit_code=2,
    )
    assert message in result.output
    assert not (asmk_built / "never").exists()


def test_a_folder_of_shards_gives_the_same_index_and_results(asmk_built, tmp_path):
    """Shards are indexed (and searched) a shard at a time, to the same end."""
    shards = tmp_path / "shards"
    run("extract", DATA, *FAST, "-o", shards, "--shard-images", 3)
    common = ["--method", "asmk", "-c", asmk_built / "codebook.npz"]
    run("index", shards, *common, "-o", tmp_path / "index", "--resume")
    from_shards = load_asmk_index(tmp_path / "index")
    from_file = load_asmk_index(asmk_built / "index")
    assert from_shards.names == from_file.names
    np.testing.assert_array_equal(from_shards.codes, from_file.codes)
    np.testing.assert_array_equal(from_shards.entry_images, from_file.entry_images)
    run("search", tmp_path / "index", shards, "--top", 2, "-o", tmp_path / "r.json")
    expected = from_file.search(
        vlad.DescriptorSets.load(asmk_built / "descriptors.npz"), 2
    )
    assert read_rankings(tmp_path / "r.json") == expected.rankings()


def test_appending_and_merging_give_the_index_of_all_images(asmk_built, tmp_path):
    sets = vlad.DescriptorSets.load(asmk_built / "descriptors.npz")
    sets.between(0, 3).save(tmp_path / "first.npz")
    sets.between(3, len(sets)).save(tmp_path / "rest.npz")
    common = ["--method", "asmk", "-o", tmp_path / "index"]
    run("index", tmp_path / "first.npz", "-c", asmk_built / "codebook.npz", *common)
    result = run("index", tmp_path / "rest.npz", "--append", *common, "-v")
    assert f"{len(sets)} images in 2 segments" in result.output
    appended = load_asmk_index(tmp_path / "index")
    assert appended.n_segments == 2 and appended.names == sets.names
    whole = load_asmk_index(asmk_built / "index")
    assert appended.search(sets, 3).rankings() == whole.search(sets, 3).rankings()
    sets.between(0, 1).save(tmp_path / "again.npz")
    run("index", tmp_path / "again.npz", "--append", "--merge", *common)
    merged = load_asmk_index(tmp_path / "index")
    assert merged.n_segments == 1 and merged.n_images == len(sets) + 1
    expected = build_asmk_index(sets, vlad.Codebook.load(asmk_built / "codebook.npz"))
    expected.add(sets.between(0, 1))
    expected.merge()
    for name in ("word_offsets", "entry_images", "codes"):
        np.testing.assert_array_equal(getattr(merged, name), getattr(expected, name))


@pytest.mark.parametrize(
    ("arguments", "message", "exit_code"),
    [
        (["--append", "-c", "CODEBOOK"], "codebook cannot be given", 1),
        (["--append", "--idf"], "idf cannot be given", 1),
        (["--merge", "-c", "CODEBOOK"], "merge applies to append", 1),
        (["--append"], "no such index folder", 1),
        (["--append", "--resume"], "resume applies to a new index", 1),
    ],
)
def test_appending_takes_the_index_s_settings(
    asmk_built, tmp_path, arguments, message, exit_code
):
    arguments = [
        asmk_built / "codebook.npz" if argument == "CODEBOOK" else argument
        for argument in arguments
    ]
    result = run(
        "index",
        asmk_built / "descriptors.npz",
        "--method",
        "asmk",
        *arguments,
        "-o",
        tmp_path / "missing",
        exit_code=exit_code,
    )
    assert message in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert not (tmp_path / "missing").exists()


def test_an_approximate_quantizer_is_kept_with_the_index(asmk_built, tmp_path):
    pytest.importorskip("faiss")
    run(
        "index",
        asmk_built / "descriptors.npz",
        "--method",
        "asmk",
        "-c",
        asmk_built / "codebook.npz",
        "--quantizer",
        "HNSW16",
        "--quantizer-parameters",
        "efSearch=40",
        "-o",
        tmp_path / "index",
    )
    index = load_asmk_index(tmp_path / "index")
    assert (index.quantizer, index.quantizer_parameters) == ("HNSW16", "efSearch=40")
    result = run("index", asmk_built / "descriptors.npz", "--quantizer", "HNSW16",
                 "-o", tmp_path / "vlad", exit_code=2)  # fmt: skip
    assert "--quantizer do not apply to --method vlad" in result.output
