"""What the NetVLAD layers share, whatever their framework: the initialisation
from a codebook.

:class:`vlad.backends.torch.NetVLAD` (PyTorch) and
:class:`vlad.backends.keras.NetVLAD` (Keras 3) set their parameters from
:func:`initial_parameters`, in float64 NumPy, so that both start from the same
numbers. This module imports neither framework.

References
----------
.. [1] R. Arandjelović, P. Gronat, A. Torii, T. Pajdla, J. Sivic. "NetVLAD:
   CNN architecture for weakly supervised place recognition". CVPR 2016.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike

from vlad.core._codebook import Codebook, as_centers
from vlad.core._normalization import NORM_FLOOR
from vlad.core._validation import as_float_matrix, check_finite, check_n_features
from vlad.errors import VladError

__all__ = ["InitialParameters", "initial_parameters", "sharpness_for"]


def sharpness_for(
    centers: np.ndarray, descriptors: np.ndarray, ratio: float = 100.0
) -> float:
    """The soft-assignment sharpness ``alpha`` at which a descriptor's nearest
    centre weighs ``ratio`` times its second nearest, on average.

    A descriptor ``x`` weighs centre ``k`` by ``exp(-alpha |x - c_k|^2)``, so
    the nearest over the second is ``exp(alpha (d_2 - d_1))`` with ``d_1 <=
    d_2`` its two smallest squared distances; ``alpha = log(ratio) /
    mean(d_2 - d_1)`` over the sample, as the NetVLAD paper's own code
    initialises it (from the distances, not from neighbour indices).

    Parameters
    ----------
    centers : ndarray of shape (n_clusters, n_features), n_clusters >= 2
    descriptors : ndarray of shape (n_samples, n_features)
    ratio : float, default=100.0

    Returns
    -------
    alpha : float

    Raises
    ------
    ValueError
        Fewer than two centres, no descriptors, a ratio <= 1, or descriptors
        equally far from their two nearest centres.

    Examples
    --------
    >>> import numpy as np
    >>> from vlad.backends._netvlad import sharpness_for
    >>> centers = np.array([[0.0], [2.0]])
    >>> sharpness_for(centers, np.array([[0.5]]), ratio=np.e)
    0.5
    """
    if centers.shape[0] < 2:
        raise VladError(
            f"NetVLAD needs at least 2 centres to set alpha; got {centers.shape[0]}"
        )
    if descriptors.shape[0] == 0:
        raise VladError("descriptors_sample must hold at least one descriptor")
    if not (isinstance(ratio, (int, float)) and math.isfinite(ratio) and ratio > 1):
        raise VladError(f"ratio must be a number > 1; got {ratio!r}")
    centers = centers.astype(np.float64)
    descriptors = descriptors.astype(np.float64)
    squared = (
        np.einsum("nf,nf->n", descriptors, descriptors)[:, None]
        - 2 * descriptors @ centers.T
        + np.einsum("kf,kf->k", centers, centers)
    )
    nearest_two = np.partition(squared, 1, axis=1)[:, :2]
    gap = float(np.mean(nearest_two[:, 1] - nearest_two[:, 0]))
    if not gap > 0:
        raise VladError(
            "the sample's descriptors are as close to their second nearest centre "
            "as to their nearest: alpha cannot be set from them"
        )
    return math.log(ratio) / gap


class InitialParameters(NamedTuple):
    """A NetVLAD layer's parameters set from a codebook, float64.

    Attributes
    ----------
    centers : ndarray of shape (n_clusters, n_features)
    weight : ndarray of shape (n_clusters, n_features)
        ``w_k = 2 alpha c_k``.
    bias : ndarray of shape (n_clusters,)
        ``b_k = -alpha |c_k|^2``.
    alpha : float
    """

    centers: np.ndarray
    weight: np.ndarray
    bias: np.ndarray
    alpha: float


def initial_parameters(
    codebook: Codebook | ArrayLike,
    descriptors_sample: ArrayLike,
    ratio: float = 100.0,
    *,
    normalize_input: bool = False,
) -> InitialParameters:
    """The parameters of a NetVLAD layer that starts as soft-assigned VLAD.

    The centres are the codebook's; the assignment is ``w_k = 2 alpha c_k``,
    ``b_k = -alpha |c_k|^2``, so that the weights are a softmax of ``-alpha
    |x - c_k|^2``, with ``alpha`` set by :func:`sharpness_for` on the sample.

    Parameters
    ----------
    codebook : Codebook or array-like of shape (n_clusters, n_features)
    descriptors_sample : array-like of shape (n_samples, n_features)
    ratio : float, default=100.0
    normalize_input : bool, default=False
        Whether the layer L2-normalises its descriptors: the sample is then
        normalised too before ``alpha`` is set.

    Returns
    -------
    InitialParameters

    Raises
    ------
    ValueError
        See :func:`sharpness_for`; or a sample of another dimension, or with
        NaN/inf values.

    Examples
    --------
    >>> import numpy as np
    >>> from vlad.backends._netvlad import initial_parameters
    >>> start = initial_parameters([[0.0], [2.0]], [[0.5]], ratio=np.e)
    >>> start.alpha, start.weight.tolist(), start.bias.tolist()
    (0.5, [[0.0], [2.0]], [-0.0, -2.0])
    """
    centers = as_centers(codebook).astype(np.float64)
    sample = as_float_matrix(descriptors_sample, "descriptors_sample")
    check_n_features(sample.shape[1], centers.shape[1])
    check_finite(sample, "descriptors_sample")
    if normalize_input:
        norms = np.linalg.norm(sample.astype(np.float64), axis=1, keepdims=True)
        sample = sample / np.maximum(norms, NORM_FLOOR)
    alpha = sharpness_for(centers, sample, ratio)
    return InitialParameters(
        centers=centers,
        weight=2 * alpha * centers,
        bias=-alpha * np.einsum("kf,kf->k", centers, centers),
        alpha=alpha,
    )
