"""Multiple and soft assignment: each descriptor's ``n`` nearest centres and
their weights."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from vlad.core._assignment import CHUNK_BYTES, raise_non_finite
from vlad.core._finite import run_in_range
from vlad.core._parameters import ASSIGNMENT, KERNEL_WIDTH
from vlad.core._validation import (
    as_float_matrix,
    check_finite,
    check_n_features,
    check_positive_int,
)
from vlad.errors import VladError

__all__ = [
    "ASSIGNMENTS",
    "assign_nearest",
    "assignment_weights",
    "check_assignment",
    "check_kernel_width",
    "check_n_nearest",
    "nearest_valid",
]

#: The assignment modes of :class:`vlad.EncodingOptions`.
ASSIGNMENTS = ASSIGNMENT.choices


def assign_nearest(
    descriptors: ArrayLike,
    centers: ArrayLike,
    n_nearest: int = 2,
    *,
    chunk_bytes: int = CHUNK_BYTES,
) -> tuple[np.ndarray, np.ndarray]:
    """Each descriptor's ``n_nearest`` nearest centres, nearest first.

    The centres are chosen as :func:`vlad.assign` chooses one (expanded
    distances, chunk by chunk, ties to the lower index); their squared
    distances are then computed exactly, ``sum((x - c) ** 2)`` in float64.
    ``n_nearest=1`` gives :func:`vlad.assign`'s labels as a column.

    Parameters
    ----------
    descriptors : array-like of shape (n_descriptors, n_features)
    centers : array-like of shape (n_clusters, n_features)
    n_nearest : int, default=2
        In ``[1, n_clusters]``.
    chunk_bytes : int, default=1 MiB
        Upper bound on the distance matrix of one chunk.

    Returns
    -------
    labels : ndarray of intp of shape (n_descriptors, n_nearest)
    distances : ndarray of float64 of shape (n_descriptors, n_nearest)
        Squared Euclidean distances to those centres.

    Raises
    ------
    ValueError
        Dimension mismatch, no centres, NaN/inf values, or ``n_nearest``
        outside ``[1, n_clusters]``.

    See Also
    --------
    assignment_weights : The weights that multiple and soft assignment give them.

    Examples
    --------
    >>> import vlad
    >>> labels, distances = vlad.assign_nearest(
    ...     [[0.0, 1.0]], [[0.0, 0.0], [0.0, 3.0], [0.0, 1.5]], 2
    ... )
    >>> labels.tolist(), distances.tolist()
    ([[2, 0]], [[0.25, 1.0]])
    """
    descriptors = as_float_matrix(descriptors, "descriptors")
    centers = as_float_matrix(centers, "centers", dtype=descriptors.dtype)
    check_n_features(descriptors.shape[1], centers.shape[1])
    if centers.shape[0] < 1:
        raise VladError("centers must hold at least one centre; got none")
    check_finite(centers, "centers")
    n_nearest = check_n_nearest(n_nearest, centers.shape[0])
    chunk_bytes = check_positive_int(chunk_bytes, "chunk_bytes")
    (labels, distances), exponent = run_in_range(
        lambda scaled, scaled_centers: nearest_valid(
            scaled, scaled_centers, n_nearest, chunk_bytes
        ),
        descriptors,
        centers,
    )
    return labels, np.ldexp(distances, -2 * exponent)


def check_n_nearest(n_nearest: int, n_clusters: int | None = None) -> int:
    """``n_nearest`` as an int in ``[1, n_clusters]`` (``[1, inf)`` without
    ``n_clusters``).

    Raises
    ------
    TypeError, ValueError
        Not an integer, or out of range.
    """
    n_nearest = check_positive_int(n_nearest, "n_nearest")
    if n_clusters is not None and n_nearest > n_clusters:
        raise VladError(
            f"n_nearest must be at most the number of centres ({n_clusters}); "
            f"got {n_nearest}"
        )
    return n_nearest


def nearest_valid(
    descriptors: np.ndarray, centers: np.ndarray, n_nearest: int, chunk_bytes: int
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`assign_nearest` on valid, same-dtype input, for callers that
    validated already; raises on non-finite descriptors."""
    n_descriptors = descriptors.shape[0]
    n_clusters = centers.shape[0]
    labels = np.empty((n_descriptors, n_nearest), dtype=np.intp)
    distances = np.empty((n_descriptors, n_nearest), dtype=np.float64)
    scaled_centers_t = np.ascontiguousarray(-2.0 * centers.T)
    squared_norms = np.einsum("kf,kf->k", centers, centers)
    centers64 = centers.astype(np.float64)
    rows_per_chunk = max(1, chunk_bytes // (n_clusters * descriptors.itemsize))
    for start in range(0, n_descriptors, rows_per_chunk):
        stop = min(start + rows_per_chunk, n_descriptors)
        rows = descriptors[start:stop]
        with np.errstate(over="ignore", invalid="ignore"):
            expanded = rows @ scaled_centers_t
            expanded += squared_norms
        chunk_labels, chosen = _smallest(expanded, n_nearest)
        if not np.isfinite(chosen).all():
            raise_non_finite(rows, start)
        labels[start:stop] = chunk_labels
        rows64 = rows.astype(np.float64)
        for j in range(n_nearest):
            differences = rows64 - centers64[chunk_labels[:, j]]
            distances[start:stop, j] = np.einsum("nf,nf->n", differences, differences)
    return labels, distances


def _smallest(expanded: np.ndarray, n_nearest: int) -> tuple[np.ndarray, np.ndarray]:
    """Column indices of the ``n_nearest`` smallest values of each row, in
    increasing order, ties to the lower index, and those values
    (``expanded`` is overwritten)."""
    if n_nearest > 8:
        chosen = np.argsort(expanded, axis=1, kind="stable")[:, :n_nearest]
        return chosen, np.take_along_axis(expanded, chosen, axis=1)
    chosen = np.empty((expanded.shape[0], n_nearest), dtype=np.intp)
    values = np.empty((expanded.shape[0], n_nearest), dtype=expanded.dtype)
    every_row = np.arange(expanded.shape[0])
    for j in range(n_nearest):
        chosen[:, j] = np.argmin(expanded, axis=1)
        values[:, j] = expanded[every_row, chosen[:, j]]
        expanded[every_row, chosen[:, j]] = np.inf
    return chosen, values


def assignment_weights(
    distances: ArrayLike, assignment: str = "soft", kernel_width: float = 1.0
) -> np.ndarray:
    """Weights of each descriptor's nearest centres; each row sums to one.

    ``"hard"`` takes the first column only; ``"multiple"`` gives every
    centre the same weight ``1 / n_nearest`` (Yael's 2- and 4-nearest VLAD
    adds each residual with weight 1; after intra or L2 normalisation the
    vectors are the same); ``"soft"`` is a Gaussian kernel whose width is
    relative to the descriptor's nearest squared distance ``d_min``, so it
    needs no knowledge of the descriptors' scale::

        w_j = exp(-(d_j - d_min) / (2 * kernel_width * d_min)), then w /= sum(w)

    A centre twice as far (in squared distance) as the nearest gets
    ``exp(-1 / (2 * kernel_width))`` of its weight. A descriptor equal to a
    centre (``d_min = 0``) shares its weight among the centres at distance 0.

    Parameters
    ----------
    distances : array-like of shape (n_descriptors, n_nearest)
        Squared distances, as :func:`assign_nearest` returns them.
    assignment : {"hard", "multiple", "soft"}, default="soft"
    kernel_width : float, default=1.0
        Positive; larger spreads the weight more evenly (``"soft"`` only).

    Returns
    -------
    weights : ndarray of float64 of shape (n_descriptors, n_nearest)

    Examples
    --------
    >>> import vlad
    >>> vlad.assignment_weights([[1.0, 2.0]], "soft", kernel_width=0.5).round(4)
    array([[0.7311, 0.2689]])
    >>> vlad.assignment_weights([[1.0, 2.0]], "multiple")
    array([[0.5, 0.5]])
    """
    distances = np.asarray(distances, dtype=np.float64)
    if distances.ndim != 2 or distances.shape[1] < 1:
        raise VladError(
            "distances must have shape (n_descriptors, n_nearest); got shape "
            f"{distances.shape}"
        )
    check_assignment(assignment)
    kernel_width = check_kernel_width(kernel_width)
    weights = np.zeros(distances.shape)
    if assignment == "hard":
        weights[:, 0] = 1.0
        return weights
    if assignment == "multiple":
        weights[:] = 1.0 / distances.shape[1]
        return weights
    smallest = distances.min(axis=1, keepdims=True)
    positive = smallest[:, 0] > 0
    # Relative excess first: huge ratios overflow to inf, a zero weight.
    with np.errstate(over="ignore"):
        excess = (distances[positive] - smallest[positive]) / smallest[positive]
        weights[positive] = np.exp(-excess / (2.0 * kernel_width))
    weights[~positive] = distances[~positive] == 0
    weights /= weights.sum(axis=1, keepdims=True)
    return weights


def check_assignment(assignment: str) -> str:
    """``assignment`` if it is one of :data:`ASSIGNMENTS`.

    Raises
    ------
    ValueError
        Another value.
    """
    return ASSIGNMENT.check(assignment)


def check_kernel_width(kernel_width: float) -> float:
    """``kernel_width`` as a positive finite float.

    Raises
    ------
    TypeError, ValueError
        Not a real number, or not positive and finite.
    """
    return KERNEL_WIDTH.check(kernel_width)
