"""The Keras NetVLAD layer on the back-end KERAS_BACKEND names: gradients against
finite differences, agreement with the PyTorch layer, the initialisation from
a codebook, the hard limit (vlad.encode) and saving.

Keras reads KERAS_BACKEND once, at import: tests/test_keras_layer.py runs this
file in a fresh interpreter per back-end (``KERAS_BACKEND=jax python -m pytest
tests/keras_layer_checks.py`` runs it by hand).
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest

import vlad

keras = pytest.importorskip("keras")
from vlad.backends._netvlad import sharpness_for  # noqa: E402
from vlad.backends.keras._layer import NetVLAD, padded  # noqa: E402

BACKEND = keras.backend.backend()


def computes_in_float64() -> bool:
    """Whether float64 products stay float64: Keras 3.15's PyTorch back-end
    demotes them to float32 (keras-team/keras#23704)."""
    ones = np.ones((2, 2))
    product = keras.ops.matmul(ones, ones)
    return keras.backend.standardize_dtype(product.dtype) == "float64"


def close() -> dict:
    """Tolerances of comparisons of float64 layers: rounding where the back-end
    computes in float64, float32 rounding where it does not."""
    if computes_in_float64():
        return {"rtol": 1e-12, "atol": 1e-14}
    return {"rtol": 1e-4, "atol": 1e-5}


@pytest.fixture(autouse=True)
def float64_on_jax():
    """JAX computes in float32 unless told otherwise."""
    if BACKEND != "jax":
        yield
        return
    import jax

    previous = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    yield
    jax.config.update("jax_enable_x64", previous)


@pytest.fixture(scope="module")
def problem():
    """Three ragged images, float64, and a codebook fitted on them."""
    sets = vlad.datasets.make_descriptor_sets(
        3, 40, 6, ragged=True, dtype=np.float64, seed=2
    )
    return sets, vlad.fit_codebook(sets, 4, seed=0)


def as_numpy(values) -> np.ndarray:
    """A tensor or a variable's value as NumPy (variables through their value:
    their own ``__array__`` predates NumPy 2's ``copy`` argument)."""
    if isinstance(values, keras.Variable):
        values = values.value
    return np.asarray(keras.ops.convert_to_numpy(values))


def autodiff_gradients(function, arguments):
    """The gradients of the scalar ``function(*arguments)`` with respect to each
    argument, by the back-end's own automatic differentiation."""
    if BACKEND == "jax":
        import jax

        argnums = tuple(range(len(arguments)))
        return [np.asarray(g) for g in jax.grad(function, argnums)(*arguments)]
    if BACKEND == "tensorflow":
        import tensorflow as tf

        variables = [tf.Variable(argument) for argument in arguments]
        with tf.GradientTape() as tape:
            value = function(*variables)
        return [g.numpy() for g in tape.gradient(value, variables)]
    if BACKEND == "torch":
        import torch

        tensors = [torch.tensor(a, requires_grad=True) for a in arguments]
        function(*tensors).backward()
        return [tensor.grad.numpy() for tensor in tensors]
    raise AssertionError(f"no gradient for the {BACKEND} back-end in this test")


def finite_difference_jacobians(function, arguments, step):
    """Central differences of ``function`` (array to array) in each entry of
    each argument: one (n_outputs, *argument.shape) array per argument."""
    jacobians = []
    for index, argument in enumerate(arguments):
        columns = []
        for position in np.ndindex(argument.shape):
            shifted = [a.copy() for a in arguments]
            shifted[index][position] += step
            above = function(*shifted)
            shifted[index][position] -= 2 * step
            below = function(*shifted)
            columns.append((above - below).ravel() / (2 * step))
        jacobians.append(np.stack(columns, axis=1).reshape(-1, *argument.shape))
    return jacobians


def test_gradients_are_right(problem):
    """Gradients of random projections of the vectors, with respect to the
    descriptors and every parameter, against central differences (with a
    larger step and tolerance where the back-end computes in float32)."""
    sets, codebook = problem
    layer = NetVLAD.from_codebook(codebook, sets.descriptors, 5.0, dtype="float64")
    batch, mask = padded(sets.descriptors, sets.offsets)
    # Rows 10 to 13: the second image's end is padding (its mask is False).
    batch, mask = batch[:, 10:14].copy(), mask[:, 10:14].copy()
    assert not mask.all()
    parameters = [as_numpy(v) for v in layer.trainable_variables]
    assert [p.shape for p in parameters] == [(4, 6), (6, 4), (4,)]

    def vectors(batch, *parameters):
        return layer.stateless_call(list(parameters), [], batch, mask=mask)[0]

    arguments = [batch, *parameters]
    float64 = computes_in_float64()
    jacobians = finite_difference_jacobians(
        lambda *a: as_numpy(vectors(*a)).astype(np.float64),
        arguments,
        step=1e-6 if float64 else 1e-3,
    )
    rng = np.random.default_rng(0)
    for _ in range(3):
        projection = rng.standard_normal((3, 24))

        def projected(*arguments, projection=projection):
            return keras.ops.sum(keras.ops.multiply(projection, vectors(*arguments)))

        gradients = autodiff_gradients(projected, arguments)
        for gradient, jacobian in zip(gradients, jacobians, strict=True):
            expected = np.tensordot(projection.ravel(), jacobian, axes=1)
            if float64:
                np.testing.assert_allclose(gradient, expected, rtol=1e-6, atol=1e-8)
            else:  # float32 rounding over the step: normwise
                error = np.linalg.norm(gradient - expected)
                assert error <= 1e-2 * np.linalg.norm(expected)
    assert np.abs(jacobians[0]).max() > 1e-3  # the check is not vacuous


def test_same_vectors_as_the_pytorch_layer(problem):
    torch = pytest.importorskip("torch")
    from vlad.backends.torch._layer import NetVLAD as TorchNetVLAD

    sets, codebook = problem
    batch, mask = padded(sets.descriptors, sets.offsets)
    for options in ({}, {"normalize_input": True}, {"intra": False, "l2": False}):
        layer = NetVLAD.from_codebook(
            codebook, sets.descriptors, 10.0, dtype="float64", **options
        )
        twin = TorchNetVLAD.from_codebook(
            codebook, sets.descriptors, 10.0, dtype=torch.float64, **options
        )
        assert layer.alpha == twin.alpha
        with torch.no_grad():
            expected = twin(torch.from_numpy(batch), torch.from_numpy(mask)).numpy()
        np.testing.assert_allclose(
            as_numpy(layer(batch, mask=mask)), expected, **close()
        )
    # Random parameters too: the PyTorch layer's, the weight transposed.
    twin = TorchNetVLAD(4, 6, dtype=torch.float64)
    layer = NetVLAD(4, 6, dtype="float64")
    layer.centers.assign(twin.centers.detach().numpy())
    layer.assignment_kernel.assign(twin.assignment.weight.detach().numpy().T)
    layer.assignment_bias.assign(twin.assignment.bias.detach().numpy())
    with torch.no_grad():
        expected = twin(torch.from_numpy(batch), torch.from_numpy(mask)).numpy()
    np.testing.assert_allclose(as_numpy(layer(batch, mask=mask)), expected, **close())


def test_padding_is_ignored(problem):
    """Padded with 1e3 and masked, each image gives what it gives alone."""
    sets, codebook = problem
    layer = NetVLAD.from_codebook(codebook, sets.descriptors, dtype="float64")
    batch, mask = padded(sets.descriptors, sets.offsets)
    batch[~mask] = 1e3
    alone = [as_numpy(layer(sets[t][None]))[0] for t in range(len(sets))]
    np.testing.assert_allclose(as_numpy(layer(batch, mask=mask)), alone, **close())


def test_a_keras_mask_is_the_mask(problem):
    """A Masking layer's mask reaches the layer: zero padding is ignored."""
    sets, codebook = problem
    layer = NetVLAD.from_codebook(codebook, sets.descriptors, dtype="float64")
    batch, mask = padded(sets.descriptors, sets.offsets)
    model = keras.Sequential(
        [keras.Input((None, 6), dtype="float64"), keras.layers.Masking(), layer]
    )
    np.testing.assert_allclose(
        as_numpy(model(batch)), as_numpy(layer(batch, mask=mask)), **close()
    )
    assert not np.allclose(as_numpy(model(batch)), as_numpy(layer(batch)))


def test_alpha_makes_the_nearest_centre_weigh_ratio_times_the_second(problem):
    """On the sample, the mean log ratio of the two largest soft weights is
    log(ratio): alpha comes from the distances."""
    sets, codebook = problem
    for ratio in (10.0, 100.0, 1000.0):
        layer = NetVLAD.from_codebook(codebook, sets.descriptors, ratio)
        kernel = as_numpy(layer.assignment_kernel).astype(np.float64)
        logits = sets.descriptors @ kernel + as_numpy(layer.assignment_bias)
        top_two = -np.sort(-logits, axis=1)[:, :2]
        mean_log_ratio = float((top_two[:, 0] - top_two[:, 1]).mean())
        assert mean_log_ratio == pytest.approx(math.log(ratio), rel=1e-5)
        distances = ((sets.descriptors[:, None] - codebook.centers[None]) ** 2).sum(-1)
        nearest_two = np.sort(distances, axis=1)[:, :2]
        expected = math.log(ratio) / np.mean(nearest_two[:, 1] - nearest_two[:, 0])
        assert layer.alpha == pytest.approx(expected, rel=1e-9)


def test_centres_are_stored_as_they_are(problem):
    sets, codebook = problem
    layer = NetVLAD.from_codebook(codebook, sets.descriptors, dtype="float64")
    np.testing.assert_array_equal(as_numpy(layer.centers), codebook.centers)


def test_converges_to_hard_vlad_as_alpha_grows(problem):
    sets, codebook = problem
    expected = vlad.encode(sets, codebook, power=1.0, intra=True, l2=True)
    batch, mask = padded(sets.descriptors, sets.offsets)
    errors = []
    for ratio in (1e2, 1e8, 1e32, 1e300):
        layer = NetVLAD.from_codebook(
            codebook, sets.descriptors, ratio, dtype="float64"
        )
        result = as_numpy(layer(batch, mask=mask))
        errors.append(float(np.abs(result - expected).max()))
    # In float32 the last two are both at rounding level, in either order.
    assert errors[:3] == sorted(errors[:3], reverse=True)
    assert errors[-1] < (1e-12 if computes_in_float64() else 1e-6) < errors[0]


def test_no_tensor_of_every_descriptor_centre_and_feature():
    """The residuals are never formed: no intermediate of the traced program
    holds N * K * F values (JAX shows every one)."""
    if BACKEND != "jax":
        pytest.skip("the intermediates are read from a JAX trace")
    import jax

    n_images, n_rows, n_features, n_clusters = 4, 50, 32, 16
    batch = np.random.default_rng(0).standard_normal((n_images, n_rows, n_features))
    layer = NetVLAD(n_clusters, n_features, dtype="float64")
    parameters = [v.value for v in layer.trainable_variables]
    trace = jax.make_jaxpr(lambda x: layer.stateless_call(parameters, [], x)[0])
    sizes = [
        math.prod(variable.aval.shape)
        for equation in trace(batch).jaxpr.eqns
        for variable in equation.outvars
    ]
    assert sizes and max(sizes) < n_images * n_rows * n_clusters * n_features / 4


def test_normalize_input_normalises_descriptors_and_the_sample(problem):
    sets, codebook = problem
    layer = NetVLAD.from_codebook(
        codebook, sets.descriptors, normalize_input=True, dtype="float64"
    )
    batch, mask = padded(sets.descriptors, sets.offsets)
    np.testing.assert_allclose(
        as_numpy(layer(3.0 * batch, mask=mask)),
        as_numpy(layer(batch, mask=mask)),
        **close(),
    )
    unit = sets.descriptors / np.linalg.norm(sets.descriptors, axis=1, keepdims=True)
    assert layer.alpha == pytest.approx(sharpness_for(codebook.centers, unit))


def test_float32_layer_on_float32_input(problem):
    sets, codebook = problem
    layer = NetVLAD.from_codebook(codebook, sets.descriptors)
    batch, mask = padded(sets.descriptors.astype(np.float32), sets.offsets)
    result = as_numpy(layer(batch, mask=mask))
    assert result.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(result, axis=1), 1.0, rtol=1e-6)


