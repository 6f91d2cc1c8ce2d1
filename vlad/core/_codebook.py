"""The visual vocabulary: k-means centres fitted on a sample of descriptors."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from vlad.core._descriptors import DescriptorSets, as_descriptor_sets
from vlad.core._files import (
    check_format_version,
    read_record_archive,
    save_record_archive,
)
from vlad.core._finite import largest_magnitude, scale_exponent
from vlad.core._kmeans import (
    FAISS_MAX_ITER,
    KMEANS_BACKENDS,
    SKLEARN_MAX_ITER,
    faiss_available,
    unit_rows,
)
from vlad.core._parallel import resolve_n_jobs
from vlad.core._parameters import (
    ALGORITHM,
    BACKEND,
    MAX_ITER,
    N_CLUSTERS,
    SAMPLE,
    SPHERICAL,
)
from vlad.core._pool import Progress
from vlad.core._validation import (
    as_float_matrix,
    as_record,
    check_finite,
    check_positive_int,
    check_seed,
)
from vlad.errors import VladError, VladTypeError

__all__ = [
    "DEFAULT_N_CLUSTERS",
    "FULL_KMEANS_MAX_SAMPLES",
    "Codebook",
    "as_centers",
    "fit_codebook",
    "on_codebook_metric",
]

#: Version 2 files hold several vocabularies (``vocabulary_sizes``); a codebook
#: of one vocabulary is still written as version 1.
FORMAT_VERSION = 2
#: Centres K a codebook has unless told otherwise: chosen on the retrieval
#: benchmark (docs/encodings.md), where 256 beat 64 and 128 on every tier.
DEFAULT_N_CLUSTERS = N_CLUSTERS.default
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
            raise VladError(
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
    def metric(self) -> str:
        """``"cosine"`` for a spherical k-means codebook, else ``"euclidean"``."""
        return "cosine" if self.metadata.get("metric") == "cosine" else "euclidean"

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

    def save(self, path: str | os.PathLike, *, overwrite: bool = False) -> None:
        """Write to an ``.npz`` file atomically; never pickles.

        Parameters
        ----------
        path : str or os.PathLike
            The file to write.
        overwrite : bool, default=True
            Replace an existing file; never one that appears while this one is
            written (``FileExistsError``).
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

        Parameters
        ----------
        path : str or os.PathLike
            An ``.npz`` file.

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
            raise VladError(f"{path} holds an invalid codebook: {error}") from None

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
        raise VladTypeError(
            f"vocabulary_sizes must be a sequence of positive integers; got {sizes!r}"
        )
    checked = tuple(check_positive_int(size, "vocabulary_sizes") for size in sizes)
    if sum(checked) != n_clusters:
        raise VladError(
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
            raise VladError(
                f"codebook holds {codebook.n_vocabularies} vocabularies (sizes "
                f"{list(codebook.vocabulary_sizes)}) but this takes one: encode "
                "with vlad.encode, or pass one of vlad.split_vocabularies(codebook)"
            )
        return codebook.centers
    return Codebook(codebook).centers


def fit_codebook(
    descriptors: ArrayLike | DescriptorSets | Sequence[ArrayLike],
    n_clusters: int = DEFAULT_N_CLUSTERS,
    *,
    sample: int | None = 100_000,
    seed: int | None = 0,
    backend: str = "auto",
    algorithm: str = "auto",
    max_iter: int | None = None,
    spherical: bool = False,
    n_jobs: int | None = None,
    progress: Progress | None = None,
) -> Codebook:
    """Fit k-means centres on a uniform sample of descriptors.

    Parameters
    ----------
    descriptors : array-like of shape (n_descriptors, n_features), \
            DescriptorSets or list of arrays
        Training descriptors; sets are flattened (image boundaries do not
        matter to k-means).
    n_clusters : int, default=DEFAULT_N_CLUSTERS
        Number of centres K.
    sample : int or None, default=100_000
        Fit on at most this many descriptors drawn uniformly without
        replacement; ``None`` uses all of them. It is the only subsample:
        faiss's own (256 descriptors per centre) is turned off.
    seed : int or None, default=0
        Seed for the sample and for k-means; the same seed gives the same
        codebook (with faiss, the same seed and ``n_jobs``).
    backend : {"auto", "sklearn", "faiss"}, default="auto"
        The k-means implementation. ``"faiss"`` is faiss's k-means (Lloyd's
        iterations from random descriptors, in float32, every one of
        ``max_iter`` run); ``"sklearn"`` is scikit-learn's, as ``algorithm``
        says. ``"auto"`` is faiss when it is installed, ``algorithm`` is
        ``"auto"`` and more than ``FULL_KMEANS_MAX_SAMPLES`` descriptors are
        sampled (where scikit-learn would run mini-batch k-means, 0.5-3% worse
        on SIFT), scikit-learn otherwise; ``docs/codebooks.md`` has the
        measurements.
    algorithm : {"auto", "lloyd", "minibatch", "two-level"}, default="auto"
        For scikit-learn: ``"lloyd"`` is its ``KMeans`` (Lloyd's algorithm),
        ``"minibatch"`` its ``MiniBatchKMeans``; ``"auto"`` uses Lloyd up to
        ``FULL_KMEANS_MAX_SAMPLES`` sampled descriptors and mini-batch above.
        faiss runs Lloyd's algorithm, or with ``"two-level"`` (faiss only,
        the back-end it picks) hierarchical k-means: ``sqrt(K)`` coarse
        centres, then each coarse cluster's descriptors clustered into its
        share of the K (:func:`vlad.core.two_level_kmeans`), for vocabularies
        of tens of thousands of words that Lloyd's algorithm would take hours
        to fit.
    max_iter : int or None, default=None
        Maximum k-means iterations (epochs for mini-batch); None is the
        back-end's default, 100 for scikit-learn (which stops earlier once
        converged) and 25 for faiss.
    spherical : bool, default=False
        Spherical (cosine) k-means: descriptors are scaled to unit length
        (all-zero ones are left out) and centres are scaled back to unit length
        at every iteration (faiss's ``spherical=True``; with scikit-learn,
        :func:`vlad.core.spherical_lloyd`, which has no mini-batch
        form). The codebook records ``metadata["metric"] = "cosine"`` and
        :func:`vlad.encode` then scales each descriptor to unit length before
        assigning it, leaving out all-zero ones.
    n_jobs : int or None, default=None
        Threads of k-means (None or -1: as many as the back-end uses by
        default, every core); they are set for the call only and restored.
    progress : callable, optional
        Called as ``progress(n_done, n_total)``: with 0 as k-means starts,
        after each iteration (each step of mini-batch k-means) with the most
        it runs as ``n_total``, and with ``n_total`` when it ends, early or
        not. The centres are the same with or without it. With
        scikit-learn, the iterations are read from what it prints with
        ``verbose=1``, taken from ``sys.stdout`` meanwhile (other output
        passes through).

    Returns
    -------
    Codebook
        Centres in the descriptors' dtype; ``metadata`` records the seed, the
        sample size, the back-end, the algorithm, the iterations, the metric
        (``"euclidean"`` or ``"cosine"``) and the descriptors' own metadata.

    Raises
    ------
    ValueError
        Fewer descriptors than centres, NaN/inf descriptors, bad parameters.
    ImportError
        ``backend="faiss"`` without faiss installed.

    See Also
    --------
    Codebook : The fitted centres.
    VLADEncoder : The scikit-learn transformer that fits its codebook with this.

    References
    ----------
    .. [1] I. S. Dhillon, D. S. Modha. "Concept decompositions for large sparse
       text data using clustering". Machine Learning 42, 2001 (spherical
       k-means).
    .. [2] N. Keetha et al. "AnyLoc: Towards Universal Visual Place
       Recognition". RA-L 2023 (VLAD on a cosine codebook).

    Examples
    --------
    >>> import numpy as np
    >>> import vlad
    >>> X = np.random.default_rng(0).normal(size=(500, 8)).astype(np.float32)
    >>> codebook = vlad.fit_codebook(X, n_clusters=4, seed=0)
    >>> codebook.centers.shape, codebook.centers.dtype
    ((4, 8), dtype('float32'))
    >>> cosine = vlad.fit_codebook(X, 4, spherical=True, backend="sklearn")
    >>> cosine.metadata["metric"], np.linalg.norm(cosine.centers, axis=1).round(3)
    ('cosine', array([1., 1., 1., 1.], dtype=float32))
    """
    n_clusters = N_CLUSTERS.check(n_clusters)
    sample = SAMPLE.check(sample)
    max_iter = MAX_ITER.check(max_iter)
    seed = check_seed(seed)
    spherical = SPHERICAL.check(spherical)
    n_threads = None if n_jobs in (None, -1) else resolve_n_jobs(n_jobs)
    backend, algorithm = _resolve_strategy(backend, algorithm, bool(spherical))
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
        raise VladError(
            f"cannot fit {n_clusters} centres on {n_descriptors} descriptors; "
            "need at least as many descriptors as n_clusters"
        )
    if sample is not None and sample < n_clusters:
        raise VladError(
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
    if backend == "auto":
        backend = _auto_backend(training.shape[0], algorithm)
    if algorithm == "auto":
        algorithm = (
            "lloyd"
            if training.shape[0] <= FULL_KMEANS_MAX_SAMPLES or backend == "faiss"
            else "minibatch"
        )
    if max_iter is None:
        max_iter = FAISS_MAX_ITER if backend == "faiss" else SKLEARN_MAX_ITER
    if spherical:
        # All-zero descriptors have no direction: left out, as encoding does.
        training, exponent = unit_rows(training), 0
        training = training[np.any(training != 0, axis=1)]
        if training.shape[0] < n_clusters:
            raise VladError(
                f"cannot fit {n_clusters} spherical centres on "
                f"{training.shape[0]} non-zero descriptors; need at least "
                "as many as n_clusters"
            )
    else:
        # k-means squares distances: values of extreme magnitude are fitted
        # scaled by a power of two (the centres scale with them, exactly);
        # faiss computes in float32 whatever the input.
        working = np.float32 if backend == "faiss" else training.dtype
        exponent = scale_exponent(largest_magnitude(training), working)
    centers = KMEANS_BACKENDS[backend](
        np.ldexp(training, exponent),
        n_clusters,
        algorithm=algorithm,
        max_iter=max_iter,
        seed=seed,
        spherical=bool(spherical),
        n_threads=n_threads,
        progress=progress,
    )
    centers = np.ldexp(centers.astype(descriptors.dtype, copy=False), -exponent)
    metadata = {
        "seed": seed,
        "n_training_descriptors": int(training.shape[0]),
        "backend": backend,
        "algorithm": f"spherical-{algorithm}" if spherical else algorithm,
        "max_iter": max_iter,
        "metric": "cosine" if spherical else "euclidean",
        "descriptor": descriptor_metadata,
    }
    return Codebook(centers, metadata)


def on_codebook_metric(
    descriptor_sets: DescriptorSets, codebook: Codebook | ArrayLike
) -> DescriptorSets:
    """The descriptors as a codebook compares them: for a cosine codebook
    (``metadata["metric"] == "cosine"``) each row scaled to unit length and
    all-zero rows left out (they have no direction), otherwise
    ``descriptor_sets`` itself.

    Parameters
    ----------
    descriptor_sets : DescriptorSets
    codebook : Codebook or array-like of shape (n_clusters, n_features)
        A plain array is a Euclidean codebook.

    Returns
    -------
    DescriptorSets
        The same images, names and metadata; keypoints of the rows kept.

    Examples
    --------
    >>> import numpy as np
    >>> import vlad
    >>> from vlad.core._codebook import on_codebook_metric
    >>> cosine = vlad.Codebook(np.eye(2), {"metric": "cosine"})
    >>> sets = vlad.DescriptorSets([[3.0, 4.0], [0.0, 0.0], [0.0, 2.0]], [0, 2, 3])
    >>> unit = on_codebook_metric(sets, cosine)
    >>> unit.descriptors.tolist(), unit.offsets.tolist()
    ([[0.6, 0.8], [0.0, 1.0]], [0, 1, 2])
    """
    if not isinstance(codebook, Codebook) or codebook.metric != "cosine":
        return descriptor_sets
    check_finite(descriptor_sets.descriptors, "descriptors")
    unit = unit_rows(descriptor_sets.descriptors)
    keep = np.any(unit != 0, axis=1)
    keypoints = descriptor_sets.keypoints
    if not keep.all():
        unit = unit[keep]
        kept_before = np.concatenate([[0], np.cumsum(keep)])
        offsets = kept_before[descriptor_sets.offsets]
        keypoints = None if keypoints is None else keypoints[keep]
    else:
        offsets = descriptor_sets.offsets
    return DescriptorSets(
        unit,
        offsets,
        descriptor_sets.names,
        descriptor_sets.metadata,
        keypoints=keypoints,
    )


def _resolve_strategy(backend, algorithm, spherical: bool) -> tuple[str, str]:
    """The back-end and algorithm names that ``backend`` and ``algorithm``
    ask for; one-line errors for names they cannot take."""
    algorithm = ALGORITHM.check(algorithm)
    backend = BACKEND.check(backend)
    if algorithm == "two-level":
        if backend == "sklearn":
            raise VladError(
                "algorithm='two-level' is faiss's k-means; pass backend='faiss' "
                "(or 'auto')"
            )
        return "faiss", algorithm
    if backend == "faiss" and algorithm not in ("auto", "lloyd"):
        raise VladError(
            f"algorithm={algorithm!r} is not a faiss k-means; "
            "faiss runs 'lloyd' or 'two-level' (or pass backend='sklearn')"
        )
    if spherical and algorithm == "minibatch":
        raise VladError(
            "algorithm='minibatch' has no spherical form; use algorithm='lloyd' "
            "or 'auto' with spherical=True"
        )
    if backend == "faiss" or spherical:
        algorithm = "lloyd"
    return backend, algorithm


def _auto_backend(n_training: int, algorithm: str) -> str:
    """``backend="auto"``: faiss where scikit-learn's ``"auto"`` would fall
    back to mini-batch (and faiss is installed), scikit-learn otherwise."""
    if (
        algorithm == "auto"
        and n_training > FULL_KMEANS_MAX_SAMPLES
        and faiss_available()
    ):
        return "faiss"
    return "sklearn"
