"""Tests for vlad.estimators._encoder: the VLADEncoder scikit-learn transformer."""

import pickle
from pathlib import Path

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.base import clone
from sklearn.decomposition import PCA
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.neighbors import NearestNeighbors
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import Normalizer
from sklearn.utils._param_validation import InvalidParameterError
from sklearn.utils.estimator_checks import (
    check_do_not_raise_errors_in_init_or_set_params,
    check_estimator_cloneable,
    check_estimator_repr,
    check_estimator_tags_renamed,
    check_estimators_partial_fit_n_features,
    check_estimators_unfitted,
    check_fit1d,
    check_get_feature_names_out_error,
    check_get_params_invariance,
    check_mixin_order,
    check_no_attributes_set_in_init,
    check_param_validation,
    check_parameters_default_constructible,
    check_set_output_transform,
    check_set_params,
    check_transformer_get_feature_names_out,
    check_transformers_unfitted,
    check_valid_tag_types,
    parametrize_with_checks,
)
from threadpoolctl import threadpool_limits

import vlad
from vlad import VLADEncoder

N_FEATURES = 8


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    # Every k-means here is tiny: OpenMP threads cost more than they save, and
    # on a loaded machine their synchronisation dominates (0.3 s instead of
    # 2 ms a fit).
    with threadpool_limits(limits=1):
        yield


@pytest.fixture(scope="module")
def images() -> list[np.ndarray]:
    """30 images of 20 to 60 SIFT-like descriptors of dimension 8."""
    sets = vlad.datasets.make_descriptor_sets(30, 40, N_FEATURES, seed=0)
    lengths = np.random.default_rng(1).integers(20, 61, size=len(sets))
    return [image[:length] for image, length in zip(sets, lengths, strict=True)]


# --- scikit-learn's estimator checks -------------------------------------------
#
# VLADEncoder's tags say X is not a 2-D matrix (see __sklearn_tags__), so
# check_estimator and parametrize_with_checks skip it entirely. The checks
# split in two:
#
# * Checks that never look at X, or that fail before using it, run on
#   VLADEncoder itself (test_api_check).
# * Checks that fit and transform build a 2-D X of shape (n_samples, n_features).
#   _OneDescriptorPerImage reads such an X as a (T, 1, F) array -- T images of
#   one descriptor each, an input VLADEncoder itself accepts -- and otherwise is
#   VLADEncoder, so these checks exercise the encoder's own fit, partial_fit,
#   transform, pickling, dtypes, idempotence, subset and order invariance.
#   Those that cannot apply to a set-of-descriptors input are expected to fail
#   (xfail_strict, so one that starts passing is reported):
EXPECTED_FAILED_CHECKS = {
    "check_estimator_sparse_array": (
        "a sparse array is a 2-D matrix, never descriptor sets: the TypeError "
        "names the accepted inputs rather than saying 'sparse'"
    ),
    "check_estimator_sparse_matrix": "as check_estimator_sparse_array",
    "check_estimator_sparse_tag": "as check_estimator_sparse_array",
    "check_transformer_data_not_an_array": (
        "X must be a list of arrays, a DescriptorSets or an ndarray; other "
        "array-likes (objects with __array__) are rejected with a TypeError"
    ),
    "check_fit2d_predict1d": (
        "a 1-D X gets a ValueError naming the expected (n_images, n_descriptors, "
        "n_features) shape, not the 2-D wording 'Reshape your data'"
    ),
}
# Not run at all: check_array_api_input (no array API support; it skips itself),
# and the sample_weight, classifier, regressor and clusterer checks (VLADEncoder
# has no sample_weight and is none of those).


def _as_images(X):
    """A 2-D ndarray of shape (T, F) as T images of one descriptor: (T, 1, F)."""
    if isinstance(X, np.ndarray) and X.ndim == 2:
        return X[:, None, :]
    return X


class _OneDescriptorPerImage(VLADEncoder):
    """VLADEncoder that reads a (T, F) matrix as T images of one descriptor."""

    def fit(self, X, y=None):
        return super().fit(_as_images(X), y)

    def partial_fit(self, X, y=None):
        return super().partial_fit(_as_images(X), y)

    def transform(self, X):
        return super().transform(_as_images(X))

    def fit_transform(self, X, y=None):
        return super().fit_transform(_as_images(X), y)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = True
        return tags


@parametrize_with_checks(
    [_OneDescriptorPerImage(2, random_state=0)],
    expected_failed_checks=lambda estimator: EXPECTED_FAILED_CHECKS,
    xfail_strict=True,
)
def test_sklearn_check_on_one_descriptor_images(estimator, check):
    check(estimator)