def test_saved_and_loaded_model_gives_the_same_vectors(problem, tmp_path):
    sets, codebook = problem
    layer = NetVLAD.from_codebook(codebook, sets.descriptors, normalize_input=True)
    clone = NetVLAD.from_config(layer.get_config())
    assert clone.get_config() == layer.get_config()
    assert (clone.n_clusters, clone.n_features, clone.normalize_input) == (4, 6, True)
    model = keras.Sequential([keras.Input((None, 6)), layer])
    model.save(tmp_path / "netvlad.keras")
    loaded = keras.saving.load_model(tmp_path / "netvlad.keras")
    assert isinstance(loaded.layers[-1], NetVLAD)
    batch, _ = padded(sets.descriptors.astype(np.float32), sets.offsets)
    np.testing.assert_array_equal(as_numpy(loaded(batch)), as_numpy(model(batch)))


def test_a_training_step_changes_every_parameter(problem):
    sets, codebook = problem
    layer = NetVLAD.from_codebook(codebook, sets.descriptors, 5.0)
    before = [as_numpy(v).copy() for v in layer.trainable_variables]
    model = keras.Sequential([keras.Input((None, 6)), layer])
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mean_squared_error")
    batch, _ = padded(sets.descriptors.astype(np.float32), sets.offsets)
    targets = np.random.default_rng(0).standard_normal((3, 24)).astype(np.float32)
    history = model.fit(batch, targets, epochs=2, batch_size=3, verbose=0)
    assert np.all(np.isfinite(history.history["loss"]))
    for old, variable in zip(before, layer.trainable_variables, strict=True):
        assert not np.array_equal(old, as_numpy(variable))


