"""NetVLAD: a trainable VLAD pooling layer for PyTorch (optional dependency).

This module imports PyTorch: ``import vlad`` does not load it. Requires
PyTorch (the ``torch`` extra).

References
----------
.. [1] R. Arandjelović, P. Gronat, A. Torii, T. Pajdla, J. Sivic. "NetVLAD:
   CNN architecture for weakly supervised place recognition". CVPR 2016.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from vlad.backends._netvlad import initial_parameters, sharpness_for
from vlad.backends.torch import full_float32_matmul, import_torch
from vlad.core._codebook import Codebook
from vlad.core._normalization import NORM_FLOOR
from vlad.core._validation import as_offsets, check_positive_int
from vlad.errors import VladError

torch = import_torch()

__all__ = ["NetVLAD", "sharpness_for"]


class NetVLAD(torch.nn.Module):
    """NetVLAD pooling: soft-assigned VLAD with intra and L2 normalisation.

    Each descriptor ``x`` is assigned to every centre with the weights
    ``a_k(x) = softmax_k(w_k . x + b_k)``; an image's block ``k`` is
    ``sum_i a_k(x_i) (x_i - c_k)``, computed as ``A^T X - (sum_i a_ik) c_k``
    with two matrix products (never a ``(descriptors, K, F)`` tensor), then
    L2-normalised per centre (intra) and as a whole. The centres ``c`` and the
    assignment ``(w, b)`` are separate parameters, as in the paper; the
    centres are stored as they are (not negated). With ``w_k = 2 alpha c_k``
    and ``b_k = -alpha |c_k|^2`` the weights are a softmax of
    ``-alpha |x - c_k|^2``, which tends to the hard assignment of
    :func:`vlad.encode` as ``alpha`` grows (see :meth:`from_codebook`).

    Parameters
    ----------
    n_clusters : int
    n_features : int
    normalize_input : bool, default=False
        L2-normalise each descriptor first (the paper does, on CNN features).
    intra, l2 : bool, default=True
        Intra (per-centre) and global L2 normalisation.
    device, dtype : optional
        Of the parameters, as for every ``torch.nn`` layer (float32 default).

    Attributes
    ----------
    centers : Parameter of shape (n_clusters, n_features)
    assignment : torch.nn.Linear
        ``w`` (its ``weight``, shape (n_clusters, n_features)) and ``b``
        (its ``bias``).
    alpha : float or None
        The sharpness :meth:`from_codebook` set; None otherwise.

    See Also
    --------
    vlad.TorchEncoder : Hard-assignment VLAD with PyTorch, for inference.

    References
    ----------
    .. [1] R. Arandjelović, P. Gronat, A. Torii, T. Pajdla, J. Sivic.
       "NetVLAD: CNN architecture for weakly supervised place recognition".
       CVPR 2016.
    """

    def __init__(
        self,
        n_clusters: int,
        n_features: int,
        *,
        normalize_input: bool = False,
        intra: bool = True,
        l2: bool = True,
        device=None,
        dtype=None,
    ):
        super().__init__()
        n_clusters = check_positive_int(n_clusters, "n_clusters")
        n_features = check_positive_int(n_features, "n_features")
        self.normalize_input = bool(normalize_input)
        self.intra = bool(intra)
        self.l2 = bool(l2)
        factory = {"device": device, "dtype": dtype}
        self.centers = torch.nn.Parameter(
            torch.randn(n_clusters, n_features, **factory)
        )
        self.assignment = torch.nn.Linear(n_features, n_clusters, **factory)
        self.alpha: float | None = None

    @classmethod
    def from_codebook(
        cls,
        codebook: Codebook | ArrayLike,
        descriptors_sample: ArrayLike,
        ratio: float = 100.0,
        **kwargs,
    ) -> NetVLAD:
        """A layer initialised from a fitted codebook.

        The centres are the codebook's; the assignment is ``w_k = 2 alpha
        c_k``, ``b_k = -alpha |c_k|^2``, with ``alpha`` set by
        :func:`sharpness_for` so that a sample descriptor's nearest centre
        weighs about ``ratio`` times its second.

        Parameters
        ----------
        codebook : Codebook or array-like of shape (n_clusters, n_features)
        descriptors_sample : array-like of shape (n_samples, n_features)
            Descriptors like those the layer will see (a few thousand do).
        ratio : float, default=100.0
        **kwargs
            ``normalize_input``, ``intra``, ``l2``, ``device``, ``dtype``.
            With ``normalize_input`` the sample is normalised too before
            ``alpha`` is set.

        Returns
        -------
        NetVLAD
            Parameters of ``dtype`` (float32 by default).

        Raises
        ------
        ValueError
            See :func:`sharpness_for`; or a sample of another dimension, or
            with NaN/inf values.
        """
        start = initial_parameters(
            codebook,
            descriptors_sample,
            ratio,
            normalize_input=kwargs.get("normalize_input", False),
        )
        layer = cls(*start.centers.shape, **kwargs)
        with torch.no_grad():
            layer.centers.copy_(torch.from_numpy(start.centers))
            layer.assignment.weight.copy_(torch.from_numpy(start.weight))
            layer.assignment.bias.copy_(torch.from_numpy(start.bias))
        layer.alpha = start.alpha
        return layer

    def forward(self, descriptors, mask=None, offsets=None):
        """VLAD vectors of a batch of images.

        Parameters
        ----------
        descriptors : Tensor of shape (n_images, n_descriptors, n_features)
            Padded images (with ``mask``); or, with ``offsets``, all images'
            descriptors stacked, shape (n_descriptors, n_features).
        mask : Tensor of bool of shape (n_images, n_descriptors), optional
            True for real descriptors, False for padding.
        offsets : array-like of int of shape (n_images + 1,), optional
            Image boundaries of stacked descriptors (they are padded inside).

        Returns
        -------
        vectors : Tensor of shape (n_images, n_clusters * n_features)
        """
        if offsets is not None:
            descriptors, mask = _padded(descriptors, offsets)
        if self.normalize_input:
            descriptors = torch.nn.functional.normalize(
                descriptors, dim=-1, eps=NORM_FLOOR
            )
        with full_float32_matmul():
            weights = torch.softmax(self.assignment(descriptors), dim=-1)
        if mask is not None:
            weights = weights * mask[..., None].to(weights.dtype)
        with full_float32_matmul():
            sums = torch.bmm(weights.transpose(1, 2), descriptors)
        vectors = sums - weights.sum(dim=1)[..., None] * self.centers
        if self.intra:
            vectors = torch.nn.functional.normalize(vectors, dim=2, eps=NORM_FLOOR)
        vectors = vectors.flatten(1)
        if self.l2:
            vectors = torch.nn.functional.normalize(vectors, dim=1, eps=NORM_FLOOR)
        return vectors


def _padded(descriptors, offsets):
    """Stacked ``(N, F)`` descriptors as padded ``(T, L_max, F)`` and a mask."""
    if descriptors.ndim != 2:
        raise VladError(
            "descriptors with offsets must have shape (n_descriptors, n_features); "
            f"got shape {tuple(descriptors.shape)}"
        )
    if torch.is_tensor(offsets):
        offsets = offsets.cpu().numpy()
    offsets = as_offsets(offsets, descriptors.shape[0])
    lengths = np.diff(offsets)
    n_images, longest = lengths.shape[0], int(lengths.max(initial=0))
    images = np.repeat(np.arange(n_images), lengths)
    positions = np.arange(descriptors.shape[0]) - offsets[images]
    index = (torch.from_numpy(images), torch.from_numpy(positions))
    padded = descriptors.new_zeros((n_images, longest, descriptors.shape[1]))
    padded = padded.index_put(index, descriptors)
    mask = torch.zeros((n_images, longest), dtype=torch.bool)
    mask[index] = True
    return padded, mask.to(descriptors.device)
