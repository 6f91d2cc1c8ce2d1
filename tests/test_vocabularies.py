"""vlad.core._vocabularies: several vocabularies in one codebook."""

from __future__ import annotations

import hashlib
import json
import zipfile

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import vlad
from vlad._info import describe_file
from vlad.core._codebook import as_centers
from vlad.search import fit_whitening


def hand_vlad(sets, centers, *, power, intra, l2) -> np.ndarray:
    """VLAD vectors by a loop over images and descriptors, in float64."""
    centers = np.asarray(centers, dtype=np.float64)
    vectors = np.zeros((len(sets), centers.size))
    for t in range(len(sets)):
        residuals = np.zeros_like(centers)
        for x in np.asarray(sets[t], dtype=np.float64):
            k = int(np.argmin(((centers - x) ** 2).sum(axis=1)))
            residuals[k] += x - centers[k]
        residuals = np.sign(residuals) * np.abs(residuals) ** power
        if intra:
            norms = np.linalg.norm(residuals, axis=1, keepdims=True)
            residuals = np.divide(residuals, norms, where=norms > 0, out=residuals)
        vector = residuals.ravel()
        norm = np.linalg.norm(vector)
        vectors[t] = vector / norm if l2 and norm > 0 else vector
    return vectors


@pytest.fixture(scope="module")
def sets():
    made = vlad.datasets.make_descriptor_sets(11, 30, 8, ragged=True, seed=0)
    # An image without descriptors, whose vector must stay zero.
    return vlad.DescriptorSets.from_list(
        [*(made[t] for t in range(11)), np.zeros((0, 8))]
    )


@pytest.fixture(scope="module")
def codebooks(sets):
    return [
        vlad.fit_codebook(sets, size, seed=seed) for seed, size in enumerate((3, 5, 4))
    ]


@pytest.mark.parametrize(
    ("power", "intra", "l2"),
    [(1.0, False, False), (0.5, True, True), (1.0, True, False), (0.5, False, True)],
)
def test_encoding_concatenates_each_vocabulary_by_hand(
    sets, codebooks, power, intra, l2
):
    stacked = vlad.stack_vocabularies(codebooks)
    vectors = vlad.encode(sets, stacked, power=power, intra=intra, l2=l2)
    parts = [
        hand_vlad(sets, codebook.centers, power=power, intra=intra, l2=l2)
        for codebook in codebooks
    ]
    expected = np.concatenate(parts, axis=1)
    if l2:
        norms = np.linalg.norm(expected, axis=1, keepdims=True)
        expected = np.divide(expected, norms, where=norms > 0, out=expected)
    assert vectors.shape == (len(sets), 12 * 8) and vectors.dtype == np.float32
    np.testing.assert_allclose(vectors, expected, rtol=2e-5, atol=2e-6)
    empty = sets.lengths == 0
    assert empty.any() and not vectors[empty].any()
    if l2:
        np.testing.assert_allclose(
            np.linalg.norm(vectors[~empty], axis=1), 1, rtol=1e-6
        )


