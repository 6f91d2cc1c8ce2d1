"""One specification of each parameter: :class:`Parameter`.

A parameter's name, type, allowed values, default and help are written once,
here (and, for the descriptor options, in :mod:`vlad.images._sift`). The
functions' checks (:meth:`Parameter.check`), the estimators'
``_parameter_constraints`` (:mod:`vlad.estimators._parameters`) and the
command line's options (:func:`vlad.cli._options.spec_option`) are made from
it, so a bad value gets one message wherever it is given:
``power must be a number in (0, 1]; got 2``.
"""

from __future__ import annotations

import dataclasses
import math
from numbers import Integral, Real
from typing import Any

import numpy as np

from vlad.errors import ParameterError, ParameterTypeError, VladError

__all__ = [
    "ALGORITHM",
    "ALPHA",
    "ASMK_PARAMETERS",
    "ASSIGNMENT",
    "BACKEND",
    "BINARY",
    "DEPTH",
    "ENCODING_PARAMETERS",
    "FACTORY",
    "GEOMETRY",
    "IDF",
    "INLIER_THRESHOLD",
    "INTRA",
    "K",
    "KERNEL_WIDTH",
    "KMEANS_PARAMETERS",
    "L2",
    "MASS",
    "MATCHING",
    "MAX_ITER",
    "MIN_INLIERS",
    "MULTIPLE_ASSIGNMENT",
    "STOP_FRACTION",
    "N_CLUSTERS",
    "N_JOBS",
    "N_NEAREST",
    "POWER",
    "Parameter",
    "QUANTIZER",
    "QUANTIZER_PARAMETERS",
    "RATIO",
    "RESIDUAL_NORM",
    "SAMPLE",
    "SEARCH_PARAMETERS",
    "SPHERICAL",
    "THRESHOLD",
    "VERIFICATION_PARAMETERS",
    "VERIFY_KEYPOINTS",
]

_CLOSED = ("both", "left", "right", "neither")


