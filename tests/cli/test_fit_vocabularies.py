"""``vlad fit --adapt`` and ``vlad fit --vocabularies``."""

from __future__ import annotations

import numpy as np
import pytest
from photos import DATA, FAST_OPTIONS

import vlad

from .conftest import FAST, run


@pytest.fixture(scope="module")
def descriptor_file(tmp_path_factory, photo_sets):
    path = tmp_path_factory.mktemp("vocabularies") / "descriptors.npz"
    photo_sets.save(path)
    return path


def test_vocabularies_are_the_library_call_and_encode_concatenated(
    tmp_path, descriptor_file, photo_sets
):
    output = tmp_path / "codebooks.npz"
    run(
        "fit",
        descriptor_file,
        "--n-clusters",
        4,
        "--vocabularies",
        3,
        "--seed",
        7,
        "--sample",
        2000,
        "-o",
        output,
    )
    codebook = vlad.Codebook.load(output)
    expected, _ = vlad.fit_vocabularies_to_images(
        descriptor_file, 4, 3, sample=2000, seed=7
    )
    assert codebook.fingerprint == expected.fingerprint
    assert codebook.vocabulary_sizes == (4, 4, 4)
    for index, part in enumerate(vlad.split_vocabularies(codebook)):
        alone, _ = vlad.fit_codebook_to_images(
            descriptor_file, 4, sample=2000, seed=7 + index
        )
        assert part.fingerprint == alone.fingerprint
    info = run("info", output).output
    assert "n_vocabularies: 3" in info and "vocabulary_sizes: 4, 4, 4" in info
    run("encode", descriptor_file, "--codebook", output, "-o", tmp_path / "v.npy")
    vectors = np.load(tmp_path / "v.npy")
    np.testing.assert_array_equal(vectors, vlad.encode(photo_sets, codebook))
    assert vectors.shape == (len(photo_sets), 3 * 4 * 128)


def test_vocabularies_of_images_are_those_of_fit_codebook_to_images():
    codebook, report = vlad.fit_vocabularies_to_images(
        DATA, 4, 2, sample=500, seed=3, descriptor_options=FAST_OPTIONS, n_jobs=2
    )
    for index, part in enumerate(vlad.split_vocabularies(codebook)):
        alone, _ = vlad.fit_codebook_to_images(
            DATA, 4, sample=500, seed=3 + index, descriptor_options=FAST_OPTIONS
        )
        assert part.fingerprint == alone.fingerprint
        assert part.metadata == alone.metadata
    assert len(report.names) == 8


def test_adapt_is_the_library_call(tmp_path, descriptor_file, codebook_path):
    output = tmp_path / "adapted.npz"
    result = run("fit", descriptor_file, "--adapt", codebook_path, "-o", output)
    adapted = vlad.Codebook.load(output)
    expected, _ = vlad.adapt_codebook_to_images(descriptor_file, codebook_path)
    assert adapted.fingerprint == expected.fingerprint
    source = vlad.Codebook.load(codebook_path)
    assert adapted.metadata["adaptation"]["from"] == source.fingerprint
    assert source.fingerprint in result.output


def test_adapt_to_images_describes_them_as_the_codebook_did(
    tmp_path, codebook_path, photo_sets
):
    output = tmp_path / "adapted.npz"
    run("fit", DATA, "--adapt", codebook_path, "-o", output, "-j", 2)
    expected = vlad.adapt_codebook(vlad.Codebook.load(codebook_path), photo_sets)
    adapted = vlad.Codebook.load(output)
    np.testing.assert_array_equal(adapted.centers, expected.centers)
    assert adapted.metadata["descriptor"]["max_side"] == FAST_OPTIONS["max_side"]


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--n-clusters", 8),
        ("--seed", 1),
        ("--sample", 10),
        ("--per-image", 5),
        ("--vocabularies", 2),
    ],
)
def test_adapt_refuses_fitting_options(tmp_path, codebook_path, option, value):
    result = run(
        "fit",
        DATA,
        "--adapt",
        codebook_path,
        option,
        value,
        "-o",
        tmp_path / "adapted.npz",
        *FAST,
        exit_code=2,
    )
    assert "does not apply with --adapt" in result.output
    assert not (tmp_path / "adapted.npz").exists()


def test_adapt_refuses_another_kind_of_descriptors(tmp_path, codebook_path):
    result = run(
        "fit",
        DATA,
        "--adapt",
        codebook_path,
        "--no-root-sift",
        "-o",
        tmp_path / "adapted.npz",
        exit_code=1,
    )
    assert "Error: the codebook was fitted on RootSIFT" in result.output
    assert len(result.output.strip().splitlines()) == 1
