"""fit_codebook and Codebook files."""

from __future__ import annotations

import os

import numpy as np
import pytest

import vlad


@pytest.fixture(scope="module")
def blobs():
    rng = np.random.default_rng(0)
    true_centers = rng.uniform(-50, 50, size=(4, 3))
    descriptors = true_centers[rng.integers(0, 4, 400)] + rng.normal(size=(400, 3))
    return descriptors.astype(np.float32), true_centers


def test_recovers_well_separated_centres(blobs):
    descriptors, true_centers = blobs
    codebook = vlad.fit_codebook(descriptors, 4, seed=0)
    assert codebook.centers.shape == (4, 3) and codebook.centers.dtype == np.float32
    distances = np.linalg.norm(codebook.centers[:, None] - true_centers[None], axis=-1)
    assert np.all(distances.min(axis=1) < 0.5)
    assert sorted(distances.argmin(axis=1)) == [0, 1, 2, 3]


@pytest.mark.parametrize("algorithm", ["lloyd", "minibatch"])
def test_same_seed_same_codebook(blobs, algorithm):
    descriptors, _ = blobs
    first = vlad.fit_codebook(descriptors, 4, seed=7, sample=300, algorithm=algorithm)
    second = vlad.fit_codebook(descriptors, 4, seed=7, sample=300, algorithm=algorithm)
    np.testing.assert_array_equal(first.centers, second.centers)
    assert first.fingerprint == second.fingerprint
    assert first.metadata["n_training_descriptors"] == 300
    assert first.metadata["algorithm"] == algorithm


def test_auto_uses_minibatch_for_large_samples(monkeypatch, blobs):
    descriptors, _ = blobs
    monkeypatch.setattr(vlad.core._codebook, "FULL_KMEANS_MAX_SAMPLES", 100)
    fit = vlad.fit_codebook
    assert fit(descriptors, 4, backend="sklearn").metadata["algorithm"] == "minibatch"
    assert fit(descriptors[:100], 4, backend="sklearn").metadata["algorithm"] == "lloyd"


def test_accepts_descriptor_sets_and_keeps_their_metadata(blobs):
    descriptors, _ = blobs
    sets = vlad.DescriptorSets(descriptors, [0, 150, 400], metadata={"kind": "sift"})
    codebook = vlad.fit_codebook(sets, 4)
    assert codebook.metadata["descriptor"] == {"kind": "sift"}
    from_list = vlad.fit_codebook([descriptors[:150], descriptors[150:]], 4)
    np.testing.assert_array_equal(from_list.centers, codebook.centers)


def test_float64_descriptors_give_float64_centres(blobs):
    descriptors, _ = blobs
    assert (
        vlad.fit_codebook(descriptors.astype(np.float64), 2).centers.dtype == np.float64
    )


@pytest.mark.parametrize(
    ("descriptors", "kwargs", "error", "message"),
    [
        (np.ones((3, 2)), {"n_clusters": 4}, ValueError, "cannot fit 4 centres on 3"),
        (np.array([[np.nan, 0.0]] * 5), {"n_clusters": 2}, ValueError, "NaN"),
        (
            np.ones((5, 2)),
            {"n_clusters": 0},
            ValueError,
            "n_clusters must be an integer",
        ),
        (np.ones((5, 2)), {"n_clusters": 2.5}, TypeError, "got 2.5"),
        (
            np.ones((5, 2)),
            {"sample": 0},
            ValueError,
            "sample must be None or an integer >= 1; got 0",
        ),
        (
            np.ones((5, 2)),
            {"algorithm": "elkan"},
            ValueError,
            "algorithm must be one of",
        ),
        (np.ones(5), {}, ValueError, "must be a 2-D array"),
    ],
)
def test_bad_input_gets_a_clear_error(descriptors, kwargs, error, message):
    arguments = {"n_clusters": 2}
    arguments.update(kwargs)
    with pytest.raises(error, match=message):
        vlad.fit_codebook(descriptors, **arguments)


