"""PCA-whitening of VLAD vectors (Jégou & Chum 2012), learned on a database."""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from vlad.core._files import (
    check_format_version,
    read_record_archive,
    save_record_archive,
)
from vlad.core._validation import as_float_matrix, check_finite, check_positive_int
from vlad.errors import VladError, VladTypeError

__all__ = ["MAX_EXACT_SIDE", "PCAWhitening", "fit_whitening", "nonzero_rows"]

FORMAT_VERSION = 1
#: Up to this many vectors or dimensions (a float64 matrix of at most 512 MiB),
#: the principal axes come from an exact eigendecomposition.
MAX_EXACT_SIDE = 8192
#: Rows (or columns) of the vectors converted to float64 at a time.
BLOCK_BYTES = 64 << 20


def nonzero_rows(vectors: np.ndarray) -> np.ndarray:
    """Mask of the rows that are not all zero.

    An all-zero VLAD vector is an image without descriptors: it has no
    direction to compare, so it is kept out of fitting and never matched.
    """
    return (vectors != 0).any(axis=1)


@dataclass(frozen=True, eq=False)
class PCAWhitening:
    """A learned projection: centre, rotate onto the principal axes, rescale.

    ``transform(x) = normalize((x - mean) @ components.T / scale)``, where
    ``scale = explained_variance ** (power / 2)``: ``power=1`` whitens fully
    (every axis of unit variance), ``power=0`` only projects, and values
    between shrink the large axes part of the way. Whitening down-weights the
    directions that every image shares (co-occurring, bursty visual words),
    which is what lifts VLAD's retrieval accuracy at 128 to 256 dimensions.

    Build one with :func:`fit_whitening`.

    Attributes
    ----------
    mean : ndarray of float32 of shape (n_features,)
    components : ndarray of float32 of shape (n_components, n_features)
        Principal axes, strongest first.
    explained_variance : ndarray of float32 of shape (n_components,)
    power : float
        Whitening power in [0, 1].
    """

    mean: np.ndarray
    components: np.ndarray
    explained_variance: np.ndarray
    power: float

    @property
    def n_features(self) -> int:
        """Dimension of the vectors it takes."""
        return self.components.shape[1]

    @property
    def n_components(self) -> int:
        """Dimension of the vectors it returns."""
        return self.components.shape[0]

    def transform(self, vectors: ArrayLike) -> np.ndarray:
        """Project, whiten and L2-normalise vectors; all-zero rows stay zero.

        Parameters
        ----------
        vectors : array-like of shape (n_vectors, n_features)

        Returns
        -------
        ndarray of float32 of shape (n_vectors, n_components)
        """
        vectors = as_float_matrix(vectors, "vectors", dtype=np.float32)
        if vectors.shape[1] != self.n_features:
            raise VladError(
                f"vectors have {vectors.shape[1]} dimensions; the whitening was "
                f"learned on {self.n_features}"
            )
        check_finite(vectors, "vectors")
        scale = self.explained_variance ** (self.power / 2)
        projected = ((vectors - self.mean) @ self.components.T) / scale
        projected[~nonzero_rows(vectors)] = 0
        norms = np.linalg.norm(projected, axis=1, keepdims=True)
        np.divide(projected, norms, out=projected, where=norms > 0)
        return projected.astype(np.float32, copy=False)

    def record(self) -> dict:
        """JSON description: dimensions and power."""
        return {
            "n_features": self.n_features,
            "n_components": self.n_components,
            "power": self.power,
        }

    def save(self, path: str | os.PathLike, *, overwrite: bool = False) -> None:
        """Write to an ``.npz`` file atomically.

        Parameters
        ----------
        path : str or os.PathLike
            The file to write.
        overwrite : bool, default=False
            Replace an existing file; without it, ``FileExistsError``.
        """
        save_record_archive(
            path,
            {"format": "whitening", "format_version": FORMAT_VERSION, **self.record()},
            overwrite=overwrite,
            mean=self.mean,
            components=self.components,
            explained_variance=self.explained_variance,
        )

    @classmethod
    def load(cls, path: str | os.PathLike) -> PCAWhitening:
        """Read a whitening written by :meth:`save` (never unpickles).

        Parameters
        ----------
        path : str or os.PathLike
            An ``.npz`` file.
        """
        arrays, record = read_record_archive(
            path, "whitening", ("mean", "components", "explained_variance")
        )
        check_format_version(path, record, "vlad whitening file", FORMAT_VERSION)
        mean, components, variance = (
            np.asarray(arrays[name], dtype=np.float32)
            for name in ("mean", "components", "explained_variance")
        )
        power = record.get("power")
        consistent = (
            mean.ndim == 1
            and components.shape == (variance.shape[0], mean.shape[0])
            and isinstance(power, (int, float))
            and 0 <= power <= 1
            and np.all(variance > 0)
            and np.isfinite(components).all()
            and np.isfinite(mean).all()
        )
        if not consistent:
            raise VladError(f"{path} holds an inconsistent whitening")
        return cls(mean, components, variance, float(power))