@dataclasses.dataclass(frozen=True)
class Parameter:
    """What one parameter takes: its type, its range or choices, its default.

    Parameters
    ----------
    name : str
        The keyword of the functions and estimators that take it.
    kind : {bool, int, float, str}
        ``str`` parameters take one of ``choices``; ``int`` and ``float`` ones
        a number between ``low`` and ``high``. A bool is never a number here,
        and a ``float`` parameter takes integers too, but not NaN or infinity.
    default : object
        The functions' default.
    help : str
        One sentence for the command line's ``--help``.
    low, high : float, optional
        Bounds of a number; None for none.
    closed : {"both", "left", "right", "neither"}, default="both"
        Which of the bounds are allowed values.
    choices : tuple of str
        The values of a ``str`` parameter; none for any non-empty string (a
        faiss ``index_factory`` string, checked by faiss).
    none : bool, default=False
        Whether None is also allowed (a default decided elsewhere).
    specials : tuple of (value, str) pairs
        Values allowed outside the range, each with what it means:
        ``((-1, "every core"),)``.
    text : str, default="a non-empty string"
        What a ``str`` parameter without choices holds, in words.

    Examples
    --------
    >>> from vlad.core import POWER
    >>> POWER.check(0.5)
    0.5
    >>> POWER.expectation
    'a number in (0, 1]'
    >>> POWER.check(2)
    Traceback (most recent call last):
    ...
    vlad.errors.ParameterError: power must be a number in (0, 1]; got 2
    """

    name: str
    kind: type
    default: Any
    help: str
    low: float | None = None
    high: float | None = None
    closed: str = "both"
    choices: tuple[str, ...] = ()
    none: bool = False
    specials: tuple[tuple[Any, str], ...] = ()
    text: str = "a non-empty string"

    def __post_init__(self):
        if self.kind not in (bool, int, float, str):
            raise TypeError(f"kind must be bool, int, float or str; got {self.kind!r}")
        if self.closed not in _CLOSED:
            raise VladError(f"closed must be one of {list(_CLOSED)}")
        if self.choices and self.kind is not str:
            raise VladError("only a str parameter has choices")

    @property
    def low_closed(self) -> bool:
        """Whether ``low`` itself is allowed."""
        return self.closed in ("both", "left")

    @property
    def high_closed(self) -> bool:
        """Whether ``high`` itself is allowed."""
        return self.closed in ("both", "right")

    @property
    def expectation(self) -> str:
        """What a value must be, in words: ``"an integer >= 1"``."""
        if self.kind is bool:
            expected = "True or False"
        elif self.kind is str:
            expected = f"one of {list(self.choices)}" if self.choices else self.text
        else:
            expected = self._range_in_words()
        alternatives = ["None"] if self.none else []
        alternatives += [f"{value!r} ({meaning})" for value, meaning in self.specials]
        if not alternatives:
            return expected
        if self.kind is bool:
            return f"True, False or {' or '.join(alternatives)}"
        return f"{', '.join(alternatives)} or {expected}"

    def _range_in_words(self) -> str:
        noun = "an integer" if self.kind is int else "a number"
        low, high = _number(self.low), _number(self.high)
        if self.low is not None and self.high is not None:
            left = "[" if self.low_closed else "("
            right = "]" if self.high_closed else ")"
            return f"{noun} in {left}{low}, {high}{right}"
        if self.low is not None:
            if self.kind is float and self.low == 0 and not self.low_closed:
                return "a positive finite number"
            return f"{noun} {'>=' if self.low_closed else '>'} {low}"
        if self.high is not None:
            return f"{noun} {'<=' if self.high_closed else '<'} {high}"
        return "a finite number" if self.kind is float else noun

    def message(self, value) -> str:
        """The one-line complaint about ``value``.

        Parameters
        ----------
        value : object
            The value given for this parameter, written with :func:`repr`.

        Returns
        -------
        str
            ``"<name> must be <expectation>; got <value>"``.
        """
        return f"{self.name} must be {self.expectation}; got {value!r}"

    def check(self, value):
        """``value`` as a plain Python value of this parameter's kind.

        Parameters
        ----------
        value : object
            The value given for this parameter: a bool, an integer or a real
            number (NumPy scalars included), a string, or None where ``none``
            allows it.

        Returns
        -------
        bool, int, float, str or None
            ``value`` converted to ``kind`` (None stays None).

        Raises
        ------
        vlad.errors.ParameterTypeError
            A value of another type (a bool for a number, ``"0.5"`` for a
            number, ``"yes"`` for a bool): a ``TypeError``.
        vlad.errors.ParameterError
            A value of the right type but outside the range or the choices: a
            ``ValueError``. Both say :meth:`message`.
        """
        if value is None and self.none:
            return None
        if self.kind is bool:
            if not isinstance(value, (bool, np.bool_)):
                raise ParameterTypeError(self.message(value))
            return bool(value)
        if self.kind is str:
            if not isinstance(value, str):
                raise ParameterTypeError(self.message(value))
            if not (value in self.choices if self.choices else value.strip()):
                raise ParameterError(self.message(value))
            return value
        if isinstance(value, (bool, np.bool_)):
            raise ParameterTypeError(self.message(value))
        wanted = Integral if self.kind is int else Real
        if not isinstance(value, wanted):
            raise ParameterTypeError(self.message(value))
        if any(value == special for special, _ in self.specials):
            return self.kind(value)
        if not self.contains(value):
            raise ParameterError(self.message(value))
        return self.kind(value)

    def contains(self, number) -> bool:
        """Whether ``number`` (of the right type) is within the range.

        Parameters
        ----------
        number : int or float
            A number already of this parameter's type; for a ``float``
            parameter, NaN and infinity are never within the range.

        Returns
        -------
        bool
            True if ``number`` lies between ``low`` and ``high``, each bound
            included or not as ``closed`` says.
        """
        if self.kind is float and not math.isfinite(number):
            return False
        if self.low is not None:
            if number < self.low or (number == self.low and not self.low_closed):
                return False
        if self.high is not None:
            if number > self.high or (number == self.high and not self.high_closed):
                return False
        return True


def _number(bound: float | None) -> str:
    """A bound as written: ``1`` rather than ``1.0``."""
    return "" if bound is None else f"{bound:g}"


# --- How residual sums become VLAD vectors (vlad.EncodingOptions) ------------

