"""The visual vocabulary: k-means centres fitted on a sample of descriptors."""

from __future__ import annotations

import hashlib
import os
import warnings
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from vlad.core.descriptors import DescriptorSets, as_descriptor_sets
from vlad.core.finite import largest_magnitude, scale_exponent
from vlad.core.validation import (
    as_float_matrix,
    as_record,
    check_finite,
    check_positive_int,
)
from vlad.formats.files import (
    check_format_version,
    read_record_archive,
    save_record_archive,
)

__all__ = ["FULL_KMEANS_MAX_SAMPLES", "Codebook", "as_centers", "fit_codebook"]

#: Version 2 files hold several vocabularies (``vocabulary_sizes``); a codebook
#: of one vocabulary is still written as version 1.
FORMAT_VERSION = 2
#: Above this many sampled descriptors ``algorithm="auto"`` uses mini-batch k-means.
FULL_KMEANS_MAX_SAMPLES = 50_000


class Codebook:
    """K-means centres and a record of how they were made.

    Parameters
    ----------
    centers : array-like of shape (n_clusters, n_features)
    metadata : dict, optional
        JSON-serialisable record (seed, sample size, how the descriptors were
        made). ``metadata["descriptor"]`` describes the descriptors the codebook
        was fitted on, so that encoding can check it meets the same kind.
    vocabulary_sizes : sequence of int, optional
        Centres of each vocabulary when ``centers`` stacks several (positive,
        summing to n_clusters); default one vocabulary of all the centres.
        :func:`vlad.encode` encodes with each and concatenates the vectors.

    See Also
    --------
    fit_codebook : Fit a codebook with k-means.
    vlad.stack_vocabularies : A codebook of several vocabularies.
    """

    def __init__(
        self,
        centers: ArrayLike,
        metadata: dict | None = None,
        *,
        vocabulary_sizes: Sequence[int] | None = None,
    ):
        self.centers = as_float_matrix(centers, "centers")
        if self.centers.shape[0] < 1 or self.centers.shape[1] < 1:
            raise ValueError(
                f"centers must have at least one centre and one feature; "
                f"got shape {self.centers.shape}"
            )
        check_finite(self.centers, "centers")
        self.metadata = as_record(metadata, "metadata")
        self.vocabulary_sizes = _as_vocabulary_sizes(
            vocabulary_sizes, self.centers.shape[0]
        )

    @property
    def n_clusters(self) -> int:
        """Number of centres K."""
        return self.centers.shape[0]

    @property
    def n_features(self) -> int:
        """Descriptor dimension F."""
        return self.centers.shape[1]

    @property
    def n_vocabularies(self) -> int:
        """Number of vocabularies stacked in ``centers`` (1 for most codebooks)."""
        return len(self.vocabulary_sizes)

    @property
    def fingerprint(self) -> str:
        """SHA-256 of the centres' shape, dtype and bytes, and of the vocabulary
        sizes when there are several (first 16 hex digits)."""
        digest = hashlib.sha256()
        digest.update(f"{self.centers.shape}{self.centers.dtype.str}".encode())
        digest.update(self.centers.tobytes())
        if self.n_vocabularies > 1:
            digest.update(f"vocabularies{list(self.vocabulary_sizes)}".encode())
        return digest.hexdigest()[:16]

    def save(self, path: str | os.PathLike, *, overwrite: bool = True) -> None:
        """Write to an ``.npz`` file atomically; never pickles.

        An existing file is replaced only with ``overwrite``, and never one
        that appears while this one is written (``FileExistsError``).
        """
        several = self.n_vocabularies > 1
        save_record_archive(
            path,
            {
                **self.metadata,
                "format": "codebook",
                "format_version": FORMAT_VERSION if several else 1,
                "n_clusters": self.n_clusters,
                "n_features": self.n_features,
                "dtype": self.centers.dtype.name,
                **(
                    {"vocabulary_sizes": list(self.vocabulary_sizes)} if several else {}
                ),
            },
            overwrite=overwrite,
            centers=self.centers,
        )

    @classmethod
    def load(cls, path: str | os.PathLike) -> Codebook:
        """Read a codebook written by :meth:`save`.

        Raises
        ------
        ValueError
            If the file is not a vlad codebook (one-line message).
        """
        arrays, metadata = read_record_archive(path, "codebook", ("centers",))
        check_format_version(path, metadata, "vlad codebook file", FORMAT_VERSION)
        for key in ("format", "format_version", "n_clusters", "n_features", "dtype"):
            metadata.pop(key, None)
        sizes = metadata.pop("vocabulary_sizes", None)
        try:
            return cls(arrays["centers"], metadata, vocabulary_sizes=sizes)
        except (TypeError, ValueError) as error:
            raise ValueError(f"{path} holds an invalid codebook: {error}") from None

    def __repr__(self) -> str:
        several = (
            f"vocabulary_sizes={list(self.vocabulary_sizes)}, "
            if self.n_vocabularies > 1
            else ""
        )
        return (
            f"Codebook(n_clusters={self.n_clusters}, n_features={self.n_features}, "
            f"{several}dtype={self.centers.dtype}, fingerprint={self.fingerprint!r})"
        )


