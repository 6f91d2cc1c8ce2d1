"""encode end to end against hand computations and the stages it is made of."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from conftest import DTYPES, aggregator_param
from hypothesis import given
from hypothesis import strategies as st

import vlad

ALL = [aggregator_param(name) for name in vlad.AGGREGATORS]


def test_one_descriptor_per_centre_without_normalisation():
    x = np.array([[1.0, 2.0, 3.0]])
    centers = np.array([[0.0, 1.0, 2.0]])
    assert vlad.encode([x], centers, intra=False, l2=False).tolist() == [
        [1.0, 1.0, 1.0]
    ]


def test_hand_computed_two_centres_with_signed_square_root():
    descriptors = np.array([[1.0, 0.0], [3.0, 0.0], [10.0, 13.0]])
    centers = np.array([[0.0, 0.0], [10.0, 9.0]])
    # centre 0: (1, 0) + (3, 0) = (4, 0); centre 1: (0, 4). sqrt -> (2, 0, 0, 2).
    vectors = vlad.encode([descriptors], centers, power=0.5, intra=False, l2=True)
    np.testing.assert_allclose(vectors, [[2.0, 0.0, 0.0, 2.0]] / np.sqrt(8.0))


@pytest.mark.parametrize("aggregator", ALL)
@pytest.mark.parametrize(
    ("power", "intra", "l2", "mass"),
    list(itertools.product([1.0, 0.5], [False, True], [False, True], [False, True])),
)
def test_equals_its_stages(aggregator, power, intra, l2, mass):
    sets = vlad.datasets.make_descriptor_sets(6, 40, 8, ragged=True, seed=2)
    centers = vlad.fit_codebook(sets, 5, seed=0).centers
    labels = vlad.assign(sets.descriptors, centers)
    residuals = vlad.aggregate(sets.descriptors, labels, sets.offsets, centers, "loop")
    images = np.repeat(np.arange(len(sets)), sets.lengths)
    counts = np.bincount(images * 5 + labels, minlength=len(sets) * 5).reshape(-1, 5)
    expected = vlad.normalize(
        residuals, power=power, intra=intra, l2=l2, counts=counts if mass else None
    )
    result = vlad.encode(
        sets, centers, aggregator=aggregator, power=power, intra=intra, l2=l2, mass=mass
    )
    # float32 sums: absolute slack relative to the vector's scale.
    atol = 1e-6 * np.abs(expected).max()
    np.testing.assert_allclose(result, expected, rtol=1e-5, atol=atol)


def essay_looping(descriptor_sets, centers):
    """The essay's ``looping`` (prediction by brute force), float64."""
    vectors = []
    for local in descriptor_sets:
        local = np.asarray(local, np.float64)
        labels = np.argmin(((local[:, None] - centers[None]) ** 2).sum(-1), axis=1)
        blocks = np.zeros(centers.shape)
        for k in range(len(centers)):
            blocks[k] = np.sum(local[labels == k] - centers[k], axis=0)
        vector = blocks.ravel()
        vector = np.sign(vector) * np.sqrt(np.abs(vector))
        vectors.append(vector / np.linalg.norm(vector))
    return np.array(vectors)


@pytest.mark.parametrize("dtype", DTYPES)
@given(seed=st.integers(0, 2**32 - 1), n_clusters=st.integers(1, 6))
def test_matches_the_essays_reference_implementation(dtype, seed, n_clusters):
    rng = np.random.default_rng(seed)
    local = rng.normal(size=(4, 30, 5))
    centers = rng.normal(size=(n_clusters, 5))
    local, centers = local.astype(dtype), centers.astype(dtype)
    result = vlad.encode(local, centers, power=0.5, intra=False)
    assert result.dtype == dtype
    tolerance = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(
        result, essay_looping(local, centers), rtol=tolerance, atol=tolerance
    )


def test_accepts_every_input_form():
    rng = np.random.default_rng(0)
    local = rng.normal(size=(3, 10, 4)).astype(np.float32)
    codebook = vlad.Codebook(rng.normal(size=(2, 4)))
    expected = vlad.encode(vlad.DescriptorSets.from_list(list(local)), codebook)
    for sets in (list(local), tuple(local), local):
        for centers in (codebook, codebook.centers, codebook.centers.tolist()):
            np.testing.assert_array_equal(vlad.encode(sets, centers), expected)


@pytest.mark.parametrize("dtype", DTYPES)
def test_dtype_follows_the_descriptors(dtype):
    centers = np.ones((2, 3), dtype=np.float64 if dtype == np.float32 else np.float32)
    result = vlad.encode([np.ones((4, 3), dtype)], centers)
    assert result.dtype == dtype


def test_image_without_descriptors_is_a_zero_row():
    sets = [np.ones((3, 2)), np.empty((0, 2)), np.zeros((1, 2))]
    vectors = vlad.encode(sets, [[0.0, 0.0], [1.0, 2.0]], power=0.5, mass=True)
    assert np.all(np.isfinite(vectors))
    assert np.all(vectors[1] == 0)
    assert np.all(vectors[2] == 0)  # its one descriptor sits on a centre


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"codebook": np.ones((2, 3))}, ValueError, "descriptors have 2 features but"),
        (
            {"descriptor_sets": [np.array([[0.0, np.nan]])]},
            ValueError,
            "NaN or infinite values",
        ),
        ({"aggregator": "best"}, ValueError, "Unknown aggregator 'best'"),
        ({"power": 0}, ValueError, r"power must be a number in \(0, 1\]"),
        ({"descriptor_sets": np.ones((2, 2))}, ValueError, r"shape \(n_images,"),
        ({"descriptor_sets": "images/"}, TypeError, "got str"),
        ({"codebook": [[np.inf, 0.0]]}, ValueError, "centers contains 1 NaN"),
    ],
)
def test_bad_input_gets_a_clear_error(kwargs, error, message):
    arguments = {"descriptor_sets": [np.ones((3, 2))], "codebook": np.zeros((2, 2))}
    arguments.update(kwargs)
    with pytest.raises(error, match=message):
        vlad.encode(**arguments)


@pytest.mark.parametrize("aggregator", ALL)
def test_no_images(aggregator):
    vectors = vlad.encode(
        np.zeros((0, 5, 4), np.float32), np.ones((2, 4)), aggregator=aggregator
    )
    assert vectors.shape == (0, 8) and vectors.dtype == np.float32


@pytest.mark.parametrize("aggregator", ["auto", "numba", "sparse"])
def test_n_jobs_does_not_change_the_vectors(aggregator):
    pytest.importorskip("numba")
    sets = vlad.datasets.make_descriptor_sets(300, 200, 64, ragged=True, seed=6)
    centers = sets.descriptors[::1000][:64]  # 2^27+ multiply-adds: threads run
    vectors = [
        vlad.encode(sets, centers, aggregator=aggregator, n_jobs=n_jobs)
        for n_jobs in (1, 2, -1, None)
    ]
    for other in vectors[1:]:
        np.testing.assert_array_equal(other, vectors[0])


@pytest.mark.parametrize(("n_jobs", "error"), [(0, ValueError), (1.5, TypeError)])
def test_bad_n_jobs_is_named(n_jobs, error):
    with pytest.raises(error, match=r"n_jobs must be None, -1 \(every core\)"):
        vlad.encode([np.ones((2, 2))], np.ones((1, 2)), n_jobs=n_jobs)