POWER = Parameter(
    "power",
    float,
    1.0,
    "Power-law exponent; 0.5 is the signed square root, 1 leaves values as is.",
    low=0,
    high=1,
    closed="right",
)
INTRA = Parameter("intra", bool, True, "L2-normalise each centre's block.")
L2 = Parameter("l2", bool, True, "L2-normalise each whole vector.")
MASS = Parameter(
    "mass",
    bool,
    False,
    "Divide each centre's residual sum by its number of descriptors first.",
)
RESIDUAL_NORM = Parameter(
    "residual_norm",
    bool,
    False,
    "L2-normalise each residual before summing (Delhumeau et al. 2013); "
    "usually with --power 0.2.",
)
ASSIGNMENT = Parameter(
    "assignment",
    str,
    "hard",
    "Each descriptor to its nearest centre (hard), or to its --nearest N "
    "nearest with equal weights (multiple) or Gaussian ones (soft).",
    choices=("hard", "multiple", "soft"),
)
N_NEAREST = Parameter(
    "n_nearest",
    int,
    None,
    "Centres per descriptor for multiple and soft assignment [default: 2].",
    low=1,
    none=True,
)
KERNEL_WIDTH = Parameter(
    "kernel_width",
    float,
    1.0,
    "Soft assignment's kernel width, relative to each descriptor's nearest "
    "squared distance; larger spreads the weights more evenly.",
    low=0,
    closed="neither",
)

#: The specified fields of :class:`vlad.EncodingOptions` (its aggregator is
#: checked by its registry, :func:`vlad.core.aggregators.resolve_aggregator`).
ENCODING_PARAMETERS = (
    POWER,
    INTRA,
    L2,
    MASS,
    RESIDUAL_NORM,
    ASSIGNMENT,
    N_NEAREST,
    KERNEL_WIDTH,
)

# --- K-means (vlad.fit_codebook) ---------------------------------------------

N_CLUSTERS = Parameter(
    "n_clusters",
    int,
    256,
    "Number of centres K (visual words); vectors have K * F dimensions "
    "(F = 128 for SIFT).",
    low=1,
)
SAMPLE = Parameter(
    "sample",
    int,
    100_000,
    "Fit on a uniform sample of at most this many descriptors.",
    low=1,
    none=True,
)
BACKEND = Parameter(
    "backend",
    str,
    "auto",
    "K-means implementation: auto is faiss when it is installed, --algorithm "
    "is auto and over 50,000 descriptors are sampled; scikit-learn otherwise.",
    choices=("auto", "faiss", "sklearn"),
)
ALGORITHM = Parameter(
    "algorithm",
    str,
    "auto",
    "scikit-learn's k-means: Lloyd's, mini-batch, or auto (Lloyd up to 50,000 "
    "sampled descriptors, mini-batch above); two-level: faiss's hierarchical "
    "k-means for tens of thousands of words.",
    choices=("auto", "lloyd", "minibatch", "two-level"),
)
MAX_ITER = Parameter(
    "max_iter",
    int,
    None,
    "K-means iterations at most (default: 25 for faiss, 100 for scikit-learn).",
    low=1,
    none=True,
)
SPHERICAL = Parameter(
    "spherical",
    bool,
    False,
    "Spherical (cosine) k-means: unit-length descriptors and centres; encoding "
    "then scales each descriptor to unit length.",
)

#: The specified parameters of :func:`vlad.fit_codebook`.
KMEANS_PARAMETERS = (N_CLUSTERS, SAMPLE, BACKEND, ALGORITHM, MAX_ITER, SPHERICAL)

# --- Parallelism (every n_jobs) -----------------------------------------------

N_JOBS = Parameter(
    "n_jobs",
    int,
    None,
    "Images processed in parallel (-1: every core). Results do not depend on it.",
    low=1,
    none=True,
    specials=((-1, "every core"),),
)

# --- Search (vlad.search.build_index, VectorIndex.search) ---------------------

K = Parameter("k", int, 10, "Images per query.", low=1)
FACTORY = Parameter(
    "factory",
    str,
    None,
    "faiss index_factory string for approximate or compressed search, such as "
    '"IVF256,PQ32" or "HNSW32"; default exact search.',
    none=True,
    text="a faiss index_factory string",
)
SEARCH_PARAMETERS = Parameter(
    "parameters",
    str,
    None,
    'faiss search parameters, such as "nprobe=16".',
    none=True,
    text="faiss search parameters",
)

