"""Checks shared by the public functions.

Every public function validates its arguments here and then calls private code
that assumes valid input. Each error names the parameter, echoes what it got and
says what was expected, in one line.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping

import numpy as np

from vlad.core._parameters import POWER
from vlad.errors import VladError, VladTypeError

__all__ = [
    "all_finite",
    "as_record",
    "as_float_matrix",
    "as_labels",
    "as_offsets",
    "check_finite",
    "checked_names",
    "check_n_features",
    "check_positive_int",
    "check_power",
    "check_seed",
    "float_dtype_of",
]


#: What an object array may hold: Python and NumPy real numbers.
_REAL_SCALARS = (numbers.Real, np.bool_)


def float_dtype_of(array: np.ndarray) -> np.dtype:
    """The floating dtype computations on ``array`` run in.

    float64 stays float64; every other real dtype (float32, float16, integers)
    computes in float32.
    """
    return np.dtype(np.float64) if array.dtype == np.float64 else np.dtype(np.float32)


def as_float_matrix(values, name: str, *, dtype: np.dtype | None = None) -> np.ndarray:
    """Return ``values`` as a C-contiguous 2-D float32/float64 array.

    Parameters
    ----------
    values : array-like of shape (n_rows, n_columns)
        At least one column; rows may be none. An object array must hold real
        numbers only (not strings, even ones NumPy would parse).
    name : str
        Parameter name used in error messages.
    dtype : dtype, optional
        Target dtype; by default float64 stays float64 and anything else real
        becomes float32.
    """
    try:
        array = np.asarray(values)
    except (TypeError, ValueError) as error:  # ragged nested lists
        raise VladError(f"{name} must be a 2-D array of numbers: {error}") from None
    if array.dtype.kind == "c":
        raise VladError(
            f"Complex data not supported: {name} must hold real numbers; "
            f"got dtype {array.dtype}"
        )
    if array.dtype.kind == "O":
        # Python numbers in an object array are doubles; anything else (a
        # string that NumPy would parse, None, an array) is refused by name.
        odd = next((v for v in array.flat if not isinstance(v, _REAL_SCALARS)), None)
        if odd is not None:
            raise VladTypeError(
                f"{name} must hold real numbers; got an object array holding "
                f"{type(odd).__name__} {odd!r:.40} (each argument must be a real "
                "number, not a string or anything else that is not a number)"
            )
        try:
            array = array.astype(np.float64)
        except OverflowError as error:
            raise VladError(f"{name} holds a number beyond float64: {error}") from None
    if array.dtype.kind not in "fiub":
        raise VladTypeError(
            f"{name} must hold real numbers; got an array of dtype {array.dtype}"
        )
    if array.ndim != 2:
        raise VladError(
            f"{name} must be a 2-D array of shape (n, n_features); "
            f"got shape {array.shape}"
        )
    if array.shape[1] < 1:
        raise VladError(
            f"{name} must have at least one feature (column): found 0 feature(s) "
            f"(shape={array.shape}) while a minimum of 1 is required."
        )
    target = float_dtype_of(array) if dtype is None else np.dtype(dtype)
    if array.dtype.kind != "f" or array.dtype.itemsize <= target.itemsize:
        return np.ascontiguousarray(array, dtype=target)
    # Narrowing (float64 centres for float32 descriptors): a finite value
    # beyond the target's range would become inf.
    with np.errstate(over="ignore"):
        narrowed = np.ascontiguousarray(array, dtype=target)
    if not all_finite(narrowed) and all_finite(array):
        raise VladError(
            f"{name} holds values beyond the range of {target}, the dtype they "
            f"are computed in; rescale them or pass float64 data"
        )
    return narrowed


def all_finite(array: np.ndarray) -> bool:
    """Whether every element of ``array`` is finite.

    A float64 sum is one streaming pass without a boolean temporary; only when
    it is not finite (NaN, inf, or an overflow of huge finite values) does the
    exact element-wise check run.
    """
    if array.size == 0:
        return True
    # Huge finite values overflow the sum (inf + -inf gives NaN): no warning,
    # the exact check below decides.
    # add.reduce rather than np.sum, whose dispatch costs more than the sum of
    # a query's vector (a few microseconds of every search).
    with np.errstate(over="ignore", invalid="ignore"):
        total = np.add.reduce(array, axis=None, dtype=np.float64)
    if np.isfinite(total):
        return True
    return bool(np.isfinite(array).all())


def check_finite(array: np.ndarray, name: str) -> None:
    """Raise ``ValueError`` if ``array`` holds NaN or infinite values."""
    if not all_finite(array):
        bad = int(np.count_nonzero(~np.isfinite(array)))
        raise VladError(f"{name} contains {bad} NaN or infinite value(s)")


def check_n_features(descriptor_features: int, center_features: int) -> None:
    """Raise ``ValueError`` if descriptors and centres differ in dimension."""
    if descriptor_features != center_features:
        raise VladError(
            f"descriptors have {descriptor_features} features but the codebook's "
            f"centers have {center_features}; they must match"
        )


def as_offsets(offsets, n_rows: int) -> np.ndarray:
    """Return ``offsets`` as int64 after checking it describes ``n_rows`` rows.

    Valid offsets are 1-D, start at 0, never decrease and end at ``n_rows``.
    """
    array = np.asarray(offsets)
    if array.ndim != 1 or array.size == 0:
        raise VladError(
            f"offsets must be a 1-D array of shape (n_images + 1,); "
            f"got shape {array.shape}"
        )
    if array.dtype.kind not in "iu":
        raise VladTypeError(f"offsets must hold integers; got dtype {array.dtype}")
    array = np.ascontiguousarray(array, dtype=np.int64)
    if array[0] != 0 or array[-1] != n_rows:
        raise VladError(
            f"offsets must start at 0 and end at the number of descriptors "
            f"({n_rows}); got offsets[0]={array[0]} and offsets[-1]={array[-1]}"
        )
    if array.size > 1 and np.any(np.diff(array) < 0):
        raise VladError("offsets must be non-decreasing")
    return array


def as_labels(labels, n_rows: int, n_clusters: int) -> np.ndarray:
    """Return ``labels`` as intp after checking shape and range."""
    array = np.asarray(labels)
    if array.ndim != 1 or array.shape[0] != n_rows:
        raise VladError(
            f"labels must have shape ({n_rows},), one per descriptor; "
            f"got shape {array.shape}"
        )
    if array.dtype.kind not in "iu" and array.size:
        raise VladTypeError(f"labels must hold integers; got dtype {array.dtype}")
    if n_rows:
        low, high = int(array.min()), int(array.max())
        if low < 0 or high >= n_clusters:
            raise VladError(
                f"labels must lie in [0, {n_clusters}) for {n_clusters} centers; "
                f"got values from {low} to {high}"
            )
    return np.ascontiguousarray(array, dtype=np.intp)


def as_record(value, name: str) -> dict:
    """A copy of a JSON-like record given as a mapping (None: empty)."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise VladTypeError(
            f"{name} must be a dict or None; got {type(value).__name__}"
        )
    return dict(value)


