"""Normalisation: order, guards, and each step against a hand computation."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from conftest import DTYPES
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import vlad


def reference_normalize(residuals, counts, *, power, intra, l2, mass):
    """Straightforward per-image loops in float64, in the documented order."""
    out = []
    for image, image_counts in zip(residuals.astype(np.float64), counts, strict=True):
        blocks = image.copy()
        if mass:
            for k, count in enumerate(image_counts):
                if count:
                    blocks[k] /= count
        blocks = np.sign(blocks) * np.abs(blocks) ** power
        if intra:
            for k in range(len(blocks)):
                norm = np.sqrt(np.sum(blocks[k] ** 2))
                if norm > 0:
                    blocks[k] /= norm
        vector = blocks.ravel()
        if l2:
            norm = np.sqrt(np.sum(vector**2))
            if norm > 0:
                vector /= norm
        out.append(vector)
    return np.array(out).reshape(len(residuals), -1)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    ("power", "intra", "l2", "mass"),
    list(
        itertools.product([1.0, 0.5, 0.3], [False, True], [False, True], [False, True])
    ),
)
def test_every_combination_matches_the_reference(dtype, power, intra, l2, mass):
    rng = np.random.default_rng(0)
    residuals = rng.normal(size=(5, 4, 3)).astype(dtype)
    residuals[1, 2] = 0.0  # an empty centre
    residuals[3] = 0.0  # an image without descriptors
    counts = rng.integers(1, 9, size=(5, 4))
    counts[1, 2] = 0
    counts[3] = 0
    result = vlad.normalize(
        residuals, power=power, intra=intra, l2=l2, counts=counts if mass else None
    )
    expected = reference_normalize(
        residuals, counts, power=power, intra=intra, l2=l2, mass=mass
    )
    assert result.dtype == dtype and result.shape == (5, 12)
    np.testing.assert_allclose(
        result, expected, rtol=1e-5 if dtype == np.float32 else 1e-12
    )


def test_hand_computed_steps():
    residuals = np.array([[[4.0, -9.0], [0.0, 3.0]]])
    np.testing.assert_allclose(
        vlad.normalize(residuals, power=0.5, intra=False, l2=False),
        [[2.0, -3.0, 0.0, np.sqrt(3.0)]],
    )
    np.testing.assert_allclose(
        vlad.normalize(residuals, intra=True, l2=False),
        [[4 / np.sqrt(97), -9 / np.sqrt(97), 0.0, 1.0]],
    )
    np.testing.assert_allclose(
        vlad.normalize(residuals, intra=False, l2=True),
        [[4.0, -9.0, 0.0, 3.0]] / np.sqrt(106),
    )
    np.testing.assert_allclose(
        vlad.normalize(residuals, intra=False, l2=False, counts=[[2, 3]]),
        [[2.0, -4.5, 0.0, 1.0]],
    )


def test_power_comes_before_intra_and_l2():
    residuals = np.array([[[16.0, 0.0], [0.0, 1.0]]])
    # sqrt first gives (4, 0, 0, 1), then L2: /sqrt(17); intra would make (1, 0, 0, 1).
    np.testing.assert_allclose(
        vlad.normalize(residuals, power=0.5, intra=False),
        [[4.0, 0.0, 0.0, 1.0]] / np.sqrt(17.0),
    )


@given(
    residuals=hnp.arrays(
        np.float32,
        hnp.array_shapes(min_dims=3, max_dims=3, max_side=4),
        # Norms below the 1e-12 guard are documented to shrink, not normalise.
        elements=st.floats(2**-10, 2**20, width=32)
        | st.floats(-(2**20), -(2**-10), width=32)
        | st.just(0.0),
    ),
    power=st.sampled_from([1.0, 0.5, 0.25]),
    intra=st.booleans(),
)
def test_zero_stays_zero_and_norms_are_one(residuals, power, intra):
    result = vlad.normalize(residuals, power=power, intra=intra, l2=True)
    assert np.all(np.isfinite(result))
    flat = residuals.reshape(len(residuals), -1)
    norms = np.linalg.norm(result.astype(np.float64), axis=1)
    zero_rows = ~flat.any(axis=1)
    assert np.all(result[zero_rows] == 0)
    np.testing.assert_allclose(norms[~zero_rows], 1.0, rtol=1e-5)
    np.testing.assert_array_equal(result == 0, flat == 0)


def test_input_is_not_modified():
    residuals = np.array([[[3.0, 4.0]]])
    vlad.normalize(residuals, power=0.5)
    assert residuals.tolist() == [[[3.0, 4.0]]]


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"power": 0.0}, ValueError, r"power must be a number in \(0, 1\]; got 0.0"),
        ({"power": 2.0}, ValueError, "got 2.0"),
        ({"power": float("nan")}, ValueError, "got nan"),
        ({"power": "half"}, TypeError, "got 'half'"),
        ({"residuals": np.ones((2, 6))}, ValueError, r"must have shape \(n_images"),
        ({"counts": np.ones((2, 2))}, ValueError, r"counts must have shape \(1, 2\)"),
    ],
)
def test_bad_input_gets_a_clear_error(kwargs, error, message):
    arguments = {"residuals": np.ones((1, 2, 3))}
    arguments.update(kwargs)
    with pytest.raises(error, match=message):
        vlad.normalize(**arguments)


def test_no_images():
    assert vlad.normalize(np.zeros((0, 2, 3))).shape == (0, 6)


def test_large_float32_values_do_not_overflow_the_norms():
    residuals = np.full((1, 1, 4), 3e19, np.float32)
    np.testing.assert_allclose(vlad.normalize(residuals, intra=False), [[0.5] * 4])
    np.testing.assert_allclose(vlad.normalize(residuals, intra=True), [[0.5] * 4])
