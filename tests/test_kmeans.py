"""The k-means back-ends of fit_codebook: faiss, scikit-learn, spherical."""

from __future__ import annotations

import re
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import vlad
from vlad._extras import install_command
from vlad.core._kmeans import spherical_lloyd, unit_rows

faiss = pytest.importorskip("faiss")

BACKENDS = ["sklearn", "faiss"]


@pytest.fixture(scope="module")
def blobs():
    """Eight well-separated clusters of 200 descriptors in 16 dimensions, and
    each cluster's mean (the k-means optimum)."""
    rng = np.random.default_rng(1)
    labels = rng.integers(0, 8, 1600)
    descriptors = rng.uniform(-50, 50, size=(8, 16))[labels]
    descriptors = (descriptors + rng.normal(size=(1600, 16))).astype(np.float32)
    means = np.array([descriptors[labels == k].mean(axis=0) for k in range(8)])
    return descriptors, means


@pytest.fixture(scope="module")
def directions():
    """Six well-separated directions, descriptors at random lengths around them."""
    rng = np.random.default_rng(2)
    true_directions = unit_rows(rng.normal(size=(6, 12)))
    labels = rng.integers(0, 6, 1200)
    noisy = true_directions[labels] + 0.05 * rng.normal(size=(1200, 12))
    lengths = rng.uniform(0.1, 100, size=(1200, 1))
    return (noisy * lengths).astype(np.float32), true_directions


def brute_force_error(descriptors: np.ndarray, centers: np.ndarray) -> float:
    """Mean squared distance to the nearest centre, every pair in a loop."""
    total = 0.0
    for row in descriptors.astype(np.float64):
        total += min(float(np.sum((row - c) ** 2)) for c in centers)
    return total / descriptors.shape[0]