def fit_whitening(
    vectors: ArrayLike,
    n_components: int | None = None,
    *,
    power: float = 1.0,
    seed: int = 0,
    random_state: int | None = None,
) -> PCAWhitening:
    """Learn a PCA-whitening from database vectors.

    The principal axes are the eigenvectors of the vectors' covariance
    matrix, computed in float64 a block of rows at a time (or of their Gram
    matrix, when there are fewer vectors than dimensions), so the small
    variances that whitening divides by are exact. When both the vectors and
    their dimensions outnumber :data:`MAX_EXACT_SIDE`, scikit-learn's
    randomised PCA finds the leading axes instead, with enough oversampling
    and power iterations to get their variances within a fraction of a
    percent. All-zero rows (images without descriptors) are left out.

    Directions the vectors do not span (duplicated images, fewer images than
    dimensions) have a variance of zero up to rounding; dividing by it would
    blow rounding noise up into the strongest direction, so they are never
    kept: by default every spanned axis is, and asking for more is refused.

    Parameters
    ----------
    vectors : array-like of shape (n_vectors, n_features)
        VLAD vectors of the database (or of a similar, independent set).
    n_components : int, optional
        Output dimension; default every axis the data spans, at most
        ``min(n_vectors - 1, n_features)``.
    power : float, default=1.0
        1 whitens fully, 0 only projects (PCA), values between partly.
    seed : int, default=0
        Seed of the randomised solver used for the largest inputs.
    random_state : int, optional
        Deprecated name of ``seed`` (a ``FutureWarning``); ``seed`` as every
        other function of vlad names it.

    Returns
    -------
    PCAWhitening

    Raises
    ------
    ValueError
        NaN values, fewer than two non-zero vectors, a bad ``power``, or more
        components than the vectors span.

    References
    ----------
    .. [1] H. Jégou, O. Chum. "Negative evidences and co-occurences in image
       retrieval: the benefit of PCA and whitening". ECCV 2012.

    Examples
    --------
    >>> import numpy as np
    >>> from vlad.search import fit_whitening
    >>> vectors = np.random.default_rng(0).standard_normal((50, 8))
    >>> whitening = fit_whitening(vectors, 4)
    >>> whitening.transform(vectors).shape
    (50, 4)
    >>> duplicated = np.vstack([vectors[:5], vectors[:5]])
    >>> fit_whitening(duplicated).n_components
    4
    """
    if random_state is not None:
        warnings.warn(
            "fit_whitening's random_state is deprecated; use seed",
            FutureWarning,
            stacklevel=2,
        )
        seed = random_state
    vectors = as_float_matrix(vectors, "vectors", dtype=np.float32)
    check_finite(vectors, "vectors")
    if isinstance(power, bool) or not isinstance(power, (int, float, np.floating)):
        raise VladTypeError(f"power must be a number in [0, 1]; got {power!r}")
    if not 0 <= power <= 1:
        raise VladError(f"power must be in [0, 1]; got {power!r}")
    vectors = vectors[nonzero_rows(vectors)]
    n_vectors, n_features = vectors.shape
    if n_vectors < 2:
        raise VladError(f"whitening needs at least 2 non-zero vectors; got {n_vectors}")
    spanned = min(n_vectors - 1, n_features)
    if n_components is not None:
        n_components = check_positive_int(n_components, "n_components")
        if n_components > spanned:
            raise VladError(
                f"n_components={n_components} is more than {n_vectors} vectors of "
                f"{n_features} dimensions span (at most {spanned})"
            )
    mean = vectors.mean(axis=0, dtype=np.float64)
    # Rounding leaves a variance of about eps * total on the directions not
    # spanned; anything below this bound is one of them.
    tolerance = (
        _total_variance(vectors, mean)
        * max(n_vectors, n_features)
        * np.finfo(np.float64).eps
    )
    if min(n_vectors, n_features) <= MAX_EXACT_SIDE:
        variances, components = _exact_axes(vectors, mean, tolerance)
    else:
        variances, components = _randomised_axes(vectors, n_components, seed)
        spanned_axes = variances > tolerance
        variances, components = variances[spanned_axes], components[spanned_axes]
    rank = variances.shape[0]
    if n_components is None:
        n_components = rank
    elif n_components > rank:
        raise VladError(
            f"n_components={n_components} but the vectors span only {rank} "
            "directions (duplicated images?); ask for fewer components"
        )
    if n_components == 0:
        raise VladError("the non-zero vectors are all equal: nothing to whiten")
    return PCAWhitening(
        mean.astype(np.float32),
        np.ascontiguousarray(components[:n_components], dtype=np.float32),
        variances[:n_components].astype(np.float32),
        float(power),
    )