@pytest.mark.parametrize("aggregator", ["loop", "sparse", "auto"])
def test_every_aggregator_concatenates_the_same(sets, codebooks, aggregator):
    stacked = vlad.stack_vocabularies(codebooks)
    parts = [vlad.encode(sets, c.centers, aggregator="loop") for c in codebooks]
    expected = np.concatenate(parts, axis=1) / np.sqrt(len(parts))
    expected[sets.lengths == 0] = 0
    vectors = vlad.encode(sets, stacked, aggregator=aggregator, mass=True)
    masses = [vlad.encode(sets, c.centers, mass=True) for c in codebooks]
    mass_expected = np.concatenate(masses, axis=1) / np.sqrt(len(masses))
    mass_expected[sets.lengths == 0] = 0
    np.testing.assert_allclose(vectors, mass_expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(
        vlad.encode(sets, stacked, aggregator=aggregator),
        expected,
        rtol=1e-5,
        atol=1e-6,
    )


def test_save_load_round_trip(tmp_path, codebooks):
    stacked = vlad.stack_vocabularies(codebooks)
    stacked.save(tmp_path / "codebook.npz")
    loaded = vlad.Codebook.load(tmp_path / "codebook.npz")
    assert loaded.vocabulary_sizes == (3, 5, 4)
    assert loaded.fingerprint == stacked.fingerprint
    assert loaded.metadata == stacked.metadata
    np.testing.assert_array_equal(loaded.centers, stacked.centers)
    with zipfile.ZipFile(tmp_path / "codebook.npz") as archive:
        record = json.loads(str(np.load(archive.open("metadata.npy"))))
    assert record["format_version"] == 2 and record["vocabulary_sizes"] == [3, 5, 4]
    assert [r["seed"] for r in loaded.metadata["vocabularies"]] == [0, 1, 2]
    codebooks[0].save(tmp_path / "single.npz")
    with zipfile.ZipFile(tmp_path / "single.npz") as archive:
        record = json.loads(str(np.load(archive.open("metadata.npy"))))
    assert record["format_version"] == 1 and "vocabulary_sizes" not in record


def test_a_newer_codebook_file_is_refused(tmp_path, codebooks):
    path = tmp_path / "codebook.npz"
    codebooks[0].save(path)
    arrays = dict(np.load(path))
    record = json.loads(str(arrays["metadata"]))
    record["format_version"] = 3
    np.savez(path, centers=arrays["centers"], metadata=np.array(json.dumps(record)))
    with pytest.raises(ValueError, match="newer vlad"):
        vlad.Codebook.load(path)


def test_fingerprints_tell_vocabularies_apart(codebooks):
    stacked = vlad.stack_vocabularies(codebooks)
    one_vocabulary = vlad.Codebook(stacked.centers)
    resplit = vlad.Codebook(stacked.centers, vocabulary_sizes=[8, 4])
    fingerprints = {
        stacked.fingerprint,
        one_vocabulary.fingerprint,
        resplit.fingerprint,
        *(codebook.fingerprint for codebook in codebooks),
    }
    assert len(fingerprints) == 6
    # A codebook of one vocabulary keeps the fingerprint it always had.
    digest = hashlib.sha256()
    centers = codebooks[0].centers
    digest.update(f"{centers.shape}{centers.dtype.str}".encode() + centers.tobytes())
    assert codebooks[0].fingerprint == digest.hexdigest()[:16]


def test_split_undoes_stack(codebooks):
    stacked = vlad.stack_vocabularies(codebooks)
    parts = vlad.split_vocabularies(stacked)
    assert [part.fingerprint for part in parts] == [c.fingerprint for c in codebooks]
    assert [part.metadata for part in parts] == [c.metadata for c in codebooks]
    nested = vlad.stack_vocabularies(
        [vlad.stack_vocabularies(codebooks[:2]), codebooks[2]]
    )
    assert nested.fingerprint == stacked.fingerprint
    assert vlad.split_vocabularies(codebooks[0]) == [codebooks[0]]


@settings(max_examples=10)
@given(st.integers(1, 4), st.integers(0, 1000))
def test_fit_vocabularies_fits_each_seed(n_vocabularies, seed):
    descriptors = np.random.default_rng(seed).normal(size=(30, 3)).astype(np.float32)
    codebook = vlad.fit_vocabularies(descriptors, 3, n_vocabularies, seed=seed)
    parts = vlad.split_vocabularies(codebook)
    assert codebook.n_vocabularies == n_vocabularies == len(parts)
    for index, part in enumerate(parts):
        expected = vlad.fit_codebook(descriptors, 3, seed=seed + index)
        np.testing.assert_array_equal(part.centers, expected.centers)
        assert part.metadata["seed"] == seed + index


def test_one_vocabulary_is_fit_codebook(sets):
    one = vlad.fit_vocabularies(sets, 4, 1, seed=5)
    expected = vlad.fit_codebook(sets, 4, seed=5)
    assert one.fingerprint == expected.fingerprint and one.metadata == expected.metadata


def test_info_shows_the_vocabularies(tmp_path, codebooks):
    vlad.stack_vocabularies(codebooks).save(tmp_path / "codebook.npz")
    summary = describe_file(tmp_path / "codebook.npz")
    assert summary["n_clusters"] == 12 and summary["n_vocabularies"] == 3
    assert summary["vocabulary_sizes"] == [3, 5, 4]
    assert [record["seed"] for record in summary["vocabularies"]] == [0, 1, 2]


def test_single_vocabulary_consumers_refuse_in_one_line(codebooks):
    stacked = vlad.stack_vocabularies(codebooks)
    with pytest.raises(
        ValueError, match=r"holds 3 vocabularies \(sizes \[3, 5, 4\]\)"
    ) as raised:
        as_centers(stacked)
    assert "\n" not in str(raised.value)


def test_jax_encoder_refuses_several_vocabularies(codebooks):
    pytest.importorskip("jax")
    with pytest.raises(ValueError, match="3 vocabularies"):
        vlad.JaxEncoder(vlad.stack_vocabularies(codebooks))


def test_vlad_encoder_encodes_with_several_vocabularies(sets, codebooks):
    stacked = vlad.stack_vocabularies(codebooks)
    encoder = vlad.VLADEncoder.from_codebook(stacked, power=0.5).fit(sets)
    np.testing.assert_array_equal(
        encoder.transform(sets), vlad.encode(sets, stacked, power=0.5)
    )
    assert encoder.get_feature_names_out().shape == (12 * 8,)


def test_vectors_of_several_vocabularies_whiten_jointly(sets, codebooks):
    vectors = vlad.encode(sets, vlad.stack_vocabularies(codebooks), power=0.5)
    whitening = fit_whitening(vectors, 6)
    assert whitening.transform(vectors).shape == (len(sets), 6)


def test_encoding_images_of_a_descriptors_file(tmp_path, sets, codebooks):
    sets.save(tmp_path / "descriptors.npz")
    stacked = vlad.stack_vocabularies(codebooks)
    result = vlad.encode_images(tmp_path / "descriptors.npz", stacked)
    np.testing.assert_array_equal(result.vectors, vlad.encode(sets, stacked))
    assert result.record()["codebook"]["fingerprint"] == stacked.fingerprint


@pytest.mark.parametrize(
    ("sizes", "error", "message"),
    [
        ([3, 3], ValueError, r"sum to the number of centres \(5\); got \[3, 3\]"),
        ([5, 0], ValueError, "vocabulary_sizes must be an integer >= 1; got 0"),
        ([2.5, 2.5], TypeError, "vocabulary_sizes must be an integer"),
        (5, TypeError, "vocabulary_sizes must be a sequence"),
    ],
)
def test_bad_vocabulary_sizes(sizes, error, message):
    with pytest.raises(error, match=message):
        vlad.Codebook(np.zeros((5, 2)), vocabulary_sizes=sizes)


def test_stack_refuses_what_does_not_stack(codebooks):
    with pytest.raises(ValueError, match="at least one codebook"):
        vlad.stack_vocabularies([])
    with pytest.raises(TypeError, match=r"codebooks\[1\] must be a Codebook"):
        vlad.stack_vocabularies([codebooks[0], np.zeros((2, 8))])
    with pytest.raises(ValueError, match=r"codebooks\[1\] has 4 features"):
        vlad.stack_vocabularies([codebooks[0], vlad.Codebook(np.zeros((2, 4)))])
    other = vlad.Codebook(np.zeros((2, 8)), {"descriptor": {"extractor": "other"}})
    with pytest.raises(ValueError, match="fitted on other descriptors"):
        vlad.stack_vocabularies([codebooks[0], other])
    with pytest.raises(TypeError, match="sequence of Codebook"):
        vlad.stack_vocabularies(codebooks[0])
