"""TorchEncoder: PyTorch on the CPU equals the NumPy pipeline, reads tensors in
place, finds exact labels and keeps TF32 off for the distance product."""

from __future__ import annotations

import doctest
import itertools
import re
from pathlib import Path

import numpy as np
import pytest
from conftest import DTYPES
from hypothesis import given, settings
from hypothesis import strategies as st
from photo_descriptors import assert_same_nearest, photo_problem

import vlad
from vlad.backends.torch import _kernels as torch_kernels
from vlad.core.aggregators._loop import aggregate_loop

torch = pytest.importorskip("torch")
from torch.overrides import TorchFunctionMode  # noqa: E402


@pytest.fixture(scope="module")
def problem():
    sets = vlad.datasets.make_descriptor_sets(30, 60, 16, ragged=True, seed=4)
    return sets, vlad.fit_codebook(sets, 6, seed=0)


def assert_vectors_equal(result, expected, tolerance=1e-5):
    result = result.cpu().numpy() if torch.is_tensor(result) else result
    assert result.shape == expected.shape and result.dtype == expected.dtype
    np.testing.assert_allclose(result, expected, rtol=0, atol=tolerance)


class RecordProducts(TorchFunctionMode):
    """Records, for every matrix product, its first operand's data pointer and
    the float32 precision settings in force when it ran."""

    def __init__(self):
        super().__init__()
        self.products = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func in (torch.addmm, torch.matmul, torch.mm):
            matmul = torch.backends.cuda.matmul
            self.products.append(
                {
                    "operand": args[1 if func is torch.addmm else 0].data_ptr(),
                    "cuda": getattr(matmul, "fp32_precision", None),
                    "allow_tf32": None
                    if hasattr(matmul, "fp32_precision")
                    else matmul.allow_tf32,
                }
            )
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize(
    ("power", "intra", "l2", "mass"),
    list(itertools.product([1.0, 0.5], [False, True], [False, True], [False, True])),
)
def test_equals_encode(problem, power, intra, l2, mass):
    sets, codebook = problem
    options = {"power": power, "intra": intra, "l2": l2, "mass": mass}
    expected = vlad.encode(sets, codebook, **options)
    result = vlad.TorchEncoder(codebook, device="cpu", **options)(sets)
    assert isinstance(result, np.ndarray)
    assert_vectors_equal(result, expected, 1e-5 * np.abs(expected).max())
    assert np.all(result[sets.lengths == 0] == 0)


@settings(max_examples=30)
@given(
    lengths=st.lists(st.integers(0, 300), min_size=1, max_size=8),
    n_clusters=st.integers(1, 9),
    seed=st.integers(0, 2**16),
)
def test_ragged_sets_equal_encode(lengths, n_clusters, seed):
    rng = np.random.default_rng(seed)
    arrays = [
        rng.gamma(1.0, 1.0, (length, 12)).astype(np.float32) for length in lengths
    ]
    sets = vlad.DescriptorSets.from_list(arrays, n_features=12)
    centers = rng.gamma(1.0, 1.0, (n_clusters, 12)).astype(np.float32)
    expected = vlad.encode(sets, centers)
    assert_vectors_equal(vlad.TorchEncoder(centers, device="cpu")(sets), expected)


def test_one_real_photo_equals_encode():
    descriptors, codebook = photo_problem()
    expected = vlad.encode([descriptors], codebook)
    result = vlad.TorchEncoder(codebook, device="cpu")([descriptors])
    assert_vectors_equal(result, expected)


def test_labels_equal_assign():
    descriptors, codebook = photo_problem()
    synthetic = vlad.datasets.make_descriptor_sets(20, 500, 128, seed=3).descriptors
    for x, centers in [
        (descriptors, codebook.centers),
        (synthetic, synthetic[::97][:64]),
    ]:
        c = torch.from_numpy(centers)
        labels, _ = torch_kernels.nearest_centers(
            torch.from_numpy(x), (-2 * c.T).contiguous(), (c * c).sum(1)
        )
        assert_same_nearest(labels.numpy(), vlad.assign(x, centers), x, centers)


@pytest.mark.parametrize("setting", ["fp32_precision", "allow_tf32"])
def test_tf32_is_off_for_the_distance_product_and_restored_after(problem, setting):
    """Even when the program allows TF32, the product runs at IEEE float32;
    the program's setting is back afterwards."""
    sets, codebook = problem
    matmul = torch.backends.cuda.matmul
    new_api = hasattr(matmul, "fp32_precision")
    if setting == "fp32_precision" and not new_api:
        pytest.skip("this PyTorch has no fp32_precision setting")
    if setting == "allow_tf32" and new_api:
        pytest.skip("this PyTorch refuses to mix allow_tf32 with fp32_precision")
    previous = getattr(matmul, setting)
    setattr(matmul, setting, "tf32" if new_api else True)
    try:
        with RecordProducts() as recorder:
            vlad.TorchEncoder(codebook, device="cpu")(sets)
        assert recorder.products
        for product in recorder.products:
            if new_api:
                assert product["cuda"] == "ieee"
            else:
                assert product["allow_tf32"] is False
        assert getattr(matmul, setting) == ("tf32" if new_api else True)
    finally:
        setattr(matmul, setting, previous)


