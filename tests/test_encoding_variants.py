"""Residual normalisation and multiple/soft assignment, in every aggregator and
in encode, against a plain per-descriptor loop written here."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import DTYPES, aggregator_param, ragged_problems
from hypothesis import given
from hypothesis import strategies as st

import vlad
from vlad.core.aggregators import WEIGHTED_AGGREGATORS

# torch's tests live in test_torch_variants.py; JAX compiles each new shape,
# so it meets fixed problems rather than hypothesis's many.
ALL = [aggregator_param(name) for name in vlad.AGGREGATORS if name != "torch"]
COMPILED_ONCE = [param for param in ALL if param.values[0] != "jax"]
WEIGHTED = [aggregator_param(name) for name in sorted(WEIGHTED_AGGREGATORS)]
HARD_ONLY = sorted(set(vlad.AGGREGATORS) - WEIGHTED_AGGREGATORS)


def reference_weights(distances, assignment, kernel_width):
    """Weights of one descriptor's sorted squared distances, written out."""
    n_nearest = len(distances)
    if assignment == "hard":
        return [1.0]
    if assignment == "multiple":
        return [1.0 / n_nearest] * n_nearest
    smallest = min(distances)
    if smallest == 0:
        weights = [1.0 if d == 0 else 0.0 for d in distances]
    else:
        weights = [
            np.exp(-(d - smallest) / (2 * kernel_width * smallest)) for d in distances
        ]
    return [w / sum(weights) for w in weights]


def reference_vlad(
    images,
    centers,
    *,
    residual_norm=False,
    assignment="hard",
    n_nearest=1,
    kernel_width=1.0,
    power=1.0,
    intra=False,
    l2=False,
    mass=False,
):
    """VLAD vectors one descriptor at a time, in float64, by brute force."""
    centers = np.asarray(centers, dtype=np.float64)
    n_clusters, n_features = centers.shape
    vectors = []
    for rows in images:
        sums = np.zeros((n_clusters, n_features))
        masses = np.zeros(n_clusters)
        for x in np.asarray(rows, dtype=np.float64):
            distances = [float(np.sum((x - c) ** 2)) for c in centers]
            nearest = sorted(range(n_clusters), key=lambda k: (distances[k], k))
            nearest = nearest[:n_nearest]
            weights = reference_weights(
                [distances[k] for k in nearest], assignment, kernel_width
            )
            for k, weight in zip(nearest, weights, strict=True):
                residual = x - centers[k]
                norm = np.sqrt(np.sum(residual**2))
                if residual_norm and norm > 0:
                    residual = residual / norm
                sums[k] += weight * residual
                masses[k] += weight
        if mass:
            sums /= np.where(masses > 0, masses, 1.0)[:, None]
        sums = np.sign(sums) * np.abs(sums) ** power
        if intra:
            norms = np.sqrt((sums**2).sum(axis=1, keepdims=True))
            sums /= np.where(norms > 0, norms, 1.0)
        vector = sums.ravel()
        if l2 and np.any(vector):
            vector /= np.sqrt(np.sum(vector**2))
        vectors.append(vector)
    return np.array(vectors).reshape(len(images), n_clusters * n_features)


def split(descriptors, offsets):
    return [descriptors[a:b] for a, b in zip(offsets[:-1], offsets[1:], strict=True)]


def loop_residuals(descriptors, labels, offsets, centers, weights=None, norm=False):
    """Residual sums from the brute-force reference (normalisation off)."""
    if weights is None:
        labels, weights = np.asarray(labels)[:, None], np.ones((len(labels), 1))
    sums = np.zeros((len(offsets) - 1, *centers.shape))
    for t, (a, b) in enumerate(zip(offsets[:-1], offsets[1:], strict=True)):
        for row in range(a, b):
            for k, weight in zip(labels[row], weights[row], strict=True):
                residual = descriptors[row].astype(np.float64) - centers[k]
                size = np.sqrt(np.sum(residual**2))
                if norm and size > 0:
                    residual /= size
                sums[t, k] += weight * residual
    return sums


def close(result, expected, dtype):
    rtol = 2e-4 if dtype == np.float32 else 1e-9
    scale = max(1.0, float(np.abs(expected).max(initial=0.0)))
    np.testing.assert_allclose(result, expected, rtol=rtol, atol=rtol * scale)


