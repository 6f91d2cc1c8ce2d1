"""VLAD on torch tensors: nearest centres, blocked residual sums, normalisation.

The work of :class:`vlad.TorchEncoder` and the ``torch`` aggregator, on any
device. Rows are processed a chunk at a time (so the ``(rows, K)`` distance
matrix stays bounded); each chunk's residuals ``x - c_label`` are added with
``index_add_`` into float32 partial sums, one per summation block of at most
:data:`vlad.backends._layout.BLOCK_ROWS` rows of one image and centre, and the
blocks of each image are added at the end. Nothing here waits for the device
except :meth:`RowLayout.to` (moving the small layout arrays) and the
caller's final check of the ``finite`` flag. Inputs are assumed valid.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from vlad.backends._layout import BLOCK_ROWS, summation_blocks
from vlad.backends.torch import full_float32_matmul, import_torch
from vlad.core._normalization import NORM_FLOOR

__all__ = [
    "CHUNK_BYTES",
    "RowLayout",
    "block_sums",
    "nearest_centers",
    "normalize_sums",
    "residual_sums",
]

#: Bound on a chunk's ``(rows, K)`` distances and ``(rows, F)`` residuals, by
#: device type: on the CPU small enough that the temporaries stay in cache
#: (PyTorch hands large CPU blocks back to the system, and fresh pages cost
#: more than the arithmetic), on a GPU large enough to amortise each launch.
CHUNK_BYTES = {"cpu": 4 << 20, "cuda": 64 << 20}


@dataclasses.dataclass(frozen=True)
class RowLayout:
    """Image boundaries and summation blocks of a batch, as tensors.

    Attributes
    ----------
    offsets : Tensor of int64 of shape (n_images + 1,)
    first_block : Tensor of int64 of shape (n_images,)
    block_images : Tensor of int64 of shape (n_blocks,)
    n_images, n_blocks : int
    """

    offsets: Any
    first_block: Any
    block_images: Any
    n_images: int
    n_blocks: int

    @classmethod
    def of(cls, offsets: np.ndarray, device: Any) -> RowLayout:
        """The layout of host ``offsets``, moved to ``device``."""
        torch = import_torch()
        first_block, block_images = summation_blocks(offsets)
        arrays = [
            torch.from_numpy(np.ascontiguousarray(array, dtype=np.int64)).to(device)
            for array in (offsets, first_block, block_images)
        ]
        return cls(*arrays, offsets.shape[0] - 1, block_images.shape[0])

    @property
    def blocks_are_images(self) -> bool:
        """Whether block ``t`` is image ``t`` (no image exceeds one block)."""
        return self.n_blocks == self.n_images


def nearest_centers(descriptors, scaled_centers_t, squared_norms):
    """Labels (int64) and nearest distances (up to ``|x|^2``) of each row.

    The distances are ``|c|^2 - 2 x.c``, as :func:`vlad.assign` computes
    them, with the product at full float32 precision (never TF32).
    """
    torch = import_torch()
    with full_float32_matmul():
        distances = torch.addmm(squared_norms, descriptors, scaled_centers_t)
    # The first minimum on ties, as vlad.assign.
    nearest, labels = torch.min(distances, dim=1)
    return labels, nearest


def _rows_per_chunk(descriptors, n_clusters: int) -> int:
    n_rows, n_features = descriptors.shape
    widest = max(n_clusters, n_features) * descriptors.element_size()
    chunk_bytes = CHUNK_BYTES.get(descriptors.device.type, CHUNK_BYTES["cuda"])
    return max(1, min(n_rows, max(1024, chunk_bytes // widest)))


def residual_sums(
    descriptors,
    layout: RowLayout,
    centers,
    *,
    labels=None,
    codebook=None,
    residual_norm: bool = False,
):
    """Blocked residual sums of a batch, with their counts and finiteness.

    Parameters
    ----------
    descriptors : Tensor of shape (n_descriptors, n_features)
    layout : RowLayout
    centers : Tensor of shape (n_clusters, n_features)
    labels : Tensor of int64 of shape (n_descriptors,), optional
        Given labels (the aggregator); found otherwise.
    codebook : tuple of Tensor, optional
        ``(-2 centers.T, |c|^2)``, needed when ``labels`` is None.
    residual_norm : bool, default=False
        Divide each residual by its L2 norm before adding it (zero stays zero).

    Returns
    -------
    partials : Tensor of shape (n_blocks * n_clusters, n_features)
    counts : Tensor of int64 of shape (n_blocks * n_clusters,)
    finite : Tensor of bool, or None
        Whether every nearest distance was finite (None with given labels).
    """
    torch = import_torch()
    n_rows, n_features = descriptors.shape
    n_clusters = centers.shape[0]
    device, dtype = descriptors.device, descriptors.dtype
    n_segments = layout.n_blocks * n_clusters
    partials = torch.zeros((n_segments, n_features), dtype=dtype, device=device)
    counts = torch.zeros(n_segments, dtype=torch.int64, device=device)
    finite = (
        None if labels is not None else torch.ones((), dtype=torch.bool, device=device)
    )
    step = _rows_per_chunk(descriptors, n_clusters)
    for start in range(0, n_rows, step):
        rows = descriptors[start : start + step]
        if labels is None:
            chunk_labels, nearest = nearest_centers(rows, *codebook)
            finite &= torch.isfinite(nearest).all()
        else:
            chunk_labels = labels[start : start + step]
        row_ids = torch.arange(start, start + rows.shape[0], device=device)
        image = torch.searchsorted(layout.offsets, row_ids, right=True) - 1
        block = (
            layout.first_block[image] + (row_ids - layout.offsets[image]) // BLOCK_ROWS
        )
        segments = block * n_clusters + chunk_labels
        residuals = rows - centers[chunk_labels]
        if residual_norm:
            residuals = _unit_rows(residuals)
        partials.index_add_(0, segments, residuals)
        counts.index_add_(0, segments, torch.ones_like(segments))
    return partials, counts, finite


def _unit_rows(residuals):
    """Each row divided by its L2 norm (zero rows stay zero), the norm taken
    of the row divided by its largest magnitude so squares cannot overflow."""
    scale = residuals.abs().amax(dim=1, keepdim=True)
    scaled = residuals / scale.where(scale > 0, 1.0)
    norms = (scaled * scaled).sum(dim=1, keepdim=True).sqrt()
    return scaled / norms.where(norms > 0, 1.0)


def block_sums(partials, counts, layout: RowLayout, n_clusters: int):
    """Each image's sums of its blocks: ``(n_images, K * F)`` and ``(n_images, K)``."""
    partials = partials.reshape(layout.n_blocks, n_clusters * partials.shape[1])
    counts = counts.reshape(layout.n_blocks, n_clusters)
    if layout.blocks_are_images:
        return partials, counts
    sums = partials.new_zeros((layout.n_images, partials.shape[1]))
    image_counts = counts.new_zeros((layout.n_images, counts.shape[1]))
    sums.index_add_(0, layout.block_images, partials)
    image_counts.index_add_(0, layout.block_images, counts)
    return sums, image_counts


