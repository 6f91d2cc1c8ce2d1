"""PCA-whitening: vlad.search._whitening against an SVD of the centred data."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import vlad.search._whitening
from vlad.search import PCAWhitening, fit_whitening


def reference_whitening(vectors, n_components, power, queries):
    """Whitened, L2-normalised ``queries`` by hand: an SVD of the centred
    non-zero vectors in float64; returns them with the variances and axes."""
    vectors = np.asarray(vectors, dtype=np.float32).astype(np.float64)
    vectors = vectors[np.any(vectors != 0, axis=1)]
    mean = vectors.mean(axis=0)
    _, singular, axes = np.linalg.svd(vectors - mean, full_matrices=False)
    variances = singular[:n_components] ** 2 / (vectors.shape[0] - 1)
    axes = axes[:n_components]
    queries = np.asarray(queries, dtype=np.float32).astype(np.float64)
    whitened = (queries - mean) @ axes.T / variances ** (power / 2)
    whitened[~np.any(queries != 0, axis=1)] = 0
    norms = np.linalg.norm(whitened, axis=1, keepdims=True)
    return np.divide(whitened, norms, where=norms > 0, out=whitened), variances, axes


def aligned(result, whitening, axes):
    """``result`` with each column's sign flipped where the whitening's axis
    points the other way from the reference's (axes are defined up to sign)."""
    signs = np.sign(np.sum(whitening.components * axes, axis=1))
    return result * signs


@st.composite
def whitening_problems(draw):
    n_vectors = draw(st.integers(3, 40))
    n_features = draw(st.integers(2, 12))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    # Distinct variances along random axes, so the axes are well defined.
    scales = np.geomspace(1.0, 0.05, n_features)
    vectors = rng.standard_normal((n_vectors, n_features)) * scales
    vectors = vectors @ np.linalg.qr(rng.standard_normal((n_features, n_features)))[0]
    vectors += draw(st.sampled_from([0.0, 0.5]))
    n_zero = draw(st.integers(0, 2))
    vectors = np.vstack([vectors, np.zeros((n_zero, n_features))])
    spanned = min(n_vectors - 1, n_features)
    n_components = draw(st.one_of(st.none(), st.integers(1, spanned)))
    power = draw(st.sampled_from([0.0, 0.5, 1.0]))
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    return vectors.astype(dtype), n_components, power


@given(whitening_problems())
def test_transform_equals_an_svd_by_hand(problem):
    vectors, n_components, power = problem
    whitening = fit_whitening(vectors, n_components, power=power)
    expected_components = n_components or min(vectors.shape[0] - 3, vectors.shape[1])
    expected, variances, axes = reference_whitening(
        vectors, whitening.n_components, power, vectors
    )
    assert whitening.n_components >= min(expected_components, 1)
    if n_components is not None:
        assert whitening.n_components == n_components
    assert whitening.power == power
    np.testing.assert_allclose(whitening.explained_variance, variances, rtol=1e-4)
    result = whitening.transform(vectors)
    assert result.dtype == np.float32
    assert result.shape == (vectors.shape[0], whitening.n_components)
    np.testing.assert_allclose(aligned(result, whitening, axes), expected, atol=2e-4)


@given(whitening_problems())
def test_outputs_are_unit_vectors_and_zero_rows_stay_zero(problem):
    vectors, n_components, power = problem
    result = fit_whitening(vectors, n_components, power=power).transform(vectors)
    zero = ~np.any(vectors != 0, axis=1)
    assert np.all(result[zero] == 0)
    norms = np.linalg.norm(result[~zero], axis=1)
    # A vector equal to the mean projects to zero and stays zero.
    np.testing.assert_allclose(norms[norms > 0], 1.0, rtol=1e-5)


def test_full_whitening_gives_unit_variance_on_every_axis():
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((400, 6)) * [5, 3, 2, 1, 0.5, 0.1]
    whitening = fit_whitening(vectors, 6, power=1.0)
    scale = whitening.explained_variance**0.5
    projected = (vectors - whitening.mean) @ whitening.components.T / scale
    np.testing.assert_allclose(np.cov(projected, rowvar=False), np.eye(6), atol=1e-4)