@pytest.mark.parametrize("aggregator", COMPILED_ONCE)
@given(problem=ragged_problems())
def test_residual_norm_in_every_aggregator_matches_the_loop(aggregator, problem):
    descriptors, labels, offsets, centers = problem
    result = vlad.aggregate(
        descriptors, labels, offsets, centers, aggregator, residual_norm=True
    )
    oracle = vlad.aggregate(
        descriptors, labels, offsets, centers, "loop", residual_norm=True
    )
    expected = loop_residuals(descriptors, labels, offsets, centers, norm=True)
    assert result.dtype == descriptors.dtype
    close(result, expected, descriptors.dtype)
    close(oracle, expected, descriptors.dtype)
    # Each unit residual adds at most 1 to a block's norm.
    counts = np.diff(offsets).max(initial=0)
    assert np.linalg.norm(result.astype(float), axis=2).max(initial=0) <= counts + 1e-3


@pytest.mark.parametrize("aggregator", WEIGHTED)
@pytest.mark.parametrize("residual_norm", [False, True])
@given(problem=ragged_problems(), n_nearest=st.integers(1, 5), data=st.data())
def test_weighted_aggregators_match_the_loop(
    aggregator, residual_norm, problem, n_nearest, data
):
    descriptors, _, offsets, centers = problem
    n_nearest = min(n_nearest, centers.shape[0])
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    labels = np.array(
        [rng.permutation(centers.shape[0])[:n_nearest] for _ in descriptors],
        dtype=np.intp,
    ).reshape(-1, n_nearest)
    weights = rng.dirichlet(np.ones(n_nearest), size=len(descriptors))
    result = vlad.aggregate(
        descriptors,
        labels,
        offsets,
        centers,
        aggregator,
        residual_norm=residual_norm,
        weights=weights,
    )
    expected = loop_residuals(
        descriptors, labels, offsets, centers, weights, norm=residual_norm
    )
    close(result, expected, descriptors.dtype)


@pytest.mark.parametrize("aggregator", ALL)
def test_a_zero_residual_adds_zero(aggregator):
    centers = np.array([[1.0, 2.0], [5.0, 5.0]], dtype=np.float32)
    descriptors = np.array([[1.0, 2.0], [1.0, 5.0]], dtype=np.float32)
    result = vlad.aggregate(
        descriptors, [0, 0], [0, 2], centers, aggregator, residual_norm=True
    )
    np.testing.assert_allclose(result, [[[0.0, 1.0], [0.0, 0.0]]], atol=1e-7)


@pytest.mark.parametrize("aggregator", ALL)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "variant",
    [
        {"residual_norm": True, "power": 0.2},
        {"assignment": "multiple", "n_nearest": 2},
        {"assignment": "multiple", "n_nearest": 4, "mass": True},
        {"assignment": "soft", "n_nearest": 3},
        {"assignment": "soft", "n_nearest": 4, "kernel_width": 0.3, "mass": True},
        {"assignment": "soft", "n_nearest": 2, "residual_norm": True},
    ],
)
def test_encode_matches_the_reference(aggregator, dtype, variant):
    sets = vlad.datasets.make_descriptor_sets(7, 30, 6, ragged=True, seed=3)
    descriptors = sets.descriptors.astype(dtype)
    centers = vlad.fit_codebook(sets, 6, seed=0).centers.astype(dtype)
    images = split(descriptors, sets.offsets)
    if variant.get("assignment", "hard") != "hard" and aggregator in HARD_ONLY:
        with pytest.raises(ValueError, match=f"aggregator {aggregator!r}"):
            vlad.encode(images, centers, aggregator=aggregator, **variant)
        return
    for normalisation in ({"intra": False, "l2": False}, {"intra": True, "l2": True}):
        settings = {**variant, **normalisation}
        result = vlad.encode(images, centers, aggregator=aggregator, **settings)
        expected = reference_vlad(images, centers, **settings)
        assert result.dtype == dtype
        close(result, expected, dtype)


@given(
    problem=ragged_problems(),
    assignment=st.sampled_from(["multiple", "soft"]),
    n_nearest=st.integers(1, 5),
    residual_norm=st.booleans(),
    kernel_width=st.sampled_from([0.1, 1.0, 10.0]),
)
def test_encode_edge_cases(problem, assignment, n_nearest, residual_norm, kernel_width):
    descriptors, _, offsets, centers = problem
    n_nearest = min(n_nearest, centers.shape[0])
    images = split(descriptors, offsets)
    settings = {
        "assignment": assignment,
        "n_nearest": n_nearest,
        "residual_norm": residual_norm,
        "kernel_width": kernel_width,
        "intra": False,
        "l2": False,
    }
    expected = reference_vlad(images, centers, **settings)
    for aggregator in ("auto", "loop", "sparse"):
        result = vlad.encode(images, centers, aggregator=aggregator, **settings)
        close(result, expected, descriptors.dtype)