def test_tensors_are_read_in_place_and_give_tensors(problem):
    sets, codebook = problem
    encoder = vlad.TorchEncoder(codebook, device="cpu")
    images = torch.from_numpy(sets.descriptors[:1200].copy()).reshape(20, 60, 16)
    with RecordProducts() as recorder:
        result = encoder(images)
    assert recorder.products[0]["operand"] == images.data_ptr()
    assert torch.is_tensor(result) and result.device.type == "cpu"
    expected = vlad.encode(images.numpy(), codebook)
    assert_vectors_equal(result, expected)

    flat = torch.from_numpy(sets.descriptors)
    with RecordProducts() as recorder:
        result = encoder(flat, offsets=torch.from_numpy(sets.offsets))
    assert recorder.products[0]["operand"] == flat.data_ptr()
    assert_vectors_equal(result, vlad.encode(sets, codebook))

    listed = [torch.from_numpy(sets[t]) for t in range(len(sets))]
    assert_vectors_equal(encoder(listed), vlad.encode(sets, codebook))


def test_numpy_input_is_not_copied_on_the_cpu(problem):
    sets, codebook = problem
    with RecordProducts() as recorder:
        vlad.TorchEncoder(codebook, device="cpu")(sets)
    assert recorder.products[0]["operand"] == sets.descriptors.ctypes.data


def test_keep_on_device_returns_a_tensor(problem):
    sets, codebook = problem
    result = vlad.TorchEncoder(codebook, device="cpu", keep_on_device=True)(sets)
    assert torch.is_tensor(result)
    assert_vectors_equal(result, vlad.encode(sets, codebook))


@pytest.mark.parametrize("dtype", DTYPES)
def test_dtype_follows_the_descriptors(problem, dtype):
    sets, codebook = problem
    sets = vlad.DescriptorSets(sets.descriptors.astype(dtype), sets.offsets)
    encoder = vlad.TorchEncoder(codebook, device="cpu")
    tolerance = 1e-5 if dtype == np.float32 else 1e-12
    expected = vlad.encode(sets, codebook)
    assert_vectors_equal(encoder(sets), expected, tolerance)
    tensor = encoder(torch.from_numpy(sets.descriptors), sets.offsets)
    assert tensor.dtype == (torch.float64 if dtype == np.float64 else torch.float32)
    half = encoder(torch.from_numpy(sets.descriptors).half(), sets.offsets)
    assert half.dtype == torch.float32


def test_float32_accuracy_when_one_image_is_huge():
    """300,000 descriptors in one image, summed in float32 by blocks: within
    1e-5 of the float64 loop reference, for the encoder and the aggregator."""
    rng = np.random.default_rng(1)
    descriptors = rng.gamma(0.5, 40.0, size=(300_000, 8)).astype(np.float32)
    centers = descriptors[::100_000][:3].copy()
    labels = vlad.assign(descriptors, centers)
    offsets = np.array([0, descriptors.shape[0]])
    reference = aggregate_loop(
        descriptors.astype(np.float64), labels, offsets, centers.astype(np.float64)
    ).reshape(1, -1)
    raw = {"power": 1.0, "intra": False, "l2": False}
    encoded = vlad.TorchEncoder(centers, device="cpu", **raw)([descriptors])
    aggregated = vlad.aggregate(descriptors, labels, offsets, centers, "torch")
    for result in (encoded, aggregated.reshape(1, -1)):
        error = np.linalg.norm(result - reference) / np.linalg.norm(reference)
        assert error <= 1e-5


def test_no_images_and_empty_images(problem):
    _, codebook = problem
    encoder = vlad.TorchEncoder(codebook, device="cpu")
    assert encoder(vlad.DescriptorSets(np.empty((0, 16), np.float32), [0])).shape == (
        0,
        96,
    )
    blank = vlad.DescriptorSets(np.empty((0, 16), np.float32), [0, 0, 0])
    np.testing.assert_array_equal(encoder(blank), np.zeros((2, 96), np.float32))


@pytest.mark.parametrize(
    ("arguments", "error", "message"),
    [
        (([np.ones((3, 5), np.float32)],), ValueError, "descriptors have 5 features"),
        (([np.full((2, 16), np.nan, np.float32)],), ValueError, "contains 32 NaN"),
        (([np.full((2, 16), 1e37, np.float32)],), ValueError, "overflow"),
        ((torch.ones(4, 16),), ValueError, r"with offsets; got shape \(4, 16\)"),
        ((torch.ones(16),), ValueError, "must have shape"),
        ((torch.ones(4, 16), [0, 3]), ValueError, "end at the number"),
        (([np.ones((3, 16))], [0, 3]), TypeError, "offsets go with a flat"),
    ],
)
def test_bad_input_gets_a_clear_error(problem, arguments, error, message):
    _, codebook = problem
    with pytest.raises(error, match=message):
        vlad.TorchEncoder(codebook, device="cpu")(*arguments)


def test_bad_settings_get_a_clear_error(problem):
    _, codebook = problem
    with pytest.raises(ValueError, match="aggregator must be 'auto' or 'torch'"):
        vlad.TorchEncoder(codebook, aggregator="numba")
    with pytest.raises(TypeError, match="keep_on_device must be True or False"):
        vlad.TorchEncoder(codebook, keep_on_device=1)


def test_the_pytorch_examples_of_the_docs_run():
    """docs/accelerators.md shows its PyTorch examples as text (PyTorch is
    optional): here they run, after the page's Python examples they build on."""
    page = Path(__file__).resolve().parents[1] / "docs" / "accelerators.md"
    blocks = re.findall(r"^```(python|text)\n(.*?)^```", page.read_text(), re.M | re.S)
    examples = "\n".join(body for kind, body in blocks if kind == "python")
    test = doctest.DocTestParser().get_doctest(examples, {}, page.name, str(page), 0)
    runner = doctest.DocTestRunner(
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    )
    runner.run(test, clear_globs=False)
    assert runner.failures == 0
    pytorch = [body for kind, body in blocks if kind == "text" and "torch" in body]
    assert len(pytorch) == 2
    for code in pytorch:
        exec(compile(code, str(page), "exec"), test.globs)
