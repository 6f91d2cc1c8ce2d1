"""Encoding with a cosine (spherical k-means) codebook."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import vlad


def reference_vlad(images, centers, cosine: bool) -> np.ndarray:
    """VLAD in plain loops: unit descriptors (zero ones skipped) for a cosine
    codebook, nearest centre by a loop, residual sums, intra and L2 norms."""
    vectors = []
    for image in images:
        sums = np.zeros(centers.shape, dtype=np.float64)
        for row in np.asarray(image, dtype=np.float64):
            if cosine:
                length = np.sqrt(np.sum(row**2))
                if length == 0:
                    continue
                row = row / length
            distances = [np.sum((row - c) ** 2) for c in centers]
            nearest = int(np.argmin(distances))
            sums[nearest] += row - centers[nearest]
        for k in range(centers.shape[0]):
            norm = np.linalg.norm(sums[k])
            if norm > 0:
                sums[k] /= norm
        vector = sums.ravel()
        norm = np.linalg.norm(vector)
        vectors.append(vector / norm if norm > 0 else vector)
    return np.array(vectors)


@pytest.fixture(scope="module")
def cosine_codebook():
    rng = np.random.default_rng(0)
    training = np.abs(rng.normal(size=(600, 6))) * rng.uniform(0.5, 50, (600, 1))
    return vlad.fit_codebook(training, 5, spherical=True, backend="sklearn", seed=1)


def test_cosine_codebook_encodes_unit_descriptors(cosine_codebook):
    rng = np.random.default_rng(1)
    images = [np.abs(rng.normal(size=(n, 6))) * 7.0 for n in (12, 1, 30)]
    vectors = vlad.encode(images, cosine_codebook)
    expected = reference_vlad(images, cosine_codebook.centers, cosine=True)
    np.testing.assert_allclose(vectors, expected, atol=1e-9)
    # The same centres without the metric: descriptors used as they are.
    plain = vlad.encode(images, cosine_codebook.centers)
    np.testing.assert_allclose(
        plain, reference_vlad(images, cosine_codebook.centers, cosine=False), atol=1e-9
    )
    assert not np.allclose(plain, vectors)


def test_cosine_codebook_survives_save_and_load(cosine_codebook, tmp_path):
    cosine_codebook.save(tmp_path / "codebook.npz")
    loaded = vlad.Codebook.load(tmp_path / "codebook.npz")
    assert loaded.metric == "cosine" and loaded.metadata["metric"] == "cosine"
    images = [np.arange(12.0).reshape(2, 6)]
    np.testing.assert_array_equal(
        vlad.encode(images, loaded), vlad.encode(images, cosine_codebook)
    )


def test_encoder_and_images_use_the_metric(cosine_codebook):
    rng = np.random.default_rng(2)
    images = [np.abs(rng.normal(size=(9, 6))) * 3 for _ in range(3)]
    encoder = vlad.VLADEncoder.from_codebook(cosine_codebook)
    np.testing.assert_allclose(
        encoder.transform(images),
        reference_vlad(images, cosine_codebook.centers, cosine=True),
        atol=1e-9,
    )


@settings(max_examples=40, deadline=None)
@given(
    descriptors=arrays(
        np.float64,
        st.tuples(st.integers(0, 12), st.just(6)),
        elements=st.one_of(
            st.just(0.0),
            # The loop's plain norm would underflow below this.
            st.floats(-1e6, 1e6).filter(lambda value: abs(value) > 1e-100),
        ),
    ),
    split=st.integers(0, 12),
    scale=st.sampled_from([1e-200, 1.0, 3.5, 1e250]),
)
def test_zero_and_scaled_descriptors_on_the_sphere(
    cosine_codebook, descriptors, split, scale
):
    """All-zero descriptors are left out; scaling a descriptor changes nothing."""
    split = min(split, descriptors.shape[0])
    images = [descriptors[:split], descriptors[split:]]
    vectors = vlad.encode(images, cosine_codebook)
    expected = reference_vlad(images, cosine_codebook.centers, cosine=True)
    np.testing.assert_allclose(vectors, expected, atol=1e-7)
    scaled = vlad.encode([image * scale for image in images], cosine_codebook)
    np.testing.assert_allclose(scaled, vectors, atol=1e-7)
    # An image of zero descriptors only is a zero vector, as an empty one.
    zeros = vlad.encode([np.zeros((3, 6))], cosine_codebook)
    assert not np.any(zeros)