def _scaled_l2_normalize(values, dim: int):
    """``values / max(|values|, NORM_FLOOR)`` along ``dim``, the norm taken of
    values divided by their largest magnitude (no float32 overflow)."""
    scale = values.abs().amax(dim=dim, keepdim=True)
    scale = scale.where(scale > 0, 1.0)
    scaled = values / scale
    norms = scale * (scaled * scaled).sum(dim=dim, keepdim=True).sqrt()
    return values / norms.clamp_min(NORM_FLOOR)


def normalize_sums(sums, counts, *, power: float, intra: bool, l2: bool, mass: bool):
    """Mass, power law, intra and L2 normalisation of ``(n_images, K * F)``
    residual sums, in VLFeat's order (as :func:`vlad.normalize`)."""
    n_images, n_clusters = counts.shape
    vectors = sums.reshape(n_images, n_clusters, sums.shape[1] // n_clusters)
    if mass:
        vectors = vectors / counts.clamp_min(1)[:, :, None].to(vectors.dtype)
    if power != 1.0:
        vectors = vectors.sign() * vectors.abs().pow(power)
    if intra:
        vectors = _scaled_l2_normalize(vectors, 2)
    vectors = vectors.reshape(sums.shape)
    if l2:
        vectors = _scaled_l2_normalize(vectors, 1)
    return vectors
