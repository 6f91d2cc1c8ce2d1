"""Aggregators: interchangeable implementations of the VLAD scatter-reduce.

Every aggregator has the signature ``(descriptors, labels, offsets, centers,
*, residual_norm=False)`` and returns the residual sums ``(n_images,
n_clusters, n_features)`` in the descriptors' dtype. Those in
:data:`WEIGHTED_AGGREGATORS` also take ``weights=`` (multiple and soft
assignment: ``labels`` and ``weights`` of shape ``(n_descriptors,
n_nearest)``). A caller's function with the plain four-argument signature is
called without keywords, so it serves hard assignment without residual
normalisation. They assume valid input; :func:`aggregate` validates, and
checks that the descriptors were finite by checking the sums (NaN and inf
reach the sums of every aggregator here), which costs a pass over the output
rather than over the input.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike

from vlad.core._finite import check_residuals, restore_scale, run_in_range
from vlad.core._validation import (
    all_finite,
    as_float_matrix,
    as_labels,
    as_offsets,
    check_finite,
    check_n_features,
)
from vlad.core.aggregators._loop import aggregate_loop
from vlad.core.aggregators._masked import aggregate_masked
from vlad.core.aggregators._ragged_cumsum import aggregate_ragged_cumsum
from vlad.core.aggregators._sparse import aggregate_sparse
from vlad.core.aggregators._ufunc_at import aggregate_ufunc_at
from vlad.errors import VladError, VladTypeError

__all__ = [
    "AGGREGATORS",
    "BACKEND_AGGREGATORS",
    "WEIGHTED_AGGREGATORS",
    "Aggregator",
    "BackendAggregator",
    "aggregate",
    "available_aggregators",
    "call_aggregator",
    "check_aggregator_variant",
    "choose_aggregator",
    "fused_encoder",
    "require_aggregator",
    "resolve_aggregator",
]

Aggregator = Callable[..., np.ndarray]

#: Aggregators that take ``weights=`` (multiple and soft assignment).
WEIGHTED_AGGREGATORS = frozenset({"auto", "loop", "sparse", "numba"})


class BackendAggregator(NamedTuple):
    """Where an aggregator of :mod:`vlad.backends` lives, as ``"module:name"``
    strings imported on first use, so that this package imports nothing of
    the back-ends (nor their optional dependencies) until one is called."""

    #: The optional dependency it needs (a top-level package name).
    requires: str
    #: The aggregator function.
    function: str
    #: A function that loads what it needs, or raises an ``ImportError`` that
    #: says how to install it.
    loader: str
    #: :func:`vlad.encode`'s pass fused with assignment, if it has one
    #: (:func:`fused_encoder`).
    fused: str | None = None


#: The aggregators that live in :mod:`vlad.backends`, by name.
BACKEND_AGGREGATORS: dict[str, BackendAggregator] = {
    "numba": BackendAggregator(
        "numba",
        "vlad.backends.numba._aggregator:aggregate_numba",
        "vlad.backends.numba:numba_kernels",
        fused="vlad.backends.numba._fused:encode_blocks",
    ),
    "jax": BackendAggregator(
        "jax",
        "vlad.backends.jax._aggregator:aggregate_jax",
        "vlad.backends.jax:import_jax",
    ),
    "torch": BackendAggregator(
        "torch",
        "vlad.backends.torch._aggregator:aggregate_torch",
        "vlad.backends.torch:import_torch",
    ),
}


def _load(entry: str) -> Callable:
    """The function a ``"module:name"`` string names, its module imported."""
    module, name = entry.split(":")
    return getattr(importlib.import_module(module), name)


def _backend_aggregator(name: str) -> Aggregator:
    """The aggregator ``name`` of :data:`BACKEND_AGGREGATORS`, as a function
    that imports its module when first called."""
    entry = BACKEND_AGGREGATORS[name].function

    def aggregate_on_backend(descriptors, labels, offsets, centers, **variants):
        return _load(entry)(descriptors, labels, offsets, centers, **variants)

    function_name = entry.partition(":")[2]
    aggregate_on_backend.__name__ = aggregate_on_backend.__qualname__ = function_name
    aggregate_on_backend.__doc__ = f"The {name!r} aggregator ({entry})."
    return aggregate_on_backend


def fused_encoder(name: str | None) -> Callable | None:
    """:func:`vlad.encode`'s pass of aggregator ``name`` fused with assignment,
    in one pass over the descriptors (see
    :func:`vlad.backends.numba._fused.encode_blocks`), or None when it has
    none."""
    backend = BACKEND_AGGREGATORS.get(name)
    if backend is None or backend.fused is None:
        return None
    return _load(backend.fused)


def available_aggregators() -> list[str]:
    """Names of the aggregators whose optional dependencies are installed."""
    return [
        name
        for name in AGGREGATORS
        if name not in BACKEND_AGGREGATORS
        or importlib.util.find_spec(BACKEND_AGGREGATORS[name].requires)
    ]


def require_aggregator(name: str) -> None:
    """Load what aggregator ``name`` needs (numba's kernels, JAX) now.

    Raises
    ------
    ImportError
        Its optional dependency is not installed; the message says how to
        install it.
    """
    if name == "auto":
        name = choose_aggregator(0, 1, 1)
    if name in BACKEND_AGGREGATORS:
        _load(BACKEND_AGGREGATORS[name].loader)()


def choose_aggregator(n_descriptors: int, n_clusters: int, n_features: int) -> str:
    """The name of the aggregator ``auto`` uses for an input of this size.

    The compiled ``numba`` kernels are the fastest at every size measured (see
    ``docs/performance.md``), so ``auto`` takes them whenever numba can be
    imported; otherwise the ``sparse`` product, the fastest that needs no
    compiler. The first use in a process loads the kernels from numba's disk
    cache (about 0.3 s; compiling them the very first time takes a few
    seconds). The sizes are accepted so that the rule can depend on them;
    today it does not.
    """
    try:
        _load(BACKEND_AGGREGATORS["numba"].loader)()
    except ImportError:
        return "sparse"
    return "numba"


def aggregate_auto(
    descriptors: np.ndarray,
    labels: np.ndarray,
    offsets: np.ndarray,
    centers: np.ndarray,
    **variants,
) -> np.ndarray:
    """The fastest installed aggregator for the input size (see
    :func:`choose_aggregator`)."""
    n_clusters, n_features = centers.shape
    name = choose_aggregator(descriptors.shape[0], n_clusters, n_features)
    return AGGREGATORS[name](descriptors, labels, offsets, centers, **variants)


#: Name -> aggregator function, every one with the same signature and result.
AGGREGATORS: dict[str, Aggregator] = {
    "auto": aggregate_auto,
    "loop": aggregate_loop,
    "masked": aggregate_masked,
    "ufunc-at": aggregate_ufunc_at,
    "ragged-cumsum": aggregate_ragged_cumsum,
    "sparse": aggregate_sparse,
    **{name: _backend_aggregator(name) for name in BACKEND_AGGREGATORS},
}


def resolve_aggregator(
    aggregator: str | Aggregator,
    shape: tuple[int, int, int] | None = None,
) -> tuple[str | None, Aggregator]:
    """The registry name and function of an aggregator name or callable.

    Parameters
    ----------
    aggregator : str or callable
    shape : (n_descriptors, n_clusters, n_features), optional
        With it, ``"auto"`` resolves to the aggregator it picks for that size.

    Returns
    -------
    name : str or None
        None for a callable given by the caller.
    function : callable

    Raises
    ------
    ValueError
        If ``aggregator`` is a string that names no aggregator.
    """
    if callable(aggregator):
        return None, aggregator
    if not isinstance(aggregator, str) or aggregator not in AGGREGATORS:
        raise VladError(
            f"Unknown aggregator {aggregator!r}; expected one of {sorted(AGGREGATORS)}"
        )
    if aggregator == "auto" and shape is not None:
        aggregator = choose_aggregator(*shape)
    return aggregator, AGGREGATORS[aggregator]


def check_aggregator_variant(
    aggregator: str | Aggregator, *, residual_norm: bool, weighted: bool
) -> None:
    """Check that ``aggregator`` can sum normalised residuals
    (``residual_norm``) and weighted ones (``weighted``) when asked to.

    Raises
    ------
    ValueError
        A registry aggregator without weights asked for them, or a caller's
        function whose signature lacks the keyword.
    """
    if isinstance(aggregator, str):
        if weighted and aggregator not in WEIGHTED_AGGREGATORS:
            raise VladError(
                f"aggregator {aggregator!r} supports hard assignment only; for "
                f"multiple or soft assignment use one of "
                f"{sorted(WEIGHTED_AGGREGATORS)}"
            )
        return
    for keyword, wanted in (("residual_norm", residual_norm), ("weights", weighted)):
        if wanted and not _accepts_keyword(aggregator, keyword):
            raise VladError(
                f"aggregator {_function_name(aggregator)} does not accept the "
                f"keyword {keyword}=; give it one or use a name from "
                f"{sorted(WEIGHTED_AGGREGATORS if weighted else AGGREGATORS)}"
            )


def call_aggregator(
    function: Aggregator,
    descriptors: np.ndarray,
    labels: np.ndarray,
    offsets: np.ndarray,
    centers: np.ndarray,
    *,
    residual_norm: bool = False,
    weights: np.ndarray | None = None,
) -> np.ndarray:
    """``function`` called with only the keywords in use, so that functions
    with the plain four-argument signature keep working."""
    variants = {}
    if residual_norm:
        variants["residual_norm"] = True
    if weights is not None:
        variants["weights"] = weights
    return function(descriptors, labels, offsets, centers, **variants)


def _accepts_keyword(function: Callable, keyword: str) -> bool:
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):  # no signature to read: let the call tell
        return True
    return any(
        parameter.kind == parameter.VAR_KEYWORD
        or (
            parameter.name == keyword
            and parameter.kind
            in (parameter.KEYWORD_ONLY, parameter.POSITIONAL_OR_KEYWORD)
        )
        for parameter in parameters
    )


def _function_name(function: Callable) -> str:
    module = getattr(function, "__module__", None)
    name = getattr(function, "__qualname__", type(function).__name__)
    return f"{module}.{name}" if module else name


def aggregate(
    descriptors: ArrayLike,
    labels: ArrayLike,
    offsets: ArrayLike,
    centers: ArrayLike,
    aggregator: str | Aggregator = "auto",
    *,
    residual_norm: bool = False,
    weights: ArrayLike | None = None,
) -> np.ndarray:
    """Sum of residuals per image and centre: the VLAD scatter-reduce.

    ``residuals[t, k] = sum(x - centers[k])`` over the descriptors ``x`` of image
    ``t`` (rows ``offsets[t]:offsets[t + 1]``) whose label is ``k``. A centre
    with no descriptors in an image gives an exact zero block; an image with no
    descriptors gives zeros.

    Parameters
    ----------
    descriptors : array-like of shape (n_descriptors, n_features)
    labels : array-like of int of shape (n_descriptors,) or (n_descriptors, n_nearest)
        Centre of each descriptor, in ``[0, n_clusters)``; see :func:`vlad.assign`.
        With ``weights``, each descriptor's centres (:func:`vlad.assign_nearest`).
    offsets : array-like of int of shape (n_images + 1,)
        Image boundaries: start at 0, non-decreasing, end at ``n_descriptors``.
    centers : array-like of shape (n_clusters, n_features)
    aggregator : str or callable, default="auto"
        A name from :data:`vlad.AGGREGATORS` or a function with the same
        signature. All give the same result up to float rounding.
    residual_norm : bool, default=False
        L2-normalise each residual ``x - c`` before summing (a zero residual
        adds zero): Delhumeau et al.'s residual normalisation.
    weights : array-like of shape (n_descriptors, n_nearest), optional
        Multiple or soft assignment: descriptor ``i`` adds ``weights[i, j] *
        (x - centers[labels[i, j]])`` for each ``j``
        (:func:`vlad.assignment_weights`). Only the aggregators in
        ``WEIGHTED_AGGREGATORS`` (``auto``, ``loop``, ``sparse``, ``numba``)
        take weights.

    Returns
    -------
    residuals : ndarray of shape (n_images, n_clusters, n_features)
        float64 for float64 descriptors, float32 otherwise (summed in float64).

    Raises
    ------
    ValueError
        Unknown aggregator, shapes that disagree, NaN/inf, labels out of
        range, or an aggregator function whose result has another shape or
        holds NaN.
    ImportError
        The aggregator's optional dependency is not installed.

    Examples
    --------
    >>> import numpy as np
    >>> import vlad
    >>> x = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    >>> vlad.aggregate(x, [0, 0, 1], [0, 2, 3], np.zeros((2, 2)), aggregator="loop")
    array([[[4., 6.],
            [0., 0.]],
    <BLANKLINE>
           [[0., 0.],
            [5., 6.]]])
    """
    resolve_aggregator(aggregator)  # an unknown name is refused before the data
    if not isinstance(residual_norm, (bool, np.bool_)):
        raise VladTypeError(
            f"residual_norm must be True or False; got {residual_norm!r}"
        )
    residual_norm = bool(residual_norm)
    check_aggregator_variant(
        aggregator, residual_norm=residual_norm, weighted=weights is not None
    )
    descriptors = as_float_matrix(descriptors, "descriptors")
    centers = as_float_matrix(centers, "centers", dtype=descriptors.dtype)
    check_n_features(descriptors.shape[1], centers.shape[1])
    if centers.shape[0] < 1:
        raise VladError("centers must hold at least one centre")
    offsets = as_offsets(offsets, descriptors.shape[0])
    if weights is None:
        labels = as_labels(labels, descriptors.shape[0], centers.shape[0])
    else:
        labels, weights = _as_weighted(
            labels, weights, descriptors.shape[0], centers.shape[0]
        )
    check_finite(centers, "centers")
    name, function = resolve_aggregator(
        aggregator, (descriptors.shape[0], *centers.shape)
    )
    if name is None:
        # A caller's function need not carry NaN into its sums: check first.
        check_finite(descriptors, "descriptors")

    # No pass over the descriptors before the sums: every descriptor is added
    # into one sum and IEEE sums never turn NaN or inf finite, so checking the
    # sums (K * F per image, not L * F) checks the descriptors (the numba
    # kernels do it as they write the sums). Sums that overflow are made again
    # on inputs scaled by a power of two and scaled back, so that an overflow
    # is an error, never an inf.
    def aggregate_checked(scaled, scaled_centers):
        residuals = call_aggregator(
            function,
            scaled,
            labels,
            offsets,
            scaled_centers,
            residual_norm=residual_norm,
            weights=weights,
        )
        if name is None:  # a function of the caller's: its result is checked
            label = getattr(function, "__qualname__", type(function).__name__)
            shape = (offsets.shape[0] - 1, *centers.shape)
            residuals = check_residuals(residuals, shape, descriptors.dtype, label)
        return residuals

    residuals, scale = run_in_range(
        aggregate_checked, descriptors, centers, finite=all_finite
    )
    # Unit residuals do not depend on the scale.
    return restore_scale(residuals, scale, power=1.0, normalised=residual_norm)


def _as_weighted(
    labels: ArrayLike, weights: ArrayLike, n_rows: int, n_clusters: int
) -> tuple[np.ndarray, np.ndarray]:
    """``labels`` and ``weights`` checked as two ``(n_rows, n_nearest)``
    arrays, integers in range and finite weights."""
    labels = np.asarray(labels)
    weights = np.asarray(weights)
    if weights.dtype.kind not in "fiu":
        raise VladTypeError(f"weights must hold numbers; got dtype {weights.dtype}")
    if labels.ndim != 2 or labels.shape[0] != n_rows or labels.shape[1] < 1:
        raise VladError(
            f"labels must have shape ({n_rows}, n_nearest) with weights; got "
            f"shape {labels.shape}"
        )
    if weights.shape != labels.shape:
        raise VladError(
            f"weights must have the shape of labels {labels.shape}; got shape "
            f"{weights.shape}"
        )
    flat = as_labels(labels.ravel(), labels.size, n_clusters)
    weights = np.ascontiguousarray(weights, dtype=np.float64)
    check_finite(weights, "weights")
    return flat.reshape(labels.shape), weights