def matched_distances(found: np.ndarray, true: np.ndarray) -> np.ndarray:
    """Distance from each true centre to the nearest found one; also checks
    that every found centre is nearest to a different true centre."""
    distances = np.linalg.norm(found[:, None] - true[None], axis=-1)
    assert sorted(distances.argmin(axis=1)) == list(range(true.shape[0]))
    return distances.min(axis=0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_each_backend_recovers_well_separated_centres(blobs, backend):
    descriptors, true_centers = blobs
    codebook = vlad.fit_codebook(descriptors, 8, backend=backend, seed=3)
    assert codebook.centers.dtype == np.float32
    assert np.all(matched_distances(codebook.centers, true_centers) < 1e-3)
    assert codebook.metadata["backend"] == backend
    assert codebook.metadata["metric"] == "euclidean"


def test_sklearn_and_faiss_agree_on_well_separated_clusters(blobs):
    descriptors, _ = blobs
    sklearn = vlad.fit_codebook(descriptors, 8, backend="sklearn").centers
    faiss_centers = vlad.fit_codebook(descriptors, 8, backend="faiss").centers
    assert np.all(matched_distances(faiss_centers, sklearn) < 1e-3)
    assert brute_force_error(descriptors, faiss_centers) == pytest.approx(
        brute_force_error(descriptors, sklearn), rel=1e-5
    )


@pytest.mark.parametrize("n_jobs", [None, 1, 2])
def test_faiss_same_seed_same_codebook(n_jobs):
    descriptors = np.random.default_rng(0).normal(size=(3000, 8)).astype(np.float32)
    fit = [
        vlad.fit_codebook(descriptors, 16, backend="faiss", seed=seed, n_jobs=n_jobs)
        for seed in (5, 5, 6)
    ]
    np.testing.assert_array_equal(fit[0].centers, fit[1].centers)
    assert not np.array_equal(fit[0].centers, fit[2].centers)


def test_faiss_fits_every_sampled_descriptor():
    """fit_codebook's ``sample`` is the only subsample: the centres equal
    faiss.Kmeans' on every row, with faiss's own subsample turned off, from
    the same k-means++ seeds (1,024 rows looked at)."""
    from sklearn.cluster import kmeans_plusplus

    rng = np.random.default_rng(4)
    descriptors = rng.normal(size=(2000, 4)).astype(np.float32)
    codebook = vlad.fit_codebook(
        descriptors, 2, backend="faiss", seed=9, sample=None, max_iter=7
    )
    assert codebook.metadata["n_training_descriptors"] == 2000
    assert codebook.metadata["max_iter"] == 7
    state = np.random.RandomState(9)
    candidates = descriptors[np.sort(state.choice(2000, 1024, replace=False))]
    seeds, _ = kmeans_plusplus(candidates, 2, random_state=state)
    reference = faiss.Kmeans(4, 2, niter=7, seed=9, max_points_per_centroid=10**6)
    reference.train(descriptors, init_centroids=seeds)
    np.testing.assert_allclose(codebook.centers, reference.centroids, rtol=1e-6)
    # faiss's defaults would have fitted 2 x 256 rows: other centres.
    subsampled = faiss.Kmeans(4, 2, niter=7, seed=9)
    subsampled.train(descriptors, init_centroids=seeds)
    assert not np.allclose(codebook.centers, subsampled.centroids, rtol=1e-6)


def test_faiss_sample_cap_applies(blobs):
    descriptors, _ = blobs
    codebook = vlad.fit_codebook(descriptors, 8, backend="faiss", sample=500)
    assert codebook.metadata["n_training_descriptors"] == 500


@pytest.mark.parametrize("n_jobs", [1, 3])
def test_faiss_threads_are_restored(blobs, n_jobs):
    descriptors, _ = blobs
    before = faiss.omp_get_max_threads()
    vlad.fit_codebook(descriptors, 8, backend="faiss", n_jobs=n_jobs)
    assert faiss.omp_get_max_threads() == before


def test_faiss_quality_matches_lloyd_on_mixtures():
    """On a mixture whose clusters overlap, faiss's held-out error (brute
    force) is within 2% of scikit-learn's Lloyd."""
    rng = np.random.default_rng(5)
    means = rng.normal(size=(20, 8)) * 2
    rows = means[rng.integers(0, 20, 6000)] + rng.normal(size=(6000, 8))
    training, heldout = rows[:4000].astype(np.float32), rows[4000:]
    errors = {
        backend: brute_force_error(
            heldout,
            vlad.fit_codebook(training, 16, backend=backend, algorithm="lloyd").centers
            if backend == "sklearn"
            else vlad.fit_codebook(training, 16, backend=backend).centers,
        )
        for backend in BACKENDS
    }
    assert errors["faiss"] < 1.02 * errors["sklearn"]


@pytest.mark.parametrize(
    ("dtype", "scale"), [(np.float32, 2.0**100), (np.float64, 2.0**900)]
)
def test_faiss_fits_extreme_magnitudes_scaled(blobs, dtype, scale):
    descriptors, true_centers = blobs
    codebook = vlad.fit_codebook(
        descriptors.astype(dtype) * scale, 8, backend="faiss", seed=3
    )
    assert codebook.centers.dtype == dtype
    assert np.all(matched_distances(codebook.centers / scale, true_centers) < 1e-3)


def test_missing_faiss_names_the_extra(blobs, monkeypatch):
    monkeypatch.setitem(sys.modules, "faiss", None)
    descriptors, _ = blobs
    with pytest.raises(ImportError, match=re.escape(install_command("faiss"))):
        vlad.fit_codebook(descriptors, 8, backend="faiss")
    # "auto" falls back to scikit-learn.
    monkeypatch.setattr(vlad.core._codebook, "FULL_KMEANS_MAX_SAMPLES", 1000)
    assert vlad.fit_codebook(descriptors, 8).metadata["backend"] == "sklearn"


def test_auto_backend_is_faiss_unless_an_algorithm_is_asked_for(blobs, monkeypatch):
    descriptors, _ = blobs
    # Up to FULL_KMEANS_MAX_SAMPLES sampled descriptors: scikit-learn's Lloyd.
    codebook = vlad.fit_codebook(descriptors, 8)
    assert codebook.metadata["backend"] == "sklearn"
    assert codebook.metadata["algorithm"] == "lloyd"
    monkeypatch.setattr(vlad.core._codebook, "FULL_KMEANS_MAX_SAMPLES", 1000)
    assert vlad.fit_codebook(descriptors, 8).metadata["backend"] == "faiss"
    assert vlad.fit_codebook(descriptors, 8, sample=900).metadata["backend"] == (
        "sklearn"
    )
    for algorithm in ("lloyd", "minibatch"):
        codebook = vlad.fit_codebook(descriptors, 8, algorithm=algorithm)
        assert codebook.metadata["backend"] == "sklearn"
        assert codebook.metadata["algorithm"] == algorithm


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"backend": "cuml"}, ValueError, "backend must be one of.*'cuml'"),
        ({"backend": "faiss", "algorithm": "minibatch"}, ValueError, "not a faiss"),
        ({"spherical": True, "algorithm": "minibatch"}, ValueError, "spherical"),
        ({"spherical": "yes"}, TypeError, "spherical must be True or False"),
        ({"n_jobs": 0}, ValueError, "n_jobs"),
        ({"max_iter": 0}, ValueError, "max_iter must be None or an integer >= 1"),
    ],
)
def test_bad_kmeans_settings_get_a_clear_error(blobs, kwargs, error, message):
    descriptors, _ = blobs
    with pytest.raises(error, match=message):
        vlad.fit_codebook(descriptors, 8, **kwargs)


