"""Host side of the JAX back-end: a batch's layout and its chunks.

:func:`plan_batch` turns the offsets into the small arrays the kernels of
:mod:`vlad.backends.jax._kernels` need (image boundaries and summation blocks,
padded to powers of two so that compilations stay few);
:func:`host_chunks` cuts the descriptors into chunks, each a view of the
caller's array (only a batch smaller than one chunk is copied, to pad it).
The chunks go to the jitted calls as they are: JAX moves each to the device
as part of the call and dispatches asynchronously, so a chunk's transfer
overlaps the previous chunk's work. Nothing here switches JAX's 64-bit mode
except :func:`precision_scope` for float64 input.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator
from typing import Any

import numpy as np

from vlad.backends._layout import (
    bucket_size,
    chunk_rows_for,
    row_chunks,
    summation_blocks,
)
from vlad.backends.jax import import_jax
from vlad.core._validation import check_finite
from vlad.errors import VladError

__all__ = [
    "BatchPlan",
    "host_chunks",
    "plan_batch",
    "precision_scope",
    "raise_unless_finite",
]


@dataclasses.dataclass(frozen=True)
class BatchPlan:
    """How one batch is cut, and the layout arrays the kernels take.

    Attributes
    ----------
    n_images : int
    padded_images : int
        ``n_images`` rounded up to a power of two: the kernels' image count.
    n_segments : int
        Rows of the partial sums: padded number of blocks times ``n_clusters``.
    chunk_rows : int
    chunks : list of (int, int)
        ``(start, first_new)`` of every chunk (see
        :func:`vlad.backends._layout.row_chunks`).
    layout : tuple of arrays
        ``(offsets, first_block, n_rows)``: int32 arrays of shapes
        ``(padded_images + 1,)`` and ``(padded_images,)`` and a scalar.
    block_images : array of int32 of shape (padded blocks,)
    blocks_are_images : bool
        Whether block ``t`` is image ``t`` (no image has more rows than a
        block): then the blocks need no summing.
    """

    n_images: int
    padded_images: int
    n_segments: int
    chunk_rows: int
    chunks: list[tuple[int, int]]
    layout: tuple[Any, Any, Any]
    block_images: Any
    blocks_are_images: bool

    def on_device(self, device: Any = None) -> BatchPlan:
        """The same plan with its layout arrays moved to ``device`` once (for
        a batch of several chunks, which all take them)."""
        layout, block_images = import_jax().device_put(
            (self.layout, self.block_images), device
        )
        return dataclasses.replace(self, layout=layout, block_images=block_images)


def plan_batch(
    offsets: np.ndarray, n_features: int, itemsize: int, n_clusters: int
) -> BatchPlan:
    """Plan a batch of ``len(offsets) - 1`` images (host arrays only).

    Parameters
    ----------
    offsets : ndarray of int64 of shape (n_images + 1,)
    n_features, itemsize, n_clusters : int
    """
    n_images = offsets.shape[0] - 1
    n_rows = int(offsets[-1])
    padded_images = bucket_size(n_images)
    first_block, block_images = summation_blocks(offsets)
    n_blocks = block_images.shape[0]
    padded_blocks = bucket_size(n_blocks)
    padded_offsets = np.full(padded_images + 1, n_rows, dtype=np.int32)
    padded_offsets[: n_images + 1] = offsets
    padded_first_block = np.full(padded_images, n_blocks, dtype=np.int32)
    padded_first_block[:n_images] = first_block
    # Padding blocks belong to an image past the end, which segment_sum drops.
    padded_block_images = np.full(padded_blocks, padded_images, dtype=np.int32)
    padded_block_images[:n_blocks] = block_images
    chunk_rows = chunk_rows_for(n_rows, n_features * itemsize)
    return BatchPlan(
        n_images=n_images,
        padded_images=padded_images,
        n_segments=padded_blocks * n_clusters,
        chunk_rows=chunk_rows,
        chunks=row_chunks(n_rows, chunk_rows),
        layout=(padded_offsets, padded_first_block, np.int32(n_rows)),
        block_images=padded_block_images,
        blocks_are_images=n_blocks == n_images,
    )


def host_chunks(
    plan: BatchPlan, *arrays: np.ndarray
) -> Iterator[tuple[int, int, list[np.ndarray]]]:
    """``(start, first_new, pieces)`` for each chunk of the plan, where
    ``pieces`` holds the chunk of every array in ``arrays`` (row-aligned):
    views, except for a batch smaller than one chunk, padded with zeros."""
    size = plan.chunk_rows
    for start, first_new in plan.chunks:
        pieces = [array[start : start + size] for array in arrays]
        if pieces and pieces[0].shape[0] < size:
            pieces = [_pad_rows(piece, size) for piece in pieces]
        yield start, first_new, pieces


def _pad_rows(array: np.ndarray, n_rows: int) -> np.ndarray:
    padded = np.zeros((n_rows, *array.shape[1:]), dtype=array.dtype)
    padded[: array.shape[0]] = array
    return padded


def precision_scope(dtype: np.dtype) -> contextlib.AbstractContextManager:
    """JAX's 64-bit mode for float64 input; nothing for float32."""
    if np.dtype(dtype) == np.float64:
        return import_jax().enable_x64(True)
    return contextlib.nullcontext()


def raise_unless_finite(finite: bool, descriptors: np.ndarray) -> None:
    """Raise ``ValueError`` when the kernels found a non-finite distance:
    the descriptors hold NaN or inf (named on the host) or their distances
    overflow."""
    if finite:
        return
    check_finite(descriptors, "descriptors")
    raise VladError(
        f"descriptor distances overflow: values are too large for "
        f"{descriptors.dtype} arithmetic; rescale them or pass float64"
    )
