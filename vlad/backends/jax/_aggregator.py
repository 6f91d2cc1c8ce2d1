"""The JAX aggregator: blocked float32 scatter-adds on JAX's default device."""

from __future__ import annotations

import numpy as np

from vlad.backends.jax import _kernels as jax_kernels
from vlad.backends.jax import import_jax
from vlad.backends.jax._batches import host_chunks, plan_batch, precision_scope

__all__ = ["aggregate_jax"]


def aggregate_jax(
    descriptors: np.ndarray,
    labels: np.ndarray,
    offsets: np.ndarray,
    centers: np.ndarray,
    *,
    residual_norm: bool = False,
) -> np.ndarray:
    """Scatter-add of the residuals ``x - c_label`` with JAX, jitted.

    The rows go to the device a chunk at a time, straight from the caller's
    arrays; the residuals are summed in the input's dtype by blocks of at most
    4096 rows of one image, then the blocks of each image are added, so
    float32 results stay accurate however many descriptors an image has.
    Chunk, image and block counts are rounded to powers of two, so the
    kernels compile once per size class. With ``residual_norm``, each
    residual is divided by its L2 norm before the scatter. Requires JAX (the
    ``jax`` extra).
    """
    jax = import_jax()
    n_images = offsets.shape[0] - 1
    n_clusters, n_features = centers.shape
    plan = plan_batch(offsets, n_features, descriptors.itemsize, n_clusters)
    chunks = host_chunks(plan, descriptors, labels.astype(np.int32))
    with precision_scope(descriptors.dtype):
        centers = jax.device_put(centers)
        if len(plan.chunks) == 1:
            _, _, (rows, row_labels) = next(chunks)
            sums = jax_kernels.aggregate_one_chunk()(
                rows,
                row_labels,
                plan.layout,
                centers,
                plan.block_images,
                n_segments=plan.n_segments,
                residual_norm=residual_norm,
                n_images=plan.padded_images,
                blocks_are_images=plan.blocks_are_images,
            )
        else:
            plan = plan.on_device()
            state = jax_kernels.zero_state(
                plan.n_segments, n_features, descriptors.dtype
            )
            step = jax_kernels.aggregate_chunk()
            for start, first_new, (rows, row_labels) in chunks:
                state = step(
                    state,
                    rows,
                    row_labels,
                    start,
                    first_new,
                    plan.layout,
                    centers,
                    residual_norm=residual_norm,
                )
            sums = jax_kernels.finish_residuals()(
                state,
                plan.block_images,
                n_images=plan.padded_images,
                blocks_are_images=plan.blocks_are_images,
            )
        sums = np.require(jax.device_get(sums)[:n_images], requirements=["C", "W"])
    return sums.reshape(n_images, n_clusters, n_features)