def _as_vocabulary_sizes(sizes, n_clusters: int) -> tuple[int, ...]:
    """``vocabulary_sizes`` checked against the number of centres."""
    if sizes is None:
        return (n_clusters,)
    if isinstance(sizes, (str, bytes)) or not isinstance(sizes, (Sequence, np.ndarray)):
        raise TypeError(
            f"vocabulary_sizes must be a sequence of positive integers; got {sizes!r}"
        )
    checked = tuple(check_positive_int(size, "vocabulary_sizes") for size in sizes)
    if sum(checked) != n_clusters:
        raise ValueError(
            f"vocabulary_sizes must sum to the number of centres ({n_clusters}); "
            f"got {list(checked)}"
        )
    return checked


def as_centers(codebook: Codebook | ArrayLike) -> np.ndarray:
    """Return the ``(K, F)`` centres of a :class:`Codebook` or array.

    Raises
    ------
    ValueError
        A codebook of several vocabularies: its stacked centres are not one
        vocabulary (:func:`vlad.encode` encodes with each in turn).
    """
    if isinstance(codebook, Codebook):
        if codebook.n_vocabularies > 1:
            raise ValueError(
                f"codebook holds {codebook.n_vocabularies} vocabularies (sizes "
                f"{list(codebook.vocabulary_sizes)}) but this takes one: encode "
                "with vlad.encode, or pass one of vlad.split_vocabularies(codebook)"
            )
        return codebook.centers
    return Codebook(codebook).centers


