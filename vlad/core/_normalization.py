"""VLAD normalisation: mass, power law, intra (per-centre) and global L2."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from vlad.core._finite import largest_magnitude, scale_exponent
from vlad.core._validation import check_finite, check_power
from vlad.errors import VladError, VladTypeError

__all__ = ["NORM_FLOOR", "normalize", "normalize_in_place"]

#: Norms below this are treated as this, so a zero vector stays exactly zero.
NORM_FLOOR = 1e-12


def normalize(
    residuals: ArrayLike,
    *,
    power: float = 1.0,
    intra: bool = True,
    l2: bool = True,
    counts: ArrayLike | None = None,
) -> np.ndarray:
    """Normalise residual sums into VLAD vectors.

    The steps run in this order, each optional:

    1. mass (when ``counts`` is given): divide each centre's block by its number
       of descriptors, turning sums into means (VLFeat's ``NormalizeMass``);
    2. power law: ``sign(v) * |v| ** power``, element-wise (``power=0.5`` is the
       signed square root of Jégou et al. 2012; ``1`` leaves ``v`` unchanged);
    3. intra: L2-normalise each centre's block (Arandjelović & Zisserman 2013);
    4. global L2: L2-normalise the whole vector (Jégou et al. 2010).

    Every division uses ``max(norm, 1e-12)``, so an empty block or an image
    without descriptors stays exactly zero, never NaN. Residuals of extreme
    magnitude (1e308) are scaled by a power of two before the norms are taken,
    which the normalised vectors do not depend on.

    Parameters
    ----------
    residuals : array-like of shape (n_images, n_clusters, n_features)
        Residual sums from :func:`vlad.aggregate`.
    power : float, default=1.0
        Exponent of the power law, in (0, 1]; 1 disables it.
    intra : bool, default=True
        Whether to L2-normalise each centre's block.
    l2 : bool, default=True
        Whether to L2-normalise the whole vector.
    counts : array-like of shape (n_images, n_clusters), optional
        Descriptors per image and centre, non-negative integers; when given,
        blocks are first divided by them (mass normalisation; empty blocks
        stay zero).

    Returns
    -------
    vectors : ndarray of shape (n_images, n_clusters * n_features)
        Centre-major (``residuals[t].ravel()``), in the residuals' float dtype.

    Raises
    ------
    ValueError
        Residuals or counts of another shape, NaN or infinite residuals,
        negative counts, or a power outside (0, 1].
    TypeError
        Residuals or counts that are not arrays of numbers (counts of
        integers), or a power or flag of the wrong type.

    References
    ----------
    .. [1] H. Jégou, M. Douze, C. Schmid, P. Pérez. "Aggregating local
       descriptors into a compact image representation". CVPR 2010.
    .. [2] H. Jégou, F. Perronnin, M. Douze, J. Sánchez, P. Pérez, C. Schmid.
       "Aggregating local image descriptors into compact codes". TPAMI 2012.
    .. [3] R. Arandjelović, A. Zisserman. "All about VLAD". CVPR 2013.

    Examples
    --------
    >>> import numpy as np
    >>> import vlad
    >>> residuals = np.array([[[3.0, 4.0], [0.0, 0.0]]])
    >>> vlad.normalize(residuals, intra=False)
    array([[0.6, 0.8, 0. , 0. ]])
    """
    array = np.asarray(residuals)
    if array.ndim != 3:
        raise VladError(
            "residuals must have shape (n_images, n_clusters, n_features); "
            f"got shape {array.shape}"
        )
    if array.dtype.kind not in "fiu":
        raise VladTypeError(
            f"residuals must hold real numbers; got dtype {array.dtype}"
        )
    power = check_power(power)
    for name, flag in (("intra", intra), ("l2", l2)):
        if not isinstance(flag, (bool, np.bool_)):
            raise VladTypeError(f"{name} must be True or False; got {flag!r}")
    dtype = np.float64 if array.dtype == np.float64 else np.float32
    vectors = np.array(array, dtype=dtype, order="C")
    check_finite(vectors, "residuals")
    if counts is not None:
        counts = np.asarray(counts)
        if counts.shape != array.shape[:2]:
            raise VladError(
                f"counts must have shape {array.shape[:2]} (n_images, n_clusters); "
                f"got shape {counts.shape}"
            )
        if counts.dtype.kind not in "iu":
            raise VladTypeError(f"counts must hold integers; got dtype {counts.dtype}")
        if counts.size and counts.min() < 0:
            raise VladError(f"counts must be >= 0; got a minimum of {counts.min()}")
    if intra or l2:
        # Squares of 1e308 overflow; the normalised vectors do not depend on
        # an exact power-of-two scale.
        exponent = scale_exponent(largest_magnitude(vectors), vectors.dtype)
        if exponent:
            vectors = np.ldexp(vectors, exponent)
    normalize_in_place(
        vectors, power=power, intra=bool(intra), l2=bool(l2), counts=counts
    )
    return vectors.reshape(array.shape[0], array.shape[1] * array.shape[2])


def normalize_in_place(
    vectors: np.ndarray,
    *,
    power: float,
    intra: bool,
    l2: bool,
    counts: np.ndarray | None = None,
) -> None:
    """:func:`normalize` on a valid, writeable ``(T, K, F)`` float array.

    Silent about floating-point overflow: it may run (in a worker thread) on
    sums that overflowed, which :func:`vlad.core._finite.run_in_range` then
    encodes again scaled.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        _normalize_in_place(vectors, power, intra, l2, counts)


def _normalize_in_place(vectors, power, intra, l2, counts) -> None:
    if counts is not None:
        # Fractional masses (soft assignment) divide too; empty blocks do not.
        masses = np.where(counts > 0, counts, 1)
        vectors /= masses[:, :, None].astype(vectors.dtype)
    if power != 1.0:
        magnitudes = np.abs(vectors)
        if power == 0.5:
            np.sqrt(magnitudes, out=magnitudes)
        else:
            np.power(magnitudes, power, out=magnitudes)
        np.copysign(magnitudes, vectors, out=vectors)
    if intra:
        # Squares summed in float64: float32 squares of large sums overflow.
        block_norms = np.sqrt(
            np.einsum("tkf,tkf->tk", vectors, vectors, dtype=np.float64)
        )
        vectors /= np.maximum(block_norms, NORM_FLOOR)[:, :, None]
    if l2:
        norms = np.sqrt(np.einsum("tkf,tkf->t", vectors, vectors, dtype=np.float64))
        vectors /= np.maximum(norms, NORM_FLOOR)[:, None, None]