@pytest.mark.parametrize("backend", BACKENDS)
def test_spherical_recovers_directions(directions, backend):
    descriptors, true_directions = directions
    codebook = vlad.fit_codebook(descriptors, 6, backend=backend, spherical=True)
    np.testing.assert_allclose(np.linalg.norm(codebook.centers, axis=1), 1, atol=1e-5)
    assert np.all(matched_distances(codebook.centers, true_directions) < 0.02)
    assert codebook.metric == "cosine"
    assert codebook.metadata["algorithm"] == "spherical-lloyd"


@pytest.mark.parametrize("backend", BACKENDS)
def test_spherical_centres_are_fixed_points(backend):
    """Each spherical centre is the unit mean of the unit descriptors most
    cosine-similar to it (a plain loop over descriptors)."""
    rng = np.random.default_rng(6)
    descriptors = rng.normal(size=(800, 5)) + [3, 0, 0, 0, 0]
    codebook = vlad.fit_codebook(
        descriptors, 4, backend=backend, spherical=True, max_iter=300
    )
    centers = codebook.centers
    sums = np.zeros_like(centers)
    for row in descriptors:
        unit = row / np.sqrt(np.sum(row**2))
        sums[np.argmax([np.dot(unit, c) for c in centers])] += unit
    expected = sums / np.linalg.norm(sums, axis=1, keepdims=True)
    np.testing.assert_allclose(centers, expected, atol=1e-4 if backend else 0)


def test_spherical_leaves_out_zero_descriptors(directions):
    descriptors, _ = directions
    padded = np.concatenate([descriptors, np.zeros((50, 12), np.float32)])
    codebook = vlad.fit_codebook(padded, 6, spherical=True, backend="sklearn")
    assert codebook.metadata["n_training_descriptors"] == descriptors.shape[0]
    same = vlad.fit_codebook(descriptors, 6, spherical=True, backend="sklearn")
    assert np.all(matched_distances(codebook.centers, same.centers) < 1e-3)
    with pytest.raises(ValueError, match="3 spherical centres on 2 non-zero"):
        vlad.fit_codebook(
            np.eye(3, 4)[[0, 1, 2, 2]] * [[1], [1], [0], [0]], 3, spherical=True
        )


@settings(max_examples=30, deadline=None)
@given(
    descriptors=arrays(
        np.float64,
        st.tuples(st.integers(1, 30), st.integers(1, 4)),
        elements=st.floats(-1e300, 1e300, allow_subnormal=True),
    )
)
def test_unit_rows_has_unit_or_zero_rows(descriptors):
    unit = unit_rows(descriptors)
    norms = np.linalg.norm(unit, axis=1)
    zero = ~np.any(descriptors != 0, axis=1)
    np.testing.assert_allclose(norms[~zero], 1, rtol=1e-12)
    assert np.all(unit[zero] == 0)
    # Same direction: a positive multiple of each row.
    for row, scaled in zip(descriptors[~zero], unit[~zero], strict=True):
        peak = np.argmax(np.abs(row))
        np.testing.assert_allclose(
            row / row[peak], scaled / scaled[peak], rtol=1e-9, atol=1e-12
        )


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**16), n_clusters=st.integers(1, 6))
def test_spherical_lloyd_centres_are_unit_with_any_data(seed, n_clusters):
    rng = np.random.default_rng(seed)
    training = unit_rows(rng.normal(size=(n_clusters + 10, 3)))
    centers = spherical_lloyd(training, n_clusters, 50, seed)
    np.testing.assert_allclose(np.linalg.norm(centers, axis=1), 1, rtol=1e-9)


