"""NetVLAD: gradients, the initialisation from a codebook, the hard limit
(vlad.encode) and the memory it never allocates."""

from __future__ import annotations

import math

import numpy as np
import pytest

import vlad

torch = pytest.importorskip("torch")
from torch.overrides import TorchFunctionMode  # noqa: E402

from vlad.backends.torch._layer import NetVLAD, sharpness_for  # noqa: E402

DOUBLE = torch.float64


@pytest.fixture(scope="module")
def problem():
    """Three ragged images, float64, and a codebook fitted on them."""
    sets = vlad.datasets.make_descriptor_sets(
        3, 40, 6, ragged=True, dtype=np.float64, seed=2
    )
    return sets, vlad.fit_codebook(sets, 4, seed=0)


def padded(sets, fill=0.0):
    """The sets as a (T, L_max, F) tensor and its mask, padding set to ``fill``."""
    longest = int(sets.lengths.max())
    values = torch.full(
        (len(sets), longest, sets.n_features), fill, dtype=torch.float64
    )
    mask = torch.zeros((len(sets), longest), dtype=torch.bool)
    for t in range(len(sets)):
        values[t, : sets.lengths[t]] = torch.from_numpy(sets[t])
        mask[t, : sets.lengths[t]] = True
    return values, mask


def test_gradients_are_right(problem):
    sets, codebook = problem
    layer = NetVLAD.from_codebook(codebook, sets.descriptors, ratio=5.0, dtype=DOUBLE)
    values, mask = padded(sets)
    values = values[:, :12].clone().requires_grad_(True)
    mask = mask[:, :12]
    names = [name for name, _ in layer.named_parameters()]
    parameters = tuple(
        p.detach().clone().requires_grad_(True) for p in layer.parameters()
    )

    def vectors(values, *parameters):
        return torch.func.functional_call(
            layer, dict(zip(names, parameters, strict=True)), (values, mask)
        )

    assert torch.autograd.gradcheck(vectors, (values, *parameters))


def test_gradients_through_stacked_descriptors_with_offsets(problem):
    sets, codebook = problem
    layer = NetVLAD.from_codebook(codebook, sets.descriptors, ratio=5.0, dtype=DOUBLE)
    rows = torch.from_numpy(sets.descriptors[:30].copy()).requires_grad_(True)
    offsets = [0, 10, 10, 30]
    assert torch.autograd.gradcheck(lambda x: layer(x, offsets=offsets), (rows,))


def test_stacked_and_padded_input_agree_and_padding_is_ignored(problem):
    sets, codebook = problem
    layer = NetVLAD.from_codebook(codebook, sets.descriptors, dtype=DOUBLE)
    stacked = layer(torch.from_numpy(sets.descriptors), offsets=sets.offsets)
    values, mask = padded(sets, fill=1e3)
    torch.testing.assert_close(layer(values, mask), stacked)
    assert stacked.shape == (3, 24)


def test_alpha_makes_the_nearest_centre_weigh_ratio_times_the_second(problem):
    """On the sample, the mean log ratio of the two largest soft weights is
    log(ratio): alpha comes from the distances."""
    sets, codebook = problem
    for ratio in (10.0, 100.0, 1000.0):
        layer = NetVLAD.from_codebook(codebook, sets.descriptors, ratio, dtype=DOUBLE)
        x = torch.from_numpy(sets.descriptors)
        logits = layer.assignment(x).detach()
        top_two = torch.topk(torch.log_softmax(logits, dim=1), 2, dim=1).values
        mean_log_ratio = float((top_two[:, 0] - top_two[:, 1]).mean())
        assert mean_log_ratio == pytest.approx(math.log(ratio), rel=1e-9)
        distances = ((sets.descriptors[:, None] - codebook.centers[None]) ** 2).sum(-1)
        nearest_two = np.sort(distances, axis=1)[:, :2]
        expected = math.log(ratio) / np.mean(nearest_two[:, 1] - nearest_two[:, 0])
        assert layer.alpha == pytest.approx(expected, rel=1e-9)


def test_centres_are_stored_as_they_are(problem):
    sets, codebook = problem
    layer = NetVLAD.from_codebook(codebook, sets.descriptors, dtype=DOUBLE)
    np.testing.assert_array_equal(layer.centers.detach().numpy(), codebook.centers)


def test_converges_to_hard_vlad_as_alpha_grows(problem):
    sets, codebook = problem
    expected = vlad.encode(sets, codebook, power=1.0, intra=True, l2=True)
    x = torch.from_numpy(sets.descriptors)
    errors = []
    for ratio in (1e2, 1e8, 1e32, 1e300):
        layer = NetVLAD.from_codebook(codebook, sets.descriptors, ratio, dtype=DOUBLE)
        with torch.no_grad():
            result = layer(x, offsets=sets.offsets).numpy()
        errors.append(float(np.abs(result - expected).max()))
    assert errors == sorted(errors, reverse=True)
    assert errors[-1] < 1e-12 < errors[0]


def test_no_tensor_of_every_descriptor_centre_and_feature():
    """The residuals are never formed: no intermediate holds N * K * F values."""
    rng = np.random.default_rng(0)
    n_images, n_rows, n_features, n_clusters = 4, 50, 32, 16
    x = torch.from_numpy(rng.standard_normal((n_images, n_rows, n_features)))
    layer = NetVLAD(n_clusters, n_features, dtype=DOUBLE)
    largest = []

    class Sizes(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            result = func(*args, **(kwargs or {}))
            if torch.is_tensor(result):
                largest.append(result.numel())
            return result

    with Sizes():
        layer(x)
    assert largest and max(largest) < n_images * n_rows * n_clusters * n_features / 4


def test_normalize_input_normalises_descriptors_and_the_sample(problem):
    sets, codebook = problem
    layer = NetVLAD.from_codebook(
        codebook, sets.descriptors, normalize_input=True, dtype=DOUBLE
    )
    x = torch.from_numpy(sets.descriptors)
    scaled = layer(3.0 * x, offsets=sets.offsets)
    torch.testing.assert_close(scaled, layer(x, offsets=sets.offsets))
    unit = sets.descriptors / np.linalg.norm(sets.descriptors, axis=1, keepdims=True)
    assert layer.alpha == pytest.approx(sharpness_for(codebook.centers, unit))


def test_float32_layer_on_float32_input(problem):
    sets, codebook = problem
    layer = NetVLAD.from_codebook(codebook, sets.descriptors)
    result = layer(
        torch.from_numpy(sets.descriptors.astype(np.float32)), offsets=sets.offsets
    )
    assert result.dtype == torch.float32
    norms = torch.linalg.norm(result, dim=1)
    torch.testing.assert_close(norms, torch.ones(3))


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
    with pytest.raises(ValueError, match=r"must have shape \(n_descriptors"):
        layer(torch.ones(2, 5, 4), offsets=[0, 5, 10])
    with pytest.raises(ValueError, match="end at the number of descriptors"):
        layer(torch.ones(10, 4), offsets=[0, 5])
    with pytest.raises(ValueError, match="n_clusters must be an integer >= 1"):
        NetVLAD(0, 4)
