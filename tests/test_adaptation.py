"""vlad.core._adaptation: centres moved to the means of their descriptors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import vlad
from vlad.core import _adaptation as adaptation


def loop_adaptation(centers, descriptors) -> np.ndarray:
    """Adapted centres by a plain loop: nearest centre by float64 distances
    (ties to the lowest index), running sums, then means."""
    centers = np.asarray(centers, dtype=np.float64)
    sums = np.zeros_like(centers)
    counts = [0] * len(centers)
    for descriptor in np.asarray(descriptors, dtype=np.float64):
        distances = [float(np.sum((descriptor - center) ** 2)) for center in centers]
        nearest = distances.index(min(distances))
        sums[nearest] += descriptor
        counts[nearest] += 1
    adapted = centers.copy()
    for k, count in enumerate(counts):
        if count:
            adapted[k] = sums[k] / count
    return adapted


@st.composite
def integer_problems(draw):
    """Small-integer descriptors and centres, so that every distance and sum is
    exact and any two correct computations agree to the bit."""
    n_features = draw(st.integers(1, 4))
    n_clusters = draw(st.integers(1, 6))
    n_descriptors = draw(st.integers(1, 40))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    descriptors = rng.integers(-8, 9, (n_descriptors, n_features)).astype(np.float32)
    centers = rng.integers(-8, 9, (n_clusters, n_features)).astype(np.float32)
    cuts = sorted(draw(st.lists(st.integers(0, n_descriptors), max_size=5)))
    return descriptors, centers, cuts


@given(integer_problems())
def test_adaptation_is_the_loop_and_blocks_do_not_matter(problem):
    descriptors, centers, cuts = problem
    codebook = vlad.Codebook(centers)
    whole = vlad.adapt_codebook(codebook, descriptors)
    bounds = [0, *cuts, len(descriptors)]
    blocks = [descriptors[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
    in_blocks = vlad.adapt_codebook(codebook, iter(blocks))
    expected = loop_adaptation(centers, descriptors).astype(np.float32)
    np.testing.assert_array_equal(whole.centers, expected)
    np.testing.assert_array_equal(in_blocks.centers, whole.centers)
    assert in_blocks.fingerprint == whole.fingerprint


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_adaptation_of_real_descriptors_is_the_loop(dtype):
    sets = vlad.datasets.make_descriptor_sets(12, 40, 16, kind="gaussian", seed=1)
    codebook = vlad.fit_codebook(sets.descriptors[:100].astype(dtype), 6, seed=0)
    adapted = vlad.adapt_codebook(codebook, sets.descriptors.astype(dtype))
    expected = loop_adaptation(codebook.centers, sets.descriptors.astype(dtype))
    assert adapted.centers.dtype == dtype
    np.testing.assert_allclose(adapted.centers, expected, rtol=1e-5, atol=1e-6)


def test_empty_centres_stay_and_are_recorded():
    codebook = vlad.Codebook(
        np.array([[0, 0], [100, 100], [10, 0], [-50, 7]], np.float32),
        {"seed": 3, "descriptor": {"extractor": "test"}},
    )
    descriptors = np.array([[1, 1], [-1, 3], [11, 1]], np.float32)
    adapted = vlad.adapt_codebook(codebook, descriptors)
    np.testing.assert_array_equal(
        adapted.centers, [[0, 2], [100, 100], [11, 1], [-50, 7]]
    )
    assert adapted.metadata == {
        "seed": 3,
        "descriptor": {"extractor": "test"},
        "adaptation": {
            "from": codebook.fingerprint,
            "n_descriptors": 3,
            "n_empty_centers": 2,
            "empty_centers": [1, 3],
        },
    }
    assert adapted.fingerprint != codebook.fingerprint


def test_one_descriptor_moves_its_centre_onto_it():
    codebook = vlad.Codebook(np.array([[0.0, 0.0], [5.0, 5.0]]))
    adapted = vlad.adapt_codebook(codebook, [np.array([[4.0, 7.0]])])
    np.testing.assert_array_equal(adapted.centers, [[0.0, 0.0], [4.0, 7.0]])
    assert adapted.metadata["adaptation"]["empty_centers"] == [0]


def test_every_form_of_descriptors_gives_the_same_centres(tmp_path, monkeypatch):
    sets = vlad.datasets.make_descriptor_sets(10, 30, 8, seed=2)
    codebook = vlad.fit_codebook(sets, 5, seed=0)
    expected = vlad.adapt_codebook(codebook, sets.descriptors).centers
    np.save(tmp_path / "descriptors.npy", sets.descriptors)
    mapped = np.load(tmp_path / "descriptors.npy", mmap_mode="r")
    # Blocks of 3 rows: the memory-mapped file is read a few rows at a time.
    monkeypatch.setattr(adaptation, "BLOCK_BYTES", 3 * 8 * 8)
    forms = [
        sets,
        [sets[t] for t in range(len(sets))],
        (sets[t] for t in range(len(sets))),
        mapped,
        sets.descriptors.reshape(10, 30, 8),
    ]
    for form in forms:
        adapted = vlad.adapt_codebook(codebook, form)
        np.testing.assert_allclose(adapted.centers, expected, rtol=1e-6)
        assert adapted.metadata["adaptation"]["n_descriptors"] == 300


def test_adaptation_does_not_depend_on_threads():
    sets = vlad.datasets.make_descriptor_sets(20, 100, 16, seed=4)
    codebook = vlad.fit_codebook(sets, 8, seed=0)
    one = vlad.adapt_codebook(codebook, sets, n_jobs=1)
    two = vlad.adapt_codebook(codebook, sets, n_jobs=2)
    np.testing.assert_array_equal(one.centers, two.centers)


def test_adapter_adds_blocks_as_the_function_does():
    sets = vlad.datasets.make_descriptor_sets(6, 20, 4, seed=5)
    codebook = vlad.fit_codebook(sets, 3, seed=0)
    adapter = vlad.CodebookAdapter(codebook)
    for t in range(len(sets)):
        adapter.add(sets[t])
    assert adapter.n_descriptors == 120
    assert adapter.counts.sum() == 120
    np.testing.assert_allclose(
        adapter.adapted().centers,
        vlad.adapt_codebook(codebook, sets).centers,
        rtol=1e-6,
    )


def test_each_vocabulary_is_adapted_on_its_own():
    sets = vlad.datasets.make_descriptor_sets(10, 30, 8, seed=6)
    other = vlad.datasets.make_descriptor_sets(10, 30, 8, seed=7)
    first = vlad.fit_codebook(sets, 3, seed=0)
    second = vlad.fit_codebook(sets, 5, seed=1)
    stacked = vlad.stack_vocabularies([first, second])
    adapted = vlad.adapt_codebook(stacked, other)
    assert adapted.vocabulary_sizes == (3, 5)
    expected = np.concatenate(
        [
            loop_adaptation(first.centers, other.descriptors),
            loop_adaptation(second.centers, other.descriptors),
        ]
    )
    np.testing.assert_allclose(adapted.centers, expected, rtol=1e-5, atol=1e-6)
    assert adapted.metadata["adaptation"]["n_descriptors"] == 300


@pytest.mark.parametrize(
    ("descriptors", "error", "message"),
    [
        (np.zeros((0, 2), np.float32), ValueError, "at least one descriptor"),
        ([], ValueError, "at least one descriptor"),
        (np.zeros((4, 3), np.float32), ValueError, "3"),
        (np.array([[0.0, np.nan]]), ValueError, "NaN"),
        ([np.zeros(2)], ValueError, "2-D"),
        ("descriptors.npy", TypeError, "descriptors must be"),
        (5, TypeError, "descriptors must be"),
    ],
)
def test_bad_descriptors_are_refused_in_one_line(descriptors, error, message):
    codebook = vlad.Codebook(np.eye(2))
    with pytest.raises(error, match=message) as raised:
        vlad.adapt_codebook(codebook, descriptors)
    assert "\n" not in str(raised.value)


def test_a_codebook_must_be_a_codebook():
    with pytest.raises(TypeError, match="codebook must be a Codebook; got ndarray"):
        vlad.adapt_codebook(np.eye(2), np.eye(2))


def test_adapting_to_images_reads_them_once_as_the_function_would(tmp_path):
    sets = vlad.datasets.make_descriptor_sets(8, 50, 128, seed=8)
    codebook = vlad.fit_codebook(sets, 4, seed=0)
    sets.save(tmp_path / "descriptors.npz")
    adapted, report = vlad.adapt_codebook_to_images(
        tmp_path / "descriptors.npz", codebook
    )
    expected = vlad.adapt_codebook(codebook, sets)
    np.testing.assert_array_equal(adapted.centers, expected.centers)
    assert report.names == sets.names
