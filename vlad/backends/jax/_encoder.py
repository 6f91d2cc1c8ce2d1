"""End-to-end VLAD encoding on a JAX device (GPU, TPU or CPU)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from vlad.backends._device_encoder import DeviceEncoder
from vlad.backends.jax import _kernels as jax_kernels
from vlad.backends.jax import import_jax
from vlad.backends.jax._batches import (
    host_chunks,
    plan_batch,
    precision_scope,
    raise_unless_finite,
)
from vlad.core._codebook import Codebook
from vlad.core._descriptors import DescriptorSets, as_descriptor_sets
from vlad.core._options import EncodingOptions
from vlad.core._validation import check_n_features

__all__ = ["JaxEncoder"]


class JaxEncoder(DeviceEncoder):
    """Assign, aggregate and normalise on a JAX device (GPU, TPU or CPU).

    The codebook moves to the device once, at construction. Each call sends
    the descriptors a chunk of rows at a time, straight from the caller's
    array (each transfer overlaps the previous chunk's work), finds the
    nearest centres with the distance product at full float32 precision
    (``jax.lax.Precision.HIGHEST``: never TF32), sums the residuals in float32
    by blocks of at most 4096 rows, and brings back only the vectors (or
    leaves them on the device). Chunk, image and block counts are rounded to
    powers of two, so the kernels compile once per size class, not per batch.
    Labels are :func:`vlad.assign`'s and vectors equal :func:`vlad.encode`'s
    up to float rounding.

    Parameters
    ----------
    codebook : Codebook or array-like of shape (n_clusters, n_features)
    options : EncodingOptions, optional
        The normalisation, as in :func:`vlad.encode`. Residuals are summed by
        JAX, so its ``aggregator`` must be ``"auto"`` or ``"jax"``.
    device : jax.Device, optional
        Where to compute; JAX's default device (the first GPU if any) otherwise.
    keep_on_device : bool, default=False
        Return the vectors as a ``jax.Array`` on ``device`` (for a search that
        follows there) instead of a NumPy array.
    **settings
        Fields of :class:`vlad.EncodingOptions` replacing those of ``options``.

    Attributes
    ----------
    options : EncodingOptions
        The settings in use.
    n_clusters, n_features : int
        The codebook's shape.

    Raises
    ------
    ImportError
        JAX is not installed (the ``jax`` extra).
    ValueError
        Bad settings, or another aggregator than JAX's.

    See Also
    --------
    vlad.encode : The NumPy pipeline this reproduces.
    vlad.TorchEncoder : The same with PyTorch.

    Examples
    --------
    >>> import vlad
    >>> sets = vlad.datasets.make_descriptor_sets(4, 50, 16, seed=0)
    >>> codebook = vlad.fit_codebook(sets, 8, seed=0)
    >>> encoder = vlad.JaxEncoder(codebook)  # doctest: +SKIP
    >>> encoder(sets).shape  # doctest: +SKIP
    (4, 128)
    """

    backend = "jax"

    def __init__(
        self,
        codebook: Codebook | ArrayLike,
        options: EncodingOptions | None = None,
        *,
        device: Any = None,
        keep_on_device: bool = False,
        **settings,
    ):
        super().__init__(codebook, options, keep_on_device=keep_on_device, **settings)
        self._device = device
        self._codebook(np.dtype(np.float32))

    def _import_runtime(self) -> Any:
        return import_jax()

    def _codebook_on_device(self, dtype: np.dtype) -> tuple:
        jax = import_jax()
        centers = self._centers.astype(dtype)
        arrays = (
            centers,
            np.ascontiguousarray(-2.0 * centers.T),
            np.einsum("kf,kf->k", centers, centers),
        )
        with precision_scope(dtype):
            return jax.device_put(arrays, self._device)

    def __call__(
        self, descriptor_sets: DescriptorSets | Sequence[ArrayLike] | np.ndarray
    ) -> Any:
        """VLAD vectors of a batch, shape (n_images, n_clusters * n_features).

        Parameters
        ----------
        descriptor_sets : DescriptorSets, list of (L_t, F) arrays or (T, L, F) array
            float64 descriptors give float64 vectors (computed in JAX's 64-bit
            mode), others float32 (as :func:`vlad.encode`).

        Returns
        -------
        vectors : ndarray or jax.Array of shape (n_images, n_clusters * n_features)
            A ``jax.Array`` on the device when ``keep_on_device`` is set.

        Raises
        ------
        ValueError
            Dimension mismatch, or NaN/inf descriptors.
        """
        sets = as_descriptor_sets(descriptor_sets)
        check_n_features(sets.n_features, self.n_features)
        descriptors = sets.descriptors
        options = self.options
        normalization = self._normalization()
        jax = import_jax()
        plan = plan_batch(
            sets.offsets, self.n_features, descriptors.itemsize, self.n_clusters
        )
        chunks = host_chunks(plan, descriptors)
        with precision_scope(sets.dtype):
            codebook = self._codebook(sets.dtype)
            if len(plan.chunks) == 1:
                _, _, (chunk,) = next(chunks)
                vectors, finite = jax_kernels.encode_one_chunk()(
                    chunk,
                    plan.layout,
                    codebook,
                    plan.block_images,
                    n_segments=plan.n_segments,
                    residual_norm=options.residual_norm,
                    n_images=plan.padded_images,
                    blocks_are_images=plan.blocks_are_images,
                    **normalization,
                )
            else:
                plan = plan.on_device(self._device)
                state = jax_kernels.zero_state(
                    plan.n_segments, self.n_features, sets.dtype, self._device
                )
                step = jax_kernels.encode_chunk()
                for start, first_new, (chunk,) in chunks:
                    state = step(
                        state,
                        chunk,
                        start,
                        first_new,
                        plan.layout,
                        codebook,
                        residual_norm=options.residual_norm,
                    )
                finite = state[2]
                vectors = jax_kernels.finish_vectors()(
                    state,
                    plan.block_images,
                    n_images=plan.padded_images,
                    blocks_are_images=plan.blocks_are_images,
                    **normalization,
                )
            if plan.padded_images != plan.n_images:
                vectors = vectors[: plan.n_images]
            if self.keep_on_device:
                raise_unless_finite(bool(finite), descriptors)
                return vectors
            vectors, finite = jax.device_get((vectors, finite))
        raise_unless_finite(bool(finite), descriptors)
        # device_get may give a read-only view of the device buffer.
        return np.require(vectors, requirements=["W"])