def fit_codebook(
    descriptors: ArrayLike | DescriptorSets | Sequence[ArrayLike],
    n_clusters: int = 64,
    *,
    sample: int | None = 100_000,
    seed: int | None = 0,
    algorithm: str = "auto",
    max_iter: int = 100,
) -> Codebook:
    """Fit k-means centres on a uniform sample of descriptors.

    Parameters
    ----------
    descriptors : array-like of shape (n_descriptors, n_features), \
            DescriptorSets or list of arrays
        Training descriptors; sets are flattened (image boundaries do not
        matter to k-means).
    n_clusters : int, default=64
        Number of centres K.
    sample : int or None, default=100_000
        Fit on at most this many descriptors drawn uniformly without
        replacement; ``None`` uses all of them.
    seed : int or None, default=0
        Seed for the sample and for k-means; the same seed gives the same
        codebook.
    algorithm : {"auto", "lloyd", "minibatch"}, default="auto"
        ``"lloyd"`` is scikit-learn's ``KMeans`` (Lloyd's algorithm),
        ``"minibatch"`` its ``MiniBatchKMeans``; ``"auto"`` uses Lloyd up to
        ``FULL_KMEANS_MAX_SAMPLES`` sampled descriptors and mini-batch above.
        ``"full"``, the name scikit-learn retired, is a deprecated alias of
        ``"lloyd"``.
    max_iter : int, default=100
        Maximum k-means iterations (epochs for mini-batch).

    Returns
    -------
    Codebook
        Centres in the descriptors' dtype; ``metadata`` records the seed, the
        sample size, the algorithm and the descriptors' own metadata.

    Raises
    ------
    ValueError
        Fewer descriptors than centres, NaN/inf descriptors, bad parameters.

    See Also
    --------
    Codebook : The fitted centres.
    VLADEncoder : The scikit-learn transformer that fits its codebook with this.

    Examples
    --------
    >>> import numpy as np
    >>> import vlad
    >>> X = np.random.default_rng(0).normal(size=(500, 8)).astype(np.float32)
    >>> codebook = vlad.fit_codebook(X, n_clusters=4, seed=0)
    >>> codebook.centers.shape, codebook.centers.dtype
    ((4, 8), dtype('float32'))
    """
    n_clusters = check_positive_int(n_clusters, "n_clusters")
    if sample is not None:
        sample = check_positive_int(sample, "sample")
    max_iter = check_positive_int(max_iter, "max_iter")
    if seed is not None:
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
            raise TypeError(
                f"seed must be a non-negative integer or None; got {seed!r}"
            )
        if seed < 0:
            raise ValueError(
                f"seed must be a non-negative integer or None; got {seed!r}"
            )
        seed = int(seed)
    if algorithm == "full":
        warnings.warn(
            'fit_codebook(algorithm="full") is deprecated; use algorithm="lloyd"',
            DeprecationWarning,
            stacklevel=2,
        )
        algorithm = "lloyd"
    if algorithm not in ("auto", "lloyd", "minibatch"):
        raise ValueError(
            "algorithm must be one of ['auto', 'lloyd', 'minibatch']; "
            f"got {algorithm!r}"
        )
    descriptor_metadata: dict = {}
    if isinstance(descriptors, (DescriptorSets, list, tuple)) or (
        isinstance(descriptors, np.ndarray) and descriptors.ndim == 3
    ):
        sets = as_descriptor_sets(descriptors)
        descriptor_metadata = sets.metadata
        descriptors = sets.descriptors
    descriptors = as_float_matrix(descriptors, "descriptors")
    n_descriptors = descriptors.shape[0]
    if n_descriptors < n_clusters:
        raise ValueError(
            f"cannot fit {n_clusters} centres on {n_descriptors} descriptors; "
            "need at least as many descriptors as n_clusters"
        )
    if sample is not None and sample < n_clusters:
        raise ValueError(
            f"sample={sample} is smaller than n_clusters={n_clusters}; k-means "
            "needs at least one descriptor per centre"
        )
    check_finite(descriptors, "descriptors")
    rng = np.random.default_rng(seed)
    if sample is not None and n_descriptors > sample:
        rows = np.sort(rng.choice(n_descriptors, size=sample, replace=False))
        training = descriptors[rows]
    else:
        training = descriptors
    if algorithm == "auto":
        algorithm = (
            "lloyd" if training.shape[0] <= FULL_KMEANS_MAX_SAMPLES else "minibatch"
        )
    # k-means squares distances: values of extreme magnitude are fitted scaled
    # by a power of two (the centres scale with them, exactly).
    exponent = scale_exponent(largest_magnitude(training), training.dtype)
    centers = _kmeans(
        np.ldexp(training, exponent), n_clusters, algorithm, max_iter, seed
    )
    centers = np.ldexp(centers, -exponent)
    metadata = {
        "seed": seed,
        "n_training_descriptors": int(training.shape[0]),
        "algorithm": algorithm,
        "descriptor": descriptor_metadata,
    }
    return Codebook(centers.astype(descriptors.dtype, copy=False), metadata)


def _kmeans(
    training: np.ndarray, n_clusters: int, algorithm: str, max_iter: int, seed
) -> np.ndarray:
    """Run scikit-learn's k-means on valid input and return the centres."""
    from sklearn.cluster import KMeans, MiniBatchKMeans

    if algorithm == "lloyd":
        estimator = KMeans(
            n_clusters=n_clusters, n_init=1, max_iter=max_iter, random_state=seed
        )
    else:
        estimator = MiniBatchKMeans(
            n_clusters=n_clusters,
            n_init=3,
            max_iter=max_iter,
            batch_size=max(1024, 4 * n_clusters),
            random_state=seed,
        )
    return estimator.fit(training).cluster_centers_
