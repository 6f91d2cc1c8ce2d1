"""Keeping VLAD arithmetic finite: extreme inputs rescaled by a power of two,
results checked for NaN before anyone sees them.

Squared distances and norms overflow long before the values they square do:
float32 descriptors of 5e36 are finite, their squares are not, and sums of
1e308 in float64 overflow. Assignment, the normalised vectors and k-means do
not change when descriptors and centres are scaled together, and scaling by a
power of two is exact, so inputs whose largest magnitude lies outside
``[1 / SAFE_MAGNITUDE, SAFE_MAGNITUDE]`` are brought near 1 first; vectors that
are not normalised are scaled back, and refused with a clear error only when
they do not fit in their dtype.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TypeVar

import numpy as np

from vlad.errors import VladError, VladTypeError

__all__ = [
    "SAFE_MAGNITUDE",
    "DistanceOverflowError",
    "run_in_range",
    "cast_in_range",
    "check_residuals",
    "largest_magnitude",
    "rescale_inputs",
    "restore_scale",
    "scale_exponent",
]

R = TypeVar("R")


class DistanceOverflowError(VladError):
    """Squared distances overflowed although the descriptors are finite."""


#: Largest magnitude each float dtype is computed with unscaled: the squared
#: distances and norms of values this size, summed over millions of
#: descriptors, stay finite.
SAFE_MAGNITUDE = {np.dtype(np.float32): 2.0**40, np.dtype(np.float64): 2.0**320}


def largest_magnitude(*arrays: np.ndarray) -> float:
    """The largest absolute value among ``arrays`` (0 when all are empty, NaN
    when one holds NaN).

    Two reductions per array (its minimum and maximum), no temporary copy.
    """
    largest = 0.0
    for array in arrays:
        if array.size:
            low, high = float(array.min()), float(array.max())
            if math.isnan(low) or math.isnan(high):
                return math.nan
            largest = max(largest, abs(low), abs(high))
    return largest


def scale_exponent(magnitude: float, dtype: np.dtype) -> int:
    """The power of two, ``2 ** exponent``, that brings ``magnitude`` into
    ``[0.5, 1)``, or 0 when it already lies in the safe range of ``dtype`` (or
    is 0, NaN or infinite).

    Examples
    --------
    >>> import numpy as np
    >>> from vlad.core._finite import scale_exponent
    >>> scale_exponent(3.0, np.dtype(np.float32))
    0
    >>> scale_exponent(2.0**100, np.float32), scale_exponent(1e-30, np.float32)
    (-101, 99)
    """
    safe = SAFE_MAGNITUDE[np.dtype(dtype)]
    if not math.isfinite(magnitude) or magnitude == 0.0:
        return 0  # NaN and inf are reported by the checks that meet them
    if 1.0 / safe <= magnitude <= safe:
        return 0
    return -math.frexp(magnitude)[1]


def run_in_range(
    run: Callable[[np.ndarray, np.ndarray], R],
    descriptors: np.ndarray,
    centers: np.ndarray,
    finite: Callable[[R], bool] = lambda result: True,
) -> tuple[R, int]:
    """``run(descriptors, centers)``, on inputs scaled by a power of two when
    their magnitude is extreme; and that exponent (0: unscaled).

    Measuring the descriptors costs a pass over them, so it is done only when
    needed: the centres are measured first (they are few); the descriptors
    only when the run overflows (:class:`DistanceOverflowError`, or a result
    that ``finite`` refuses), and the run is then made again on both scaled.
    Floating-point warnings of the first run are silenced: its overflow is
    handled here. A NaN or infinite input is reported by ``run`` itself.
    """
    exponent = scale_exponent(largest_magnitude(centers), centers.dtype)
    if exponent:
        descriptors, centers, exponent = rescale_inputs(descriptors, centers)
    try:
        with np.errstate(over="ignore", invalid="ignore"):
            result = run(descriptors, centers)
        if exponent or finite(result):
            return result, exponent
    except DistanceOverflowError:
        if exponent:
            raise
    descriptors, centers, exponent = rescale_inputs(descriptors, centers)
    if exponent == 0:  # not extreme, yet overflowing: cannot be helped
        raise VladError(
            f"the arithmetic on these {descriptors.dtype} descriptors overflows; "
            "rescale them or pass float64"
        )
    with np.errstate(over="ignore", invalid="ignore"):
        return run(descriptors, centers), exponent


def cast_in_range(array: np.ndarray, dtype: np.dtype, name: str) -> np.ndarray:
    """``array`` as ``dtype`` (no copy when it already is one), refused when
    its values do not fit (float64 centres of 1e300 for float32 descriptors).

    Raises
    ------
    ValueError
        A value beyond the largest finite number of ``dtype``.
    """
    dtype = np.dtype(dtype)
    if array.dtype != dtype and largest_magnitude(array) > float(np.finfo(dtype).max):
        raise VladError(
            f"{name} hold values as large as {largest_magnitude(array):.3g}, beyond "
            f"{dtype}, the descriptors' dtype; pass {array.dtype} descriptors"
        )
    return array.astype(dtype, copy=False)


def rescale_inputs(
    descriptors: np.ndarray, centers: np.ndarray
) -> tuple[np.ndarray, np.ndarray, int]:
    """Descriptors and centres scaled together by ``2 ** exponent`` (see
    :func:`scale_exponent`) when their magnitude is extreme, and the exponent
    (0: unchanged, no copy).

    Parameters
    ----------
    descriptors : ndarray of shape (n_descriptors, n_features)
    centers : ndarray of shape (n_clusters, n_features), same float dtype

    Raises
    ------
    ValueError
        NaN or infinite descriptors or centres (the reductions that measure
        the magnitude find them at no extra cost).
    """
    magnitude = largest_magnitude(descriptors, centers)
    if not math.isfinite(magnitude):  # the reductions met a NaN or an inf
        for array, name in ((descriptors, "descriptors"), (centers, "centers")):
            bad = ~np.isfinite(array)
            if bad.any():
                raise VladError(
                    f"{name} contains {int(np.count_nonzero(bad))} NaN or infinite "
                    f"value(s) (first at row {int(np.flatnonzero(bad.any(axis=1))[0])})"
                )
    exponent = scale_exponent(magnitude, descriptors.dtype)
    if exponent == 0:
        return descriptors, centers, 0
    return np.ldexp(descriptors, exponent), np.ldexp(centers, exponent), exponent


def restore_scale(
    vectors: np.ndarray, exponent: int, *, power: float, normalised: bool
) -> np.ndarray:
    """Vectors encoded from inputs scaled by ``2 ** exponent``, as the
    unscaled inputs give them.

    Normalised vectors (intra or global L2) do not depend on the scale; the
    others are the (power-law) sums themselves, scaled by
    ``2 ** (exponent * power)``.

    Raises
    ------
    ValueError
        The unnormalised vectors are too large for their dtype.
    """
    if exponent == 0 or normalised:
        return vectors
    shift = -exponent * power
    largest = largest_magnitude(vectors)
    if largest and math.log2(largest) + shift >= math.log2(np.finfo(vectors.dtype).max):
        raise VladError(
            f"the residual sums of these descriptors overflow {vectors.dtype}: "
            "rescale the descriptors, pass float64 or normalise the vectors "
            "(intra or l2)"
        )
    whole = math.floor(shift)
    vectors = np.ldexp(vectors, whole)
    if shift != whole:
        vectors *= vectors.dtype.type(2.0 ** (shift - whole))
    return vectors


def check_residuals(
    residuals, shape: tuple[int, int, int], dtype: np.dtype, aggregator: str
) -> np.ndarray:
    """What an aggregator given by the caller returned, checked: an array of
    ``shape`` holding finite real numbers, as a writeable C-contiguous array
    of ``dtype``.

    Raises
    ------
    ValueError
        Another shape, or NaN or infinite values.
    TypeError
        Not an array of real numbers.
    """
    array = np.asarray(residuals)
    if array.dtype.kind not in "fiub":
        raise VladTypeError(
            f"aggregator {aggregator} must return real numbers; got dtype {array.dtype}"
        )
    if array.shape != shape:
        raise VladError(
            f"aggregator {aggregator} must return residual sums of shape "
            f"(n_images, n_clusters, n_features) = {shape}; got shape {array.shape}"
        )
    if not np.isfinite(array).all():
        bad = int(np.count_nonzero(~np.isfinite(array)))
        raise VladError(
            f"aggregator {aggregator} returned {bad} NaN or infinite residual value(s)"
        )
    if largest_magnitude(array) > float(np.finfo(dtype).max):
        raise VladError(
            f"aggregator {aggregator} returned residual sums too large for {dtype}"
        )
    return np.require(array, dtype=dtype, requirements=["C", "W"])
