"""End-to-end VLAD encoding on a JAX device (GPU, TPU or CPU)."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from vlad.backends.jax_runtime import MIN_ROW_BUCKET, bucket_size, import_jax
from vlad.core.aggregators.segments import image_of_rows
from vlad.core.codebook import Codebook, as_centers
from vlad.core.descriptors import DescriptorSets, as_descriptor_sets
from vlad.core.normalization import NORM_FLOOR
from vlad.core.options import EncodingOptions
from vlad.core.validation import check_n_features

__all__ = ["JaxEncoder"]


class JaxEncoder:
    """Assign, aggregate and normalise in one jitted JAX computation.

    The codebook is moved to the device once, at construction; each call moves
    its batch of descriptors once and brings back only the vectors. Row and
    image counts are padded to power-of-two buckets, so a new batch size
    compiles at most once per bucket. Residuals are summed and normalised in
    float64. Results equal :func:`vlad.encode`'s up to float rounding.

    Parameters
    ----------
    codebook : Codebook or array-like of shape (n_clusters, n_features)
    options : EncodingOptions, optional
        The normalisation, as in :func:`vlad.encode`. Residuals are summed by
        JAX, so its ``aggregator`` must be ``"auto"`` or ``"jax"``.
    device : jax.Device, optional
        Where to compute; JAX's default device (the first GPU if any) otherwise.
    **settings
        Fields of :class:`vlad.EncodingOptions` replacing those of ``options``.

    Attributes
    ----------
    options : EncodingOptions
        The settings in use.

    Raises
    ------
    ImportError
        JAX is not installed (``pip install 'vlad[jax]'``).
    ValueError
        Bad settings, or another aggregator than JAX's.

    See Also
    --------
    vlad.encode : The NumPy pipeline this reproduces.

    Examples
    --------
    >>> import vlad
    >>> sets = vlad.datasets.make_descriptor_sets(4, 50, 16, seed=0)
    >>> codebook = vlad.fit_codebook(sets, 8, seed=0)
    >>> encoder = vlad.JaxEncoder(codebook)  # doctest: +SKIP
    >>> encoder(sets).shape  # doctest: +SKIP
    (4, 128)
    """

    def __init__(
        self,
        codebook: Codebook | ArrayLike,
        options: EncodingOptions | None = None,
        *,
        device: Any = None,
        **settings,
    ):
        self.options = EncodingOptions.resolve(options, **settings)
        if self.options.aggregator not in ("auto", "jax"):
            raise ValueError(
                "JaxEncoder sums residuals with JAX: its aggregator must be 'auto' "
                f"or 'jax'; got {self.options.aggregator_name!r}"
            )
        jax = import_jax()
        centers = as_centers(codebook)
        self._device = device
        with jax.enable_x64(True):
            self._centers = {
                dtype: jax.device_put(centers.astype(dtype), device)
                for dtype in (np.dtype(np.float32), np.dtype(np.float64))
            }
        self.n_clusters, self.n_features = centers.shape

    def __call__(
        self, descriptor_sets: DescriptorSets | Sequence[ArrayLike] | np.ndarray
    ) -> np.ndarray:
        """VLAD vectors of a batch, shape (n_images, n_clusters * n_features).

        Parameters
        ----------
        descriptor_sets : DescriptorSets, list of (L_t, F) arrays or (T, L, F) array
            float64 descriptors give float64 vectors, others float32 (as
            :func:`vlad.encode`).

        Raises
        ------
        ValueError
            Dimension mismatch, or NaN/inf descriptors.
        """
        jax = import_jax()
        sets = as_descriptor_sets(descriptor_sets)
        check_n_features(sets.n_features, self.n_features)
        n_images, n_rows = len(sets), sets.descriptors.shape[0]
        padded_images = bucket_size(n_images)
        padded_rows = bucket_size(n_rows, MIN_ROW_BUCKET)
        descriptors = np.zeros((padded_rows, self.n_features), dtype=sets.dtype)
        descriptors[:n_rows] = sets.descriptors
        images = np.full(padded_rows, padded_images, dtype=np.int32)
        images[:n_rows] = image_of_rows(sets.offsets)
        with jax.enable_x64(True):
            descriptors, images = jax.device_put((descriptors, images), self._device)
            vectors, finite = _encode_padded()(
                descriptors,
                images,
                self._centers[sets.dtype],
                n_images=padded_images,
                power=self.options.power,
                intra=self.options.intra,
                l2=self.options.l2,
                mass=self.options.mass,
            )
            if not bool(finite):
                raise ValueError("descriptors contain NaN or infinite values")
            return np.asarray(vectors[:n_images])


@functools.cache
def _encode_padded():
    """The jitted end-to-end kernel, built on first use."""
    jax = import_jax()
    jnp = jax.numpy

    @functools.partial(
        jax.jit, static_argnames=("n_images", "power", "intra", "l2", "mass")
    )
    def encode_padded(
        descriptors, images, centers, *, n_images, power, intra, l2, mass
    ):
        n_clusters, n_features = centers.shape
        distances = descriptors @ (-2.0 * centers.T) + jnp.sum(
            centers * centers, axis=1
        )
        labels = jnp.argmin(distances, axis=1)
        nearest = jnp.take_along_axis(distances, labels[:, None], axis=1)
        valid = images < n_images
        finite = jnp.all(jnp.isfinite(nearest[:, 0]) | ~valid)
        # Padding rows carry image id n_images: segment_sum drops them.
        segments = images * n_clusters + labels
        # segment_sum adds row after row: float64 keeps huge images accurate.
        residuals = jax.ops.segment_sum(
            (descriptors - centers[labels]).astype(jnp.float64),
            segments,
            num_segments=n_images * n_clusters,
        ).reshape(n_images, n_clusters, n_features)
        if mass:
            counts = jax.ops.segment_sum(
                jnp.ones_like(labels, dtype=residuals.dtype),
                segments,
                num_segments=n_images * n_clusters,
            ).reshape(n_images, n_clusters, 1)
            residuals = residuals / jnp.maximum(counts, 1)
        if power != 1.0:
            residuals = jnp.sign(residuals) * jnp.abs(residuals) ** power
        if intra:
            norms = jnp.linalg.norm(residuals, axis=2, keepdims=True)
            residuals = residuals / jnp.maximum(norms, NORM_FLOOR)
        vectors = residuals.reshape(n_images, n_clusters * n_features)
        if l2:
            norms = jnp.linalg.norm(vectors, axis=1, keepdims=True)
            vectors = vectors / jnp.maximum(norms, NORM_FLOOR)
        return vectors.astype(descriptors.dtype), finite

    return encode_padded
