"""The jitted JAX computations of :class:`vlad.JaxEncoder` and the ``jax``
aggregator, built on first use.

A batch is processed a chunk of rows at a time (:mod:`vlad.backends._layout`):
each chunk's call finds the nearest centres (or takes the labels given) and
scatter-adds the residuals ``x - c_label`` into float32 partial sums, one per
summation block and centre; the last call sums each image's blocks and
normalises. The state carried from call to call is
``(partials, counts, finite)``: ``partials`` of shape
``(n_blocks * n_clusters, n_features)``, ``counts`` of int32 of shape
``(n_blocks * n_clusters,)`` and a boolean that stays true while every
chunk's nearest distances are finite. Inputs are assumed valid.

The distance product runs at ``jax.lax.Precision.HIGHEST``: on GPUs JAX's
default for float32 products is TF32 (10-bit mantissas), which sends
descriptors to another centre than the nearest.
"""

from __future__ import annotations

import functools

from vlad.backends._layout import BLOCK_ROWS
from vlad.backends.jax import import_jax
from vlad.core._normalization import NORM_FLOOR

#: Up to this many image boundaries, rows find their image by comparing with
#: all of them rather than by binary search.
FEW_IMAGES = 129

__all__ = [
    "aggregate_chunk",
    "aggregate_one_chunk",
    "encode_chunk",
    "encode_one_chunk",
    "finish_residuals",
    "finish_vectors",
    "nearest_centers",
    "zero_state",
]


def nearest_centers(descriptors, scaled_centers_t, squared_norms):
    """Labels ``(rows,)`` and nearest distances (up to ``|x|^2``) ``(rows,)``.

    ``scaled_centers_t`` is ``-2 centers.T``, ``squared_norms`` ``|c|^2``: the
    distances are ``|c|^2 - 2 x.c``, as :func:`vlad.assign` computes them.
    """
    jax = import_jax()
    jnp = jax.numpy
    distances = (
        jnp.matmul(descriptors, scaled_centers_t, precision=jax.lax.Precision.HIGHEST)
        + squared_norms
    )
    nearest = jnp.min(distances, axis=1)
    # The first centre at the minimum (ties to the lowest index, as
    # vlad.assign); faster than argmin's reduction over (index, value) pairs.
    labels = jnp.argmax(distances == nearest[:, None], axis=1)
    return labels, nearest


def _chunk_rows(chunk_start, first_new, n_local, layout):
    """Which rows of a chunk count, and the summation block of each."""
    jnp = import_jax().numpy
    offsets, first_block, n_rows = layout
    local = jnp.arange(n_local, dtype=jnp.int32)
    rows = chunk_start + local
    valid = (local >= first_new) & (rows < n_rows)
    # A few images: compare with every boundary (quick to compile and to run);
    # many: binary search.
    method = "compare_all" if offsets.shape[0] <= FEW_IMAGES else "scan"
    image = jnp.searchsorted(offsets, rows, side="right", method=method)
    image = image.astype(jnp.int32) - 1
    image = jnp.clip(image, 0, first_block.shape[0] - 1)
    block = first_block[image] + (rows - offsets[image]) // BLOCK_ROWS
    return valid, block


def _scatter(state, descriptors, labels, valid, block, centers, residual_norm):
    """Add the residuals of the valid rows into their block's partial sums
    (each divided by its L2 norm with ``residual_norm``)."""
    jnp = import_jax().numpy
    partials, counts, finite = state
    # Masked rows go past the end, where the scatter drops them.
    segments = jnp.where(valid, block * centers.shape[0] + labels, counts.shape[0])
    residuals = descriptors - centers[labels]
    if residual_norm:
        residuals = _unit_rows(residuals)
    partials = partials.at[segments].add(residuals, mode="drop")
    counts = counts.at[segments].add(1, mode="drop")
    return partials, counts, finite


def _unit_rows(residuals):
    """Each row divided by its L2 norm (zero rows stay zero), the norm taken
    of the row divided by its largest magnitude so squares cannot overflow."""
    jnp = import_jax().numpy
    scale = jnp.max(jnp.abs(residuals), axis=1, keepdims=True)
    scale = jnp.where(scale > 0, scale, 1)
    scaled = residuals / scale
    norms = jnp.sqrt(jnp.sum(scaled * scaled, axis=1, keepdims=True))
    return scaled / jnp.where(norms > 0, norms, 1)


def _aggregate_chunk(
    state,
    descriptors,
    labels,
    chunk_start,
    first_new,
    layout,
    centers,
    residual_norm=False,
):
    valid, block = _chunk_rows(chunk_start, first_new, descriptors.shape[0], layout)
    return _scatter(state, descriptors, labels, valid, block, centers, residual_norm)


def _encode_chunk(
    state,
    descriptors,
    chunk_start,
    first_new,
    layout,
    codebook,
    residual_norm=False,
):
    jnp = import_jax().numpy
    centers, scaled_centers_t, squared_norms = codebook
    labels, nearest = nearest_centers(descriptors, scaled_centers_t, squared_norms)
    valid, block = _chunk_rows(chunk_start, first_new, descriptors.shape[0], layout)
    partials, counts, finite = _scatter(
        state, descriptors, labels, valid, block, centers, residual_norm
    )
    finite = finite & jnp.all(jnp.isfinite(nearest) | ~valid)
    return partials, counts, finite


