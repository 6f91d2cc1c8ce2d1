"""The JAX aggregator: a jitted ``segment_sum`` on the default device."""

from __future__ import annotations

import functools

import numpy as np

from vlad.backends.jax_runtime import MIN_ROW_BUCKET, bucket_size, import_jax
from vlad.core.aggregators.segments import image_of_rows

__all__ = ["aggregate_jax"]


def aggregate_jax(
    descriptors: np.ndarray,
    labels: np.ndarray,
    offsets: np.ndarray,
    centers: np.ndarray,
) -> np.ndarray:
    """``jax.ops.segment_sum`` of the residuals ``x - c_label``, jitted.

    Rows and images are padded to power-of-two buckets (padding rows go to a
    segment past the end, which ``segment_sum`` drops), so compilation happens
    once per bucket, not per call. Residuals are formed in the input's dtype
    and summed in float64 (JAX's 64-bit mode is switched on for the call), so
    float32 results stay accurate however many descriptors an image has.
    Requires JAX (``pip install 'vlad[jax]'``).
    """
    jax = import_jax()
    n_images = offsets.shape[0] - 1
    n_clusters, n_features = centers.shape
    n_rows = descriptors.shape[0]
    padded_rows = bucket_size(n_rows, MIN_ROW_BUCKET)
    padded_segments = bucket_size(n_images) * n_clusters
    segments = np.full(padded_rows, padded_segments, dtype=np.int32)
    segments[:n_rows] = image_of_rows(offsets) * n_clusters + labels
    padded_labels = np.zeros(padded_rows, dtype=np.int32)
    padded_labels[:n_rows] = labels
    padded_descriptors = np.zeros((padded_rows, n_features), dtype=descriptors.dtype)
    padded_descriptors[:n_rows] = descriptors
    with jax.enable_x64(True):
        sums = _residual_segment_sum()(
            padded_descriptors, centers, padded_labels, segments, padded_segments
        )
        sums = np.array(sums[: n_images * n_clusters])
    return sums.reshape(n_images, n_clusters, n_features)


@functools.cache
def _residual_segment_sum():
    """The jitted kernel, built on first use."""
    jax = import_jax()

    @functools.partial(jax.jit, static_argnames=("num_segments",))
    def residual_segment_sum(descriptors, centers, labels, segments, num_segments):
        # segment_sum adds row after row: float64 keeps huge images accurate.
        residuals = (descriptors - centers[labels]).astype(jax.numpy.float64)
        sums = jax.ops.segment_sum(residuals, segments, num_segments=num_segments)
        return sums.astype(descriptors.dtype)

    return residual_segment_sum