@pytest.mark.parametrize(
    "check",
    [
        # Checks that sklearn runs for all its transformers outside
        # check_estimator, or for partial_fit estimators of other kinds.
        check_transformer_get_feature_names_out,
        check_set_output_transform,
        check_estimators_partial_fit_n_features,
    ],
)
def test_extra_sklearn_check_on_one_descriptor_images(check):
    check("_OneDescriptorPerImage", _OneDescriptorPerImage(2, random_state=0))


@pytest.mark.parametrize(
    "check",
    [
        check_estimator_cloneable,
        check_estimator_tags_renamed,
        check_valid_tag_types,
        check_estimator_repr,
        check_no_attributes_set_in_init,
        check_do_not_raise_errors_in_init_or_set_params,
        check_mixin_order,
        check_parameters_default_constructible,
        check_get_params_invariance,
        check_set_params,
        # The following call fit or transform with 2-D X: parameter validation,
        # the fitted check and the 1-D check fail before X is read as images.
        check_param_validation,
        check_estimators_unfitted,
        check_transformers_unfitted,
        check_get_feature_names_out_error,
        check_fit1d,
    ],
)
def test_api_check(check):
    check("VLADEncoder", VLADEncoder(4, random_state=0))


def test_tags_declare_descriptor_set_input():
    tags = VLADEncoder().__sklearn_tags__()
    assert not tags.input_tags.two_d_array
    assert tags.input_tags.three_d_array
    assert tags.transformer_tags.preserves_dtype == ["float64", "float32"]


# --- The wrapper and the library functions agree ------------------------------


#: Settings of VLADEncoder, each checked in float32 and float64.
ENCODER_SETTINGS = [
    {},
    {"power": 0.5, "mass": True, "aggregator": "loop"},
    {"intra": False, "l2": False, "aggregator": "sparse", "sample": 300},
    {"residual_norm": True, "power": 0.2},
    {"assignment": "soft", "n_nearest": 3, "kernel_width": 0.5, "mass": True},
    {"assignment": "multiple", "aggregator": "sparse"},
]


def compiles_weighted_float64(params: dict, dtype) -> bool:
    """Whether the settings run numba's weighted kernels in float64, which a
    fresh checkout compiles (a second each) for these tests alone."""
    weighted = params.get("residual_norm") or params.get("assignment") == "soft"
    return dtype is np.float64 and bool(weighted)


@pytest.mark.parametrize(
    ("dtype", "params"),
    [
        pytest.param(
            dtype,
            params,
            marks=pytest.mark.slow if compiles_weighted_float64(params, dtype) else (),
        )
        for params in ENCODER_SETTINGS
        for dtype in (np.float32, np.float64)
    ],
)
def test_fit_transform_equals_encode_with_fit_codebook(images, dtype, params):
    X = [image.astype(dtype) for image in images]
    encoder = VLADEncoder(5, random_state=3, **params)
    vectors = encoder.fit(X).transform(X)
    codebook = vlad.fit_codebook(X, 5, sample=params.get("sample", 100_000), seed=3)
    expected = vlad.encode(
        X,
        codebook,
        **{k: v for k, v in params.items() if k != "sample"},
    )
    assert_array_equal(encoder.cluster_centers_, codebook.centers)
    assert_array_equal(vectors, expected)
    assert vectors.dtype == dtype
    assert vectors.shape == (len(X), 5 * N_FEATURES)
    assert_array_equal(clone(encoder).fit_transform(X), expected)


def test_learned_attributes(images):
    encoder = VLADEncoder(4, random_state=0).fit(images)
    assert isinstance(encoder.codebook_, vlad.Codebook)
    assert encoder.cluster_centers_ is encoder.codebook_.centers
    assert encoder.cluster_centers_.shape == (4, N_FEATURES)
    assert encoder.n_features_in_ == N_FEATURES
    assert encoder.codebook_.metadata["seed"] == 0


def test_input_kinds_give_the_same_vectors(images):
    sets = vlad.DescriptorSets.from_list(images)
    encoder = VLADEncoder(4, random_state=0).fit(sets)
    expected = encoder.transform(images)
    assert_array_equal(encoder.transform(sets), expected)
    assert_array_equal(
        VLADEncoder(4, random_state=0).fit(images).transform(sets), expected
    )
    block = np.stack([image[:20] for image in images])
    assert_array_equal(encoder.transform(block), encoder.transform(list(block)))


@pytest.mark.parametrize("method", ["fit", "partial_fit"])
def test_numpy_integer_random_state_gives_a_saveable_codebook(tmp_path, images, method):
    encoder = getattr(VLADEncoder(4, random_state=np.int64(3)), method)(images)
    encoder.codebook_.save(tmp_path / "codebook.npz")
    assert vlad.Codebook.load(tmp_path / "codebook.npz").metadata["seed"] == 3