def test_faiss_large_vocabulary_is_seeded_by_faiss_and_reproducible():
    """Above KMEANS_PLUSPLUS_MAX_CLUSTERS centres, faiss seeds from random rows:
    the same seed gives the same words, and every word is a distinct centre
    within the data's range."""
    pytest.importorskip("faiss")
    from vlad.core._kmeans import KMEANS_PLUSPLUS_MAX_CLUSTERS

    n_clusters = KMEANS_PLUSPLUS_MAX_CLUSTERS + 1
    data = np.random.default_rng(0).random((3 * n_clusters, 8), dtype=np.float32)
    first = vlad.fit_codebook(data, n_clusters, backend="faiss", seed=3, max_iter=2)
    again = vlad.fit_codebook(data, n_clusters, backend="faiss", seed=3, max_iter=2)
    np.testing.assert_array_equal(first.centers, again.centers)
    assert len(np.unique(first.centers, axis=0)) == n_clusters
    assert first.centers.min() >= 0 and first.centers.max() <= 1


@settings(max_examples=50, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 200), min_size=1, max_size=12).filter(any),
    fraction=st.floats(0.01, 1.0),
)
def test_two_level_shares_are_proportional_and_within_each_cluster(sizes, fraction):
    from vlad.core._kmeans import _shares

    sizes = np.array(sizes)
    total = max(int(np.count_nonzero(sizes)), int(fraction * sizes.sum()))
    shares = _shares(sizes, total)
    assert shares.sum() == total
    assert np.all(shares[sizes == 0] == 0)
    assert np.all((shares >= 1) & (shares <= sizes) | (sizes == 0))
    # Off the exact proportion by less than one, unless held by a bound, or
    # short of what the clusters raised to one centre took from the others.
    exact = sizes * total / sizes.sum()
    bounded = (shares == np.minimum(sizes, 1)) | (shares == sizes)
    raised = np.clip(1 - exact[sizes > 0], 0, None).sum()
    assert np.all((np.abs(shares - exact) < 1 + raised) | bounded)


def squared_error(rows: np.ndarray, centers: np.ndarray) -> float:
    """Mean squared distance to the nearest centre (all pairs, float64)."""
    rows, centers = rows.astype(np.float64), centers.astype(np.float64)
    distances = (
        (rows**2).sum(axis=1)[:, None] - 2 * rows @ centers.T + (centers**2).sum(axis=1)
    )
    return float(distances.min(axis=1).mean())


def test_two_level_kmeans_fits_nearly_as_well_as_lloyd():
    """256 words of uniform descriptors: the two levels' squared error within
    10% of faiss's Lloyd on all the words at once (4% measured), every word
    distinct; the same seed, the same words."""
    rows = np.random.default_rng(4).random((10_000, 8), dtype=np.float32)
    flat = vlad.fit_codebook(rows, 256, backend="faiss", sample=None, seed=0)
    two = vlad.fit_codebook(rows, 256, algorithm="two-level", sample=None, seed=0)
    assert two.metadata["algorithm"] == "two-level"
    assert two.metadata["backend"] == "faiss"
    assert len(np.unique(two.centers, axis=0)) == 256
    assert squared_error(rows, two.centers) <= 1.1 * squared_error(rows, flat.centers)
    again = vlad.fit_codebook(rows, 256, algorithm="two-level", sample=None, seed=0)
    np.testing.assert_array_equal(again.centers, two.centers)


def test_two_level_kmeans_takes_its_groups_from_the_coarse_level():
    """Eight far-apart groups: the coarse level finds them, and each gets
    its share of the words, in proportion to its descriptors."""
    rng = np.random.default_rng(5)
    sizes = np.array([400, 800, 1200, 1600, 400, 800, 1200, 1600])
    groups = rng.uniform(-1000, 1000, size=(8, 4))
    labels = np.repeat(np.arange(8), sizes)
    rows = (groups[labels] + rng.normal(size=(labels.size, 4))).astype(np.float32)
    codebook = vlad.fit_codebook(rows, 64, algorithm="two-level", sample=None)
    nearest_group = np.linalg.norm(
        codebook.centers[:, None] - groups[None], axis=-1
    ).argmin(axis=1)
    # 8 coarse centres (the square root of 64); shares of 3.2, 6.4, 9.6 and
    # 12.8 words, rounded to the largest remainders.
    np.testing.assert_array_equal(
        np.bincount(nearest_group, minlength=8), [3, 6, 10, 13, 3, 6, 10, 13]
    )


def test_two_level_kmeans_is_faiss_s():
    descriptors = np.random.default_rng(5).normal(size=(200, 4)).astype(np.float32)
    with pytest.raises(ValueError, match="'two-level' is faiss's k-means"):
        vlad.fit_codebook(descriptors, 8, algorithm="two-level", backend="sklearn")