def test_power_zero_is_an_orthogonal_projection():
    """Without whitening, inner products of centred vectors in the full space
    are kept (before normalisation)."""
    rng = np.random.default_rng(1)
    vectors = rng.standard_normal((30, 5))
    whitening = fit_whitening(vectors, 5, power=0.0)
    centred = vectors - vectors.mean(axis=0)
    expected = centred / np.linalg.norm(centred, axis=1, keepdims=True)
    result = whitening.transform(vectors)
    np.testing.assert_allclose(result @ result.T, expected @ expected.T, atol=1e-5)


@pytest.mark.parametrize("n_features", [5, 200])
def test_duplicated_vectors_keep_only_the_spanned_directions(n_features):
    """Ten distinct vectors twice span 9 directions: the default keeps 9 (not
    the 19 that 20 vectors could span), and asking for more is refused, in the
    covariance and in the Gram route alike."""
    rng = np.random.default_rng(2)
    distinct = rng.standard_normal((10, n_features))
    vectors = np.vstack([distinct, distinct])
    rank = min(9, n_features)
    whitening = fit_whitening(vectors)
    assert whitening.n_components == rank
    assert whitening.explained_variance.min() > 1e-3
    if rank < min(19, n_features):
        with pytest.raises(ValueError, match=f"span only {rank} directions"):
            fit_whitening(vectors, rank + 1)


def test_vectors_of_a_low_dimensional_subspace():
    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((100, 4)) @ rng.standard_normal((4, 50))
    assert fit_whitening(vectors).n_components == 4
    with pytest.raises(ValueError, match="span only 4 directions"):
        fit_whitening(vectors, 10)


def test_more_vectors_than_dimensions_and_fewer_take_the_same_path_to_one_answer():
    """The Gram route (fewer vectors than dimensions) against the reference."""
    rng = np.random.default_rng(4)
    vectors = rng.standard_normal((12, 300)) * np.geomspace(1, 0.1, 300)
    whitening = fit_whitening(vectors, 8, power=0.5)
    expected, variances, axes = reference_whitening(vectors, 8, 0.5, vectors)
    np.testing.assert_allclose(whitening.explained_variance, variances, rtol=1e-5)
    result = aligned(whitening.transform(vectors), whitening, axes)
    np.testing.assert_allclose(result, expected, atol=1e-5)


@given(whitening_problems())
def test_each_axis_has_its_largest_entry_positive(problem):
    """An eigenvector's sign is arbitrary and LAPACK's differs between CPUs:
    whitened vectors are the same on every machine only with a fixed choice.
    The reference's axes, turned by that rule by hand, are the whitening's."""
    vectors, n_components, power = problem
    whitening = fit_whitening(vectors, n_components, power=power)
    components = whitening.components
    largest = components[np.arange(len(components)), np.abs(components).argmax(1)]
    assert np.all(largest > 0)
    _, _, axes = reference_whitening(vectors, components.shape[0], power, vectors)
    by_hand = (
        axes * np.sign(axes[np.arange(len(axes)), np.abs(axes).argmax(1)])[:, None]
    )
    np.testing.assert_allclose(components, by_hand, atol=1e-5)


@pytest.mark.parametrize("n_vectors", [12, 400], ids=["gram", "covariance"])
def test_a_mirrored_decomposition_gives_the_same_whitening(monkeypatch, n_vectors):
    """LAPACK may return any eigenvector negated: the whitening is the same."""
    rng = np.random.default_rng(5)
    vectors = rng.standard_normal((n_vectors, 40)) * np.geomspace(1, 0.1, 40)
    expected = fit_whitening(vectors, 6).components
    eigh = np.linalg.eigh

    def mirrored(matrix):
        values, vectors = eigh(matrix)
        return values, vectors * np.where(np.arange(len(values)) % 2, -1.0, 1.0)

    monkeypatch.setattr(np.linalg, "eigh", mirrored)
    np.testing.assert_array_equal(fit_whitening(vectors, 6).components, expected)


def test_the_randomised_route_for_the_largest_inputs(monkeypatch):
    """Above MAX_EXACT_SIDE vectors and dimensions, scikit-learn's randomised
    PCA: its variances within 0.1 % of the SVD's (scikit-learn's defaults were
    3 % off on this spectrum)."""
    monkeypatch.setattr(vlad.search._whitening, "MAX_EXACT_SIDE", 100)
    rng = np.random.default_rng(5)
    n_features = 200
    spectrum = np.arange(1, n_features + 1) ** -0.7
    vectors = rng.standard_normal((500, n_features)) * np.sqrt(spectrum)
    vectors = vectors @ np.linalg.qr(rng.standard_normal((n_features,) * 2))[0]
    whitening = fit_whitening(vectors, 20)
    expected, variances, axes = reference_whitening(vectors, 20, 1.0, vectors[:50])
    np.testing.assert_allclose(whitening.explained_variance, variances, rtol=1e-3)
    result = aligned(whitening.transform(vectors[:50]), whitening, axes)
    np.testing.assert_allclose(result @ result.T, expected @ expected.T, atol=1e-2)