def test_save_load_round_trip(tmp_path, blobs):
    descriptors, _ = blobs
    sets = vlad.DescriptorSets(descriptors, [0, 400], metadata={"kind": "rootsift"})
    codebook = vlad.fit_codebook(sets, 4, seed=3)
    path = tmp_path / "codebook.npz"
    codebook.save(path)
    loaded = vlad.Codebook.load(path)
    np.testing.assert_array_equal(loaded.centers, codebook.centers)
    assert loaded.metadata == codebook.metadata
    assert loaded.metadata["descriptor"] == {"kind": "rootsift"}
    assert loaded.fingerprint == codebook.fingerprint
    with np.load(path, allow_pickle=False) as archive:
        assert sorted(archive.files) == ["centers", "metadata"]


def test_load_refuses_files_that_are_not_codebooks(tmp_path):
    sets_path = tmp_path / "descriptors.npz"
    vlad.DescriptorSets.from_list([np.ones((2, 2))]).save(sets_path)
    with pytest.raises(ValueError, match="is not a vlad codebook file"):
        vlad.Codebook.load(sets_path)
    plain = tmp_path / "plain.npz"
    np.savez(plain, centers=np.ones((2, 2)))
    with pytest.raises(
        ValueError, match="is not a vlad codebook file: it lacks metadata"
    ):
        vlad.Codebook.load(plain)
    image = tmp_path / "photo.jpg"
    image.write_bytes(b"\xff\xd8\xff\xe0 not really")
    with pytest.raises(
        ValueError, match="is not a vlad codebook file: it is not a NumPy .npy or .npz"
    ):
        vlad.Codebook.load(image)


def test_codebook_rejects_bad_centres():
    with pytest.raises(ValueError, match="centers contains 1 NaN"):
        vlad.Codebook([[np.nan, 1.0]])
    with pytest.raises(ValueError, match="at least one centre"):
        vlad.Codebook(np.empty((0, 3)))


def test_numpy_integer_seed_is_saved_as_json(tmp_path, blobs):
    descriptors, _ = blobs
    codebook = vlad.fit_codebook(descriptors, 2, seed=np.int64(3))
    codebook.save(tmp_path / "codebook.npz")
    assert vlad.Codebook.load(tmp_path / "codebook.npz").metadata["seed"] == 3


@pytest.mark.parametrize(
    ("seed", "error"), [(-1, ValueError), ("a", TypeError), (1.5, TypeError)]
)
def test_bad_seed_is_named(seed, error, blobs):
    with pytest.raises(error, match="seed must be a non-negative integer"):
        vlad.fit_codebook(blobs[0], 2, seed=seed)


def test_nan_outside_the_sample_is_found(blobs):
    descriptors = np.vstack([blobs[0], [[np.nan, 0.0, 0.0]]])
    with pytest.raises(ValueError, match="descriptors contains 1 NaN"):
        vlad.fit_codebook(descriptors, 2, sample=50)


def test_sample_smaller_than_n_clusters_is_named(blobs):
    with pytest.raises(ValueError, match="sample=3 is smaller than n_clusters=4"):
        vlad.fit_codebook(blobs[0], 4, sample=3)


def test_metadata_cannot_override_the_format(tmp_path):
    path = tmp_path / "codebook.npz"
    vlad.Codebook(np.ones((2, 2)), {"format": "mine", "note": "kept"}).save(path)
    assert vlad.Codebook.load(path).metadata["note"] == "kept"


def test_a_single_array_file_is_not_a_codebook(tmp_path):
    path = tmp_path / "vectors.npy"
    np.save(path, np.ones((2, 2)))
    with pytest.raises(ValueError, match="holds a single array, not an .npz"):
        vlad.Codebook.load(path)


def test_saved_files_get_the_usual_permissions(tmp_path):
    path = tmp_path / "codebook.npz"
    vlad.Codebook(np.ones((2, 2))).save(path)
    mask = os.umask(0o022)
    os.umask(mask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~mask