def test_soft_weights_of_a_descriptor_on_a_centre_go_to_that_centre():
    centers = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 3.0]])
    vectors = vlad.encode(
        [np.array([[1.0, 0.0], [0.5, 0.0]])],
        centers,
        assignment="soft",
        n_nearest=2,
        intra=False,
        l2=False,
    )
    # The first descriptor sits on centre 1 and adds nothing; the second is
    # halfway between centres 0 and 1: equal weights.
    np.testing.assert_allclose(vectors, [[0.25, 0.0, -0.25, 0.0, 0.0, 0.0]])


def test_yael_multiple_assignment_up_to_scale():
    # Yael's 2-nearest VLAD adds each residual with weight 1; ours with 1/2.
    sets = vlad.datasets.make_descriptor_sets(3, 20, 4, seed=1)
    centers = vlad.fit_codebook(sets, 5, seed=0).centers
    images = split(sets.descriptors, sets.offsets)
    ours = vlad.encode(images, centers, assignment="multiple", intra=False, l2=False)
    yael = []
    for rows in images:
        sums = np.zeros(centers.shape)
        for x in rows.astype(np.float64):
            for k in np.argsort(((x - centers) ** 2).sum(axis=1))[:2]:
                sums[k] += x - centers[k]
        yael.append(sums.ravel())
    np.testing.assert_allclose(ours, np.array(yael) / 2, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", DTYPES)
def test_residual_norm_does_not_depend_on_the_scale(dtype):
    sets = vlad.datasets.make_descriptor_sets(4, 25, 5, seed=4)
    centers = vlad.fit_codebook(sets, 4, seed=0).centers
    images = split(sets.descriptors.astype(dtype), sets.offsets)
    scale = 1e30 if dtype == np.float32 else 1e300
    settings = {"residual_norm": True, "intra": False, "l2": False}
    plain = vlad.encode(images, centers.astype(dtype), **settings)
    extreme = vlad.encode(
        [rows * dtype(scale) for rows in images],
        centers.astype(dtype) * dtype(scale),
        **settings,
    )
    assert np.isfinite(extreme).all()
    close(extreme, plain, dtype)


def test_assignment_settings_are_checked():
    centers = np.eye(3)
    with pytest.raises(ValueError, match="n_nearest must be at most"):
        vlad.encode([np.eye(3)], centers, assignment="soft", n_nearest=4)
    with pytest.raises(ValueError, match="n_nearest must be 1 with"):
        vlad.EncodingOptions(n_nearest=2)
    with pytest.raises(ValueError, match="assignment must be one of"):
        vlad.EncodingOptions(assignment="fuzzy")
    with pytest.raises(ValueError, match="kernel_width must be a positive"):
        vlad.EncodingOptions(assignment="soft", kernel_width=0.0)
    with pytest.raises(TypeError, match="residual_norm must be True or False"):
        vlad.EncodingOptions(residual_norm="yes")
    for name in HARD_ONLY:
        with pytest.raises(ValueError, match=f"aggregator {name!r} supports hard"):
            vlad.EncodingOptions(aggregator=name, assignment="multiple")


def test_aggregator_functions_with_the_plain_signature():
    sets = vlad.datasets.make_descriptor_sets(3, 10, 4, seed=5)
    centers = vlad.fit_codebook(sets, 3, seed=0).centers

    def plain(descriptors, labels, offsets, centers):
        return vlad.aggregate(descriptors, labels, offsets, centers, "loop")

    def normalising(descriptors, labels, offsets, centers, *, residual_norm=False):
        return vlad.aggregate(
            descriptors, labels, offsets, centers, "sparse", residual_norm=residual_norm
        )

    np.testing.assert_allclose(
        vlad.encode(sets, centers, aggregator=plain), vlad.encode(sets, centers)
    )
    with pytest.raises(ValueError, match="does not accept the keyword residual_norm"):
        vlad.encode(sets, centers, aggregator=plain, residual_norm=True)
    with pytest.raises(ValueError, match="does not accept the keyword weights"):
        vlad.encode(sets, centers, aggregator=normalising, assignment="soft")
    np.testing.assert_allclose(
        vlad.encode(sets, centers, aggregator=normalising, residual_norm=True),
        vlad.encode(sets, centers, residual_norm=True),
        rtol=1e-5,
        atol=1e-6,
    )
