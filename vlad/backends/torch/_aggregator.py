"""The PyTorch aggregator: blocked ``index_add_`` on the CPU (optional)."""

from __future__ import annotations

import numpy as np

from vlad.backends.torch import _kernels as torch_kernels
from vlad.backends.torch import import_torch

__all__ = ["aggregate_torch"]


def aggregate_torch(
    descriptors: np.ndarray,
    labels: np.ndarray,
    offsets: np.ndarray,
    centers: np.ndarray,
    *,
    residual_norm: bool = False,
) -> np.ndarray:
    """``index_add_`` of the residuals ``x - c_label`` with PyTorch, on the CPU.

    The arrays are wrapped as tensors without copies; residuals are summed in
    the input's dtype by blocks of at most 4096 rows of one image (then the
    blocks of each image are added), so float32 results stay accurate however
    many descriptors an image has. PyTorch's own threads do the work. With
    ``residual_norm``, each residual is divided by its L2 norm first. Requires
    PyTorch (the ``torch`` extra).
    """
    torch = import_torch()
    n_images = offsets.shape[0] - 1
    n_clusters, n_features = centers.shape
    layout = torch_kernels.RowLayout.of(offsets, "cpu")
    partials, counts, _ = torch_kernels.residual_sums(
        torch.from_numpy(descriptors),
        layout,
        torch.from_numpy(centers),
        labels=torch.from_numpy(labels.astype(np.int64, copy=False)),
        residual_norm=residual_norm,
    )
    sums, _ = torch_kernels.block_sums(partials, counts, layout, n_clusters)
    return sums.numpy().reshape(n_images, n_clusters, n_features)