def test_random_state_instance_gives_reproducible_codebooks(images):
    first = VLADEncoder(4, random_state=np.random.RandomState(7)).fit(images)
    second = VLADEncoder(4, random_state=np.random.RandomState(7)).fit(images)
    assert_array_equal(first.cluster_centers_, second.cluster_centers_)


# --- scikit-learn conventions -------------------------------------------------


def test_get_feature_names_out(images):
    encoder = VLADEncoder(3, random_state=0).fit(images)
    names = encoder.get_feature_names_out()
    assert names.shape == (3 * N_FEATURES,)
    assert (
        names[0] == "vladencoder0" and names[-1] == f"vladencoder{3 * N_FEATURES - 1}"
    )
    assert len(set(names)) == names.size


def test_clone_and_params(images):
    encoder = VLADEncoder(4, power=0.5, random_state=0).fit(images)
    copy = clone(encoder)
    assert copy.get_params() == encoder.get_params()
    assert not hasattr(copy, "codebook_")
    copy.set_params(n_clusters=3, power=1.0)
    assert copy.get_params()["n_clusters"] == 3
    assert encoder.get_params()["n_clusters"] == 4
    assert copy.fit_transform(images).shape == (len(images), 3 * N_FEATURES)


def test_set_params_changes_the_output(images):
    encoder = VLADEncoder(4, random_state=0).fit(images)
    before = encoder.transform(images)
    after = encoder.set_params(power=0.5).transform(images)
    assert not np.allclose(before, after)
    assert_array_equal(after, vlad.encode(images, encoder.codebook_, power=0.5))


def test_pickle_round_trip_gives_identical_output(images):
    encoder = VLADEncoder(4, power=0.5, random_state=0).fit(images)
    restored = pickle.loads(pickle.dumps(encoder))
    assert restored.get_params() == encoder.get_params()
    assert_array_equal(restored.cluster_centers_, encoder.cluster_centers_)
    assert_array_equal(restored.transform(images), encoder.transform(images))


def test_transform_before_fit_raises_not_fitted(images):
    with pytest.raises(NotFittedError):
        VLADEncoder(4).transform(images)
    with pytest.raises(NotFittedError):
        VLADEncoder(4).get_feature_names_out()


def test_feature_mismatch_names_both_dimensions(images):
    encoder = VLADEncoder(4, random_state=0).fit(images)
    wider = [np.ones((3, N_FEATURES + 2), np.float32)]
    message = (
        f"X has {N_FEATURES + 2} features, but VLADEncoder is expecting "
        f"{N_FEATURES} features as input"
    )
    with pytest.raises(ValueError, match=message):
        encoder.transform(wider)
    partial = VLADEncoder(4, random_state=0).partial_fit(images)
    with pytest.raises(ValueError, match=message):
        partial.partial_fit(wider)


def test_two_d_input_is_rejected_with_the_expected_shape(images):
    encoder = VLADEncoder(4, random_state=0).fit(images)
    with pytest.raises(ValueError, match=r"\(n_images, n_descriptors, n_features\)"):
        encoder.transform(np.vstack(images))


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("n_clusters", 0),
        ("n_clusters", 2.5),
        ("aggregator", "nope"),
        ("power", 0.0),
        ("power", 1.5),
        ("intra", "yes"),
        ("residual_norm", "yes"),
        ("assignment", "fuzzy"),
        ("n_nearest", 0),
        ("kernel_width", 0.0),
        ("sample", 0),
        ("codebook", 3),
        ("random_state", "seed"),
    ],
)
def test_invalid_parameter_names_it(images, name, value):
    encoder = VLADEncoder(**{"n_clusters": 4, name: value})
    match = rf"The '{name}' parameter of VLADEncoder must be .* Got .* instead"
    for method in (encoder.fit, encoder.partial_fit, encoder.fit_transform):
        with pytest.raises(InvalidParameterError, match=match):
            method(images)


def test_too_few_descriptors_for_the_first_partial_fit():
    with pytest.raises(ValueError, match="at least n_clusters descriptors"):
        VLADEncoder(8).partial_fit([np.ones((5, N_FEATURES))])


# --- Pipelines and model selection --------------------------------------------