# --- Spatial verification (vlad.verification.spatial_rerank, rerank_spatially) ------

MATCHING = Parameter(
    "matching",
    str,
    "mutual+ratio",
    "How descriptors are paired: mutual nearest neighbours, those that also "
    "pass Lowe's ratio test, or the ratio test alone (vlad 0.4).",
    choices=("mutual", "mutual+ratio", "ratio"),
)
RATIO = Parameter(
    "ratio",
    float,
    0.8,
    "Lowe's ratio test of --matching ratio and mutual+ratio: lower keeps "
    "fewer, more distinctive matches.",
    low=0,
    high=1,
    closed="right",
)
GEOMETRY = Parameter(
    "model",
    str,
    "fundamental",
    "The model that inliers fit: fundamental (a 3-D scene from another "
    "viewpoint), homography (a plane), affine or similarity (edited copies).",
    choices=("fundamental", "homography", "affine", "similarity"),
)
INLIER_THRESHOLD = Parameter(
    "reprojection_threshold",
    float,
    None,
    "Largest error of an inlier, in pixels of images scaled down to keypoints "
    "1024 pixels across (default: 2 for fundamental, 8 for the others).",
    low=0,
    closed="neither",
    none=True,
)
MIN_INLIERS = Parameter(
    "min_inliers", int, 12, "Inliers that verify a result of --rerank spatial.", low=1
)
DEPTH = Parameter(
    "depth",
    int,
    None,
    "Results per query verified by --rerank spatial.",
    low=0,
    none=True,
)
VERIFY_KEYPOINTS = Parameter(
    "verify_keypoints",
    int,
    1024,
    "Match only each image's this many largest keypoints (hloc's: strongest); "
    "0 for all (vlad 0.4).",
    low=8,
    none=True,
    specials=((0, "every keypoint"),),
)

#: The specified parameters of :func:`vlad.verification.spatial_rerank`.
VERIFICATION_PARAMETERS = (
    MATCHING,
    RATIO,
    GEOMETRY,
    INLIER_THRESHOLD,
    MIN_INLIERS,
    DEPTH,
    VERIFY_KEYPOINTS,
)

# --- ASMK (vlad.asmk.build_asmk_index, ASMKIndex.search) --------------------

ALPHA = Parameter(
    "alpha",
    float,
    3.0,
    "Selectivity exponent of word similarities.",
    low=0,
    closed="neither",
)
THRESHOLD = Parameter(
    "threshold",
    float,
    0.0,
    "Word similarities below it count 0.",
    low=-1,
    high=1,
    closed="left",
)
BINARY = Parameter(
    "binary",
    bool,
    True,
    "Keep the sign bits of each aggregated residual (ASMK*, F/8 bytes a word) "
    "or the whole residual (ASMK, 4F bytes).",
)
IDF = Parameter("idf", bool, False, "Weigh words by inverse document frequency.")
QUANTIZER = Parameter(
    "quantizer",
    str,
    "Flat",
    "How descriptors find their nearest words: Flat (exact), or a faiss "
    "index_factory string over the words, such as HNSW32 (approximate, faster "
    "with tens of thousands of words).",
    text="'Flat' or a faiss index_factory string",
)
QUANTIZER_PARAMETERS = Parameter(
    "quantizer_parameters",
    str,
    None,
    'faiss search parameters of --quantizer, such as "efSearch=64".',
    none=True,
    text="faiss search parameters",
)
MULTIPLE_ASSIGNMENT = Parameter(
    "multiple_assignment",
    int,
    None,
    "ASMK index: words each query descriptor is assigned to (its nearest). "
    "[default: 5 for ASMK*, 3 for ASMK (--full)]",
    low=1,
    none=True,
)
STOP_FRACTION = Parameter(
    "stop_fraction",
    float,
    0.0,
    "ASMK index: queries leave out the index's commonest words, which together "
    "hold at most this fraction of its entries (a stop list; 0: none).",
    low=0,
    high=1,
    closed="left",
)

#: The specified parameters of :func:`vlad.asmk.build_asmk_index`.
ASMK_PARAMETERS = (ALPHA, THRESHOLD, BINARY, IDF, QUANTIZER, QUANTIZER_PARAMETERS)