@pytest.mark.parametrize(
    ("centers", "sample", "ratio", "message"),
    [
        (np.ones((1, 2)), np.ones((3, 2)), 100.0, "at least 2 centres"),
        (np.eye(2), np.ones((0, 2)), 100.0, "at least one descriptor"),
        (np.eye(2), np.ones((3, 2)), 1.0, "ratio must be a number > 1"),
        (np.eye(2), np.ones((3, 2)), 100.0, "as close to their second nearest"),
        (np.eye(2), np.ones((3, 3)), 100.0, "descriptors have 3 features"),
        (np.eye(2), np.full((3, 2), np.nan), 100.0, "contains 6 NaN"),
    ],
)
def test_bad_initialisation_gets_a_clear_error(centers, sample, ratio, message):
    with pytest.raises(ValueError, match=message):
        NetVLAD.from_codebook(centers, sample, ratio)


def test_bad_shapes_get_a_clear_error():
    layer = NetVLAD(3, 4)
    with pytest.raises(ValueError, match=r"must have shape \(n_images, n_desc"):
        layer(np.ones((5, 4), dtype=np.float32))
    with pytest.raises(ValueError, match=r"n_descriptors, 4\); got shape"):
        layer(np.ones((2, 5, 3), dtype=np.float32))
    with pytest.raises(ValueError, match="end at the number of descriptors"):
        padded(np.ones((10, 4)), [0, 5])
    with pytest.raises(ValueError, match="n_clusters must be an integer >= 1"):
        NetVLAD(0, 4)