def test_retrieval_pipeline():
    database = list(vlad.datasets.make_descriptor_sets(40, 40, 16, seed=0))
    embed = make_pipeline(
        VLADEncoder(8, power=0.5, random_state=0),
        PCA(24, whiten=True, random_state=0),
        Normalizer(),
    )
    vectors = embed.fit_transform(database)
    assert vectors.shape == (40, 24)
    assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)
    index = NearestNeighbors(n_neighbors=1, metric="cosine").fit(vectors)
    # A query is half of an image's descriptors; recall@1 is 1.0 in practice.
    queries = [image[::2] for image in database]
    neighbours = index.kneighbors(embed.transform(queries), return_distance=False)
    assert np.mean(neighbours.ravel() == np.arange(40)) >= 0.9


def _two_vocabularies(n_per_class: int = 15) -> tuple[list, np.ndarray]:
    """Images of two classes, each drawing its descriptors from its own ten
    local patterns, with noise."""
    rng = np.random.default_rng(0)
    vocabularies = rng.normal(size=(2, 10, N_FEATURES))
    labels = np.repeat([0, 1], n_per_class)
    images = [
        vocabularies[label, rng.integers(0, 10, size=30)]
        + rng.normal(size=(30, N_FEATURES))
        for label in labels
    ]
    return images, labels


@pytest.mark.parametrize("as_sets", [False, True])
def test_grid_search_over_n_clusters_and_power(as_sets):
    images, labels = _two_vocabularies()
    X = vlad.DescriptorSets.from_list(images) if as_sets else images
    pipeline = Pipeline(
        [("vladencoder", VLADEncoder(random_state=0)), ("clf", LogisticRegression())]
    )
    grid = {"vladencoder__n_clusters": [2, 4], "vladencoder__power": [0.5, 1.0]}
    search = GridSearchCV(pipeline, grid, cv=3).fit(X, labels)
    assert len(search.cv_results_["params"]) == 4
    best = search.best_estimator_.named_steps["vladencoder"]
    assert best.n_clusters == search.best_params_["vladencoder__n_clusters"]
    assert best.cluster_centers_.shape == (best.n_clusters, N_FEATURES)
    assert search.best_score_ > 0.9
    assert_array_equal(search.predict(X), labels)


def test_grid_search_slices_descriptor_sets_like_a_list():
    images, labels = _two_vocabularies()
    pipeline = make_pipeline(VLADEncoder(random_state=0), LogisticRegression())
    grid = {"vladencoder__n_clusters": [2, 3]}
    scores = [
        GridSearchCV(pipeline, grid, cv=3, scoring="neg_log_loss")
        .fit(X, labels)
        .cv_results_["mean_test_score"]
        for X in (images, vlad.DescriptorSets.from_list(images))
    ]
    assert_allclose(scores[0], scores[1], rtol=1e-6)


# --- partial_fit ----------------------------------------------------------------


def _quantisation_error(descriptors: np.ndarray, centers: np.ndarray) -> float:
    """Mean squared distance of the descriptors to their nearest centre."""
    distances = ((descriptors[:, None, :] - centers[None, :, :]) ** 2).sum(axis=2)
    return float(distances.min(axis=1).mean())


def test_partial_fit_over_chunks_is_close_to_fit():
    # Measure: the mean squared distance of every descriptor to its nearest
    # centre (k-means' objective). Two passes over chunks of 10 images come
    # within 10% of a full fit on the same data (about 3% in practice); the
    # k-means++ start alone is about 35% worse, so updates that did nothing,
    # or lost the state between calls, would fail.
    sets = vlad.datasets.make_descriptor_sets(60, 100, 16, seed=0)
    images = list(sets)
    descriptors = sets.descriptors.astype(np.float64)
    full = VLADEncoder(16, random_state=0).fit(images)
    partial = VLADEncoder(16, random_state=0)
    for _ in range(2):
        for start in range(0, len(images), 10):
            assert partial.partial_fit(images[start : start + 10]) is partial
    full_error = _quantisation_error(descriptors, full.cluster_centers_)
    partial_error = _quantisation_error(descriptors, partial.cluster_centers_)
    assert partial_error <= 1.10 * full_error
    assert partial.codebook_.metadata["n_steps"] == 12
    assert partial.n_features_in_ == 16
    assert_array_equal(
        partial.transform(images), vlad.encode(images, partial.cluster_centers_)
    )


def test_partial_fit_snapshots_do_not_change_later():
    images = list(vlad.datasets.make_descriptor_sets(20, 30, N_FEATURES, seed=0))
    encoder = VLADEncoder(4, random_state=0).partial_fit(images[:10])
    codebook = encoder.codebook_
    centers = codebook.centers.copy()
    encoder.partial_fit(images[10:])
    assert_array_equal(codebook.centers, centers)
    assert not np.array_equal(encoder.cluster_centers_, centers)