def test_save_and_load_give_the_same_transform(tmp_path):
    rng = np.random.default_rng(6)
    vectors = rng.standard_normal((40, 10))
    whitening = fit_whitening(vectors, 6, power=0.5)
    whitening.save(tmp_path / "whitening.npz")
    loaded = PCAWhitening.load(tmp_path / "whitening.npz")
    assert (
        loaded.record()
        == whitening.record()
        == {
            "n_features": 10,
            "n_components": 6,
            "power": 0.5,
        }
    )
    for name in ("mean", "components", "explained_variance"):
        np.testing.assert_array_equal(getattr(loaded, name), getattr(whitening, name))
    np.testing.assert_array_equal(
        loaded.transform(vectors), whitening.transform(vectors)
    )


def test_a_whitening_file_of_a_newer_vlad_is_refused(tmp_path):
    whitening = fit_whitening(np.random.default_rng(7).standard_normal((10, 3)))
    path = tmp_path / "whitening.npz"
    whitening.save(path)
    with np.load(path, allow_pickle=False) as archive:
        arrays = dict(archive)
    record = json.loads(str(arrays["metadata"]))
    record["format_version"] = 99
    arrays["metadata"] = np.array(json.dumps(record))
    np.savez(path, **arrays)
    with pytest.raises(ValueError, match="newer vlad"):
        PCAWhitening.load(path)


@pytest.mark.parametrize(
    ("arguments", "error", "message"),
    [
        (({"power": 1.5}), ValueError, r"power must be in \[0, 1\]; got 1.5"),
        (({"power": -0.1}), ValueError, "power must be in"),
        (({"power": True}), TypeError, "power must be a number"),
        (({"power": "1"}), TypeError, "power must be a number"),
        (({"n_components": 0}), ValueError, "n_components must be"),
        (({"n_components": 2.0}), TypeError, "n_components must be"),
        (({"n_components": 10}), ValueError, "n_components=10 is more than"),
    ],
)
def test_bad_parameters_are_refused(arguments, error, message):
    vectors = np.random.default_rng(8).standard_normal((6, 4))
    with pytest.raises(error, match=message):
        fit_whitening(vectors, **arguments)


@pytest.mark.parametrize(
    ("vectors", "message"),
    [
        ([[1.0, np.nan], [0.0, 1.0], [1.0, 1.0]], "NaN or infinite"),
        ([[1.0, 2.0], [0.0, 0.0], [0.0, 0.0]], "at least 2 non-zero vectors"),
        ([[1.0, 2.0], [1.0, 2.0], [1.0, 2.0]], "all equal"),
    ],
)
def test_data_that_cannot_be_whitened_is_refused(vectors, message):
    with pytest.raises(ValueError, match=message):
        fit_whitening(vectors)


def test_transform_refuses_another_dimension_and_nan():
    whitening = fit_whitening(np.random.default_rng(9).standard_normal((10, 3)))
    with pytest.raises(ValueError, match="vectors have 4 dimensions; the whitening"):
        whitening.transform(np.ones((2, 4)))
    with pytest.raises(ValueError, match="NaN"):
        whitening.transform([[np.nan, 0, 0]])


def test_random_state_is_a_deprecated_name_of_seed(monkeypatch):
    monkeypatch.setattr(vlad.search._whitening, "MAX_EXACT_SIDE", 10)
    vectors = np.random.default_rng(7).standard_normal((40, 30))
    by_seed = fit_whitening(vectors, 5, seed=3)
    with pytest.warns(FutureWarning, match="random_state is deprecated; use seed"):
        by_old_name = fit_whitening(vectors, 5, random_state=3)
    np.testing.assert_array_equal(by_old_name.components, by_seed.components)
    assert not np.array_equal(
        fit_whitening(vectors, 5, seed=4).components, by_seed.components
    )