def _block_sums(state, block_images, n_images, blocks_are_images):
    """Per-image sums of the blocks: ``(n_images, K * F)`` and ``(n_images, K)``."""
    jax = import_jax()
    partials, counts, _ = state
    n_blocks = block_images.shape[0]
    partials = partials.reshape(n_blocks, -1)
    counts = counts.reshape(n_blocks, -1)
    if blocks_are_images:
        return partials, counts
    sums, image_counts = (
        jax.ops.segment_sum(
            values, block_images, num_segments=n_images, indices_are_sorted=True
        )
        for values in (partials, counts)
    )
    return sums, image_counts


def _scaled_l2_normalize(values, axis):
    """``values / max(|values|, NORM_FLOOR)`` along ``axis``; the norm is taken
    of values divided by their largest magnitude, so float32 squares of large
    sums cannot overflow."""
    jnp = import_jax().numpy
    scale = jnp.max(jnp.abs(values), axis=axis, keepdims=True)
    scale = jnp.where(scale > 0, scale, 1)
    scaled = values / scale
    norms = scale * jnp.sqrt(jnp.sum(scaled * scaled, axis=axis, keepdims=True))
    return values / jnp.maximum(norms, NORM_FLOOR)


def _finish_vectors(
    state, block_images, *, n_images, blocks_are_images, power, intra, l2, mass
):
    jnp = import_jax().numpy
    sums, counts = _block_sums(state, block_images, n_images, blocks_are_images)
    n_clusters = counts.shape[1]
    vectors = sums.reshape(n_images, n_clusters, -1)
    if mass:
        vectors = vectors / jnp.maximum(counts, 1)[:, :, None].astype(vectors.dtype)
    if power != 1.0:
        vectors = jnp.sign(vectors) * jnp.abs(vectors) ** power
    if intra:
        vectors = _scaled_l2_normalize(vectors, 2)
    vectors = vectors.reshape(n_images, -1)
    if l2:
        vectors = _scaled_l2_normalize(vectors, 1)
    return vectors


def _zero_state(n_segments, n_features, dtype):
    jnp = import_jax().numpy
    return (
        jnp.zeros((n_segments, n_features), dtype),
        jnp.zeros(n_segments, jnp.int32),
        jnp.array(True),
    )


_NORMALIZATION = ("n_images", "blocks_are_images", "power", "intra", "l2", "mass")


@functools.cache
def encode_chunk():
    """Jitted ``(state, descriptors, chunk_start, first_new, layout, codebook,
    residual_norm=False) -> state``: nearest centres and residual sums of one
    chunk; the state is donated."""
    return import_jax().jit(
        _encode_chunk, donate_argnums=0, static_argnames=("residual_norm",)
    )


@functools.cache
def aggregate_chunk():
    """Jitted ``(state, descriptors, labels, chunk_start, first_new, layout,
    centers, residual_norm=False) -> state``: residual sums of one chunk with
    its labels given."""
    return import_jax().jit(
        _aggregate_chunk, donate_argnums=0, static_argnames=("residual_norm",)
    )


@functools.cache
def finish_vectors():
    """Jitted ``(state, block_images, *, n_images, blocks_are_images, power,
    intra, l2, mass) -> vectors (n_images, K * F)``: each image's blocks
    summed and normalised."""
    return import_jax().jit(_finish_vectors, static_argnames=_NORMALIZATION)


@functools.cache
def finish_residuals():
    """Jitted ``(state, block_images, *, n_images, blocks_are_images) ->
    residual sums (n_images, K * F)``."""
    return import_jax().jit(
        lambda state, block_images, *, n_images, blocks_are_images: _block_sums(
            state, block_images, n_images, blocks_are_images
        )[0],
        static_argnames=("n_images", "blocks_are_images"),
    )


@functools.cache
def encode_one_chunk():
    """Jitted ``(descriptors, layout, codebook, block_images, *, n_segments,
    n_images, blocks_are_images, power, intra, l2, mass) -> (vectors,
    finite)``: a batch that fits
    in one chunk, in one call."""
    jax = import_jax()

    def encode(
        descriptors,
        layout,
        codebook,
        block_images,
        *,
        n_segments,
        residual_norm=False,
        **options,
    ):
        state = _zero_state(n_segments, descriptors.shape[1], descriptors.dtype)
        state = _encode_chunk(state, descriptors, 0, 0, layout, codebook, residual_norm)
        return _finish_vectors(state, block_images, **options), state[2]

    return jax.jit(
        encode, static_argnames=("n_segments", "residual_norm", *_NORMALIZATION)
    )


@functools.cache
def aggregate_one_chunk():
    """Jitted ``(descriptors, labels, layout, centers, block_images, *,
    n_segments, n_images, blocks_are_images) -> residual sums
    (n_images, K * F)``: a batch that
    fits in one chunk, in one call."""
    jax = import_jax()

    def aggregate(
        descriptors,
        labels,
        layout,
        centers,
        block_images,
        *,
        n_segments,
        residual_norm=False,
        **blocks,
    ):
        state = _zero_state(n_segments, descriptors.shape[1], descriptors.dtype)
        state = _aggregate_chunk(
            state, descriptors, labels, 0, 0, layout, centers, residual_norm
        )
        return _block_sums(state, block_images, **blocks)[0]

    return jax.jit(
        aggregate,
        static_argnames=(
            "n_segments",
            "n_images",
            "blocks_are_images",
            "residual_norm",
        ),
    )


def zero_state(n_segments: int, n_features: int, dtype, device=None):
    """The state before the first chunk, on ``device``."""
    jax = import_jax()
    return jax.device_put(_zero_state(n_segments, n_features, dtype), device)