def test_partial_fit_after_fit_starts_from_the_fitted_centres(images):
    fitted = VLADEncoder(4, random_state=0).fit(images)
    centers = fitted.cluster_centers_.copy()
    # One mini-batch step on the data k-means converged on barely moves them.
    fitted.partial_fit(images)
    assert_allclose(fitted.cluster_centers_, centers, atol=1e-3 * np.abs(centers).max())
    fresh = VLADEncoder(4, random_state=0).partial_fit(images)
    assert not np.allclose(fresh.cluster_centers_, centers, atol=1e-1)


def test_fit_discards_partial_fit_state(images):
    encoder = VLADEncoder(4, random_state=0).partial_fit(images[:10])
    centers = encoder.fit(images).cluster_centers_.copy()
    assert_array_equal(
        centers, VLADEncoder(4, random_state=0).fit(images).cluster_centers_
    )
    # The next partial_fit refines fit's centres, not the earlier mini-batch run.
    encoder.partial_fit(images)
    assert_allclose(
        encoder.cluster_centers_, centers, atol=1e-3 * np.abs(centers).max()
    )


# --- An existing codebook: codebook= and from_codebook ------------------------


@pytest.fixture(scope="module")
def saved_codebook(tmp_path_factory, images) -> tuple[vlad.Codebook, Path]:
    codebook = vlad.fit_codebook(images, 4, seed=5)
    path = tmp_path_factory.mktemp("codebook") / "codebook.npz"
    codebook.save(path)
    return codebook, path


@pytest.mark.parametrize("kind", ["codebook", "array", "str", "path"])
def test_codebook_parameter_is_used_without_refitting(images, saved_codebook, kind):
    codebook, path = saved_codebook
    given = {
        "codebook": codebook,
        "array": codebook.centers,
        "str": str(path),
        "path": path,
    }[kind]
    encoder = VLADEncoder(4, codebook=given, random_state=0).fit(images[:3])
    assert_array_equal(encoder.cluster_centers_, codebook.centers)
    assert_array_equal(encoder.transform(images), vlad.encode(images, codebook))
    assert_array_equal(clone(encoder).fit_transform(images), encoder.transform(images))
    # partial_fit learns nothing either.
    assert_array_equal(
        VLADEncoder(4, codebook=given).partial_fit(images).cluster_centers_,
        codebook.centers,
    )


def test_codebook_parameter_checks_n_clusters_and_features(images, saved_codebook):
    codebook, _ = saved_codebook
    with pytest.raises(
        ValueError, match=r"n_clusters=256 but the codebook has 4 centres"
    ):
        VLADEncoder(codebook=codebook).fit(images)
    with pytest.raises(ValueError, match=rf"have {N_FEATURES}"):
        VLADEncoder(4, codebook=codebook).fit([np.ones((5, N_FEATURES + 1))])


def test_codebook_parameter_rejects_a_file_that_is_not_a_codebook(tmp_path, images):
    path = tmp_path / "sets.npz"
    vlad.DescriptorSets.from_list(images).save(path)
    with pytest.raises(ValueError, match="is not a vlad codebook file"):
        VLADEncoder(4, codebook=path).fit(images)


def test_from_codebook_file_is_ready_to_transform(images, saved_codebook):
    codebook, path = saved_codebook
    encoder = VLADEncoder.from_codebook(path, power=0.5)
    assert encoder.n_clusters == 4 and encoder.power == 0.5
    assert encoder.n_features_in_ == N_FEATURES
    assert encoder.codebook_.fingerprint == codebook.fingerprint
    assert_array_equal(
        encoder.transform(images), vlad.encode(images, codebook, power=0.5)
    )
    restored = pickle.loads(pickle.dumps(encoder))
    assert_array_equal(restored.transform(images), encoder.transform(images))
    assert_array_equal(
        clone(encoder).fit(images).transform(images), encoder.transform(images)
    )


def test_from_codebook_validates_its_parameters(saved_codebook):
    codebook, _ = saved_codebook
    with pytest.raises(InvalidParameterError, match="'power' parameter"):
        VLADEncoder.from_codebook(codebook, power=2.0)


def test_fitted_codebook_round_trips_through_save_and_load(tmp_path, images):
    encoder = VLADEncoder(4, random_state=0).fit(images)
    encoder.codebook_.save(tmp_path / "codebook.npz")
    loaded = vlad.Codebook.load(tmp_path / "codebook.npz")
    assert loaded.fingerprint == encoder.codebook_.fingerprint
    assert loaded.metadata["seed"] == 0
    again = VLADEncoder.from_codebook(loaded)
    assert_array_equal(again.transform(images), encoder.transform(images))