def test_padded_against_a_loop():
    rng = np.random.default_rng(1)
    descriptors = rng.standard_normal((9, 3)).astype(np.float32)
    offsets = [0, 4, 4, 9]
    batch, mask = padded(descriptors, offsets)
    assert batch.shape == (3, 5, 3) and batch.dtype == np.float32
    for t in range(3):
        rows = descriptors[offsets[t] : offsets[t + 1]]
        np.testing.assert_array_equal(batch[t, : len(rows)], rows)
        assert not batch[t, len(rows) :].any()
        assert mask[t].tolist() == [i < len(rows) for i in range(5)]


def test_the_keras_example_of_the_docs_runs():
    """docs/accelerators.md shows its Keras example as text (Keras is optional):
    here it runs, after the page's Python examples it builds on."""
    import doctest

    page = Path(__file__).resolve().parents[1] / "docs" / "accelerators.md"
    blocks = re.findall(r"^```(python|text)\n(.*?)^```", page.read_text(), re.M | re.S)
    examples = "\n".join(body for kind, body in blocks if kind == "python")
    test = doctest.DocTestParser().get_doctest(examples, {}, page.name, str(page), 0)
    runner = doctest.DocTestRunner(
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    )
    runner.run(test, clear_globs=False)
    assert runner.failures == 0
    [code] = [body for kind, body in blocks if kind == "text" and "keras" in body]
    exec(compile(code, str(page), "exec"), test.globs)