def _exact_axes(
    vectors: np.ndarray, mean: np.ndarray, tolerance: float
) -> tuple[np.ndarray, np.ndarray]:
    """The axes of variance above ``tolerance``, strongest first, from a float64
    eigendecomposition of the covariance (or, with fewer vectors than
    dimensions, Gram) matrix."""
    n_vectors, n_features = vectors.shape
    if n_features <= n_vectors:
        covariance = np.zeros((n_features, n_features))
        step = max(1, BLOCK_BYTES // (8 * n_features))
        for start in range(0, n_vectors, step):
            centred = vectors[start : start + step].astype(np.float64) - mean
            covariance += centred.T @ centred
        values, axes = np.linalg.eigh(covariance / (n_vectors - 1))
        kept = values > tolerance
        return values[kept][::-1], _signed(axes[:, kept][:, ::-1].T)
    # Fewer vectors than dimensions: the Gram matrix has the same non-zero
    # eigenvalues, and X^T v / sqrt(lambda) are the covariance's eigenvectors.
    gram = np.zeros((n_vectors, n_vectors))
    step = max(1, BLOCK_BYTES // (8 * n_vectors))
    for start in range(0, n_features, step):
        centred = vectors[:, start : start + step].astype(np.float64)
        centred -= mean[start : start + step]
        gram += centred @ centred.T
    values, weights = np.linalg.eigh(gram)
    kept = values > tolerance * (n_vectors - 1)
    values, weights = values[kept][::-1], weights[:, kept][:, ::-1]
    weights /= np.sqrt(values)
    components = np.empty((values.shape[0], n_features))
    for start in range(0, n_features, step):
        centred = vectors[:, start : start + step].astype(np.float64)
        centred -= mean[start : start + step]
        components[:, start : start + step] = (centred.T @ weights).T
    return values / (n_vectors - 1), _signed(components)


def _signed(axes: np.ndarray) -> np.ndarray:
    """``axes`` (one a row), each turned so that its entry of largest magnitude
    is positive: an eigenvector's sign is arbitrary, and LAPACK's choice
    differs between CPUs, so whitened vectors would too (scikit-learn's
    ``svd_flip`` makes the same choice)."""
    largest = np.argmax(np.abs(axes), axis=1)
    signs = np.sign(axes[np.arange(axes.shape[0]), largest])
    signs[signs == 0] = 1
    return axes * signs[:, None]


def _randomised_axes(
    vectors: np.ndarray, n_components: int | None, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """The leading axes by scikit-learn's PCA, randomised when fewer are asked."""
    from sklearn.decomposition import PCA

    if n_components is None:
        pca = PCA(svd_solver="full")
    else:
        # One oversample per component and ten power iterations: scikit-learn's
        # defaults (10 and 4 to 7) leave the variances of the last components
        # several percent off, and whitening divides by them.
        pca = PCA(
            n_components,
            svd_solver="randomized",
            n_oversamples=max(10, n_components),
            iterated_power=10,
            random_state=seed,
        )
    pca.fit(vectors)
    return pca.explained_variance_.astype(np.float64), pca.components_


def _total_variance(vectors: np.ndarray, mean: np.ndarray) -> float:
    """Sum of the per-dimension variances (the covariance's trace), in float64."""
    total = 0.0
    step = max(1, BLOCK_BYTES // (8 * vectors.shape[1]))
    for start in range(0, vectors.shape[0], step):
        centred = vectors[start : start + step].astype(np.float64) - mean
        total += float(np.einsum("ij,ij->", centred, centred))
    return total / (vectors.shape[0] - 1)