def check_positive_int(value, name: str) -> int:
    """Return ``value`` as int after checking it is an integer >= 1."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise VladTypeError(f"{name} must be an integer >= 1; got {value!r}")
    if value < 1:
        raise VladError(f"{name} must be an integer >= 1; got {value!r}")
    return int(value)


def check_power(power: float) -> float:
    """Return ``power`` as float after checking it lies in (0, 1]
    (:data:`vlad.core.POWER`)."""
    return POWER.check(power)


def check_seed(seed) -> int | None:
    """``seed`` as an int, or None; a one-line error otherwise.

    Raises
    ------
    TypeError
        Not an integer (a bool is not one) or None.
    ValueError
        A negative integer.
    """
    if seed is None:
        return None
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise VladTypeError(
            f"seed must be a non-negative integer or None; got {seed!r}"
        )
    if seed < 0:
        raise VladError(f"seed must be a non-negative integer or None; got {seed!r}")
    return int(seed)


def checked_names(names, count: int, what: str, first: int = 0) -> list[str]:
    """``names`` as a list of ``count`` str (of ``what``: "vectors",
    "images"...), or numbers from ``first`` when None; refused in one line
    otherwise."""
    if names is None:
        return [str(first + position) for position in range(count)]
    if isinstance(names, str):
        raise VladTypeError(f"names must be a sequence of str, not a str ({names!r})")
    names = [str(name) for name in names]
    if len(names) != count:
        raise VladError(f"{len(names)} names for {count} {what}")
    return names
