"""K-means back-ends for codebooks: scikit-learn, faiss and spherical k-means.

Each back-end is a function with one signature,
``(training, n_clusters, *, algorithm, max_iter, seed, spherical, n_threads,
progress)``, that returns the ``(n_clusters, n_features)`` centres. They
assume valid, finite input of a safe magnitude (:func:`vlad.fit_codebook`
checks and scales it) and, when ``spherical``, rows already of unit length.

``progress``, when given, is called as ``progress(n_done, n_total)``: first
with 0, then after each iteration (each mini-batch step), and last with
``n_total`` also when k-means stopped early. It never changes the centres:
scikit-learn then reports its iterations by printing them (see
:mod:`vlad.core._kmeans_progress`), and faiss runs one iteration at a time,
each from the centres of the last, as its own loop does.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

import numpy as np

from vlad._extras import install_command
from vlad.core._assignment import CHUNK_BYTES, assign_valid
from vlad.core._kmeans_progress import finish_progress, printed_iterations
from vlad.core._parallel import available_cores
from vlad.core._pool import Progress

__all__ = [
    "FAISS_MAX_ITER",
    "KMEANS_BACKENDS",
    "SEEDING_ROWS_PER_CENTRE",
    "SKLEARN_MAX_ITER",
    "faiss_available",
    "faiss_kmeans",
    "sklearn_kmeans",
    "spherical_lloyd",
    "two_level_kmeans",
    "unit_rows",
]

#: Default iterations of scikit-learn's k-means (it stops earlier on convergence).
SKLEARN_MAX_ITER = 100
#: Default iterations of faiss k-means, which runs every one (faiss's default).
FAISS_MAX_ITER = 25
#: Rows per centre that the faiss back-end's k-means++ seeding looks at.
SEEDING_ROWS_PER_CENTRE = 8
#: Most centres the faiss back-end seeds by k-means++. Its greedy seeding
#: grows with the square of the centres (8,192 words took over 11 CPU
#: minutes on two cores, faiss's whole fit from random rows 2); merged
#: clusters, what it guards against, happen with a few well-separated
#: clusters, not with thousands of visual words.
KMEANS_PLUSPLUS_MAX_CLUSTERS = 2048


def unit_rows(descriptors: np.ndarray) -> np.ndarray:
    """Each row divided by its L2 norm; an all-zero row stays zero.

    Rows are first divided by their largest magnitude, so that the norm
    neither overflows (``1e30`` in float32) nor underflows.

    Parameters
    ----------
    descriptors : ndarray of shape (n_descriptors, n_features)
        Finite values.

    Returns
    -------
    ndarray of shape (n_descriptors, n_features)
        A new array of the same dtype.

    Examples
    --------
    >>> import numpy as np
    >>> from vlad.core._kmeans import unit_rows
    >>> unit_rows(np.array([[3.0, 4.0], [0.0, 0.0]])).tolist()
    [[0.6, 0.8], [0.0, 0.0]]
    """
    peaks = np.max(np.abs(descriptors), axis=1, keepdims=True, initial=0)
    peaks[peaks == 0] = 1
    scaled = descriptors / peaks
    norms = np.linalg.norm(scaled, axis=1, keepdims=True)
    norms[norms == 0] = 1
    scaled /= norms
    return scaled


def faiss_available() -> bool:
    """Whether faiss can be imported."""
    try:
        import faiss  # noqa: F401
    except ImportError:
        return False
    return True


def sklearn_kmeans(
    training: np.ndarray,
    n_clusters: int,
    *,
    algorithm: str,
    max_iter: int,
    seed: int | None,
    spherical: bool,
    n_threads: int | None,
    progress: Progress | None = None,
) -> np.ndarray:
    """scikit-learn's ``KMeans`` (``"lloyd"``) or ``MiniBatchKMeans``
    (``"minibatch"``); with ``spherical``, :func:`spherical_lloyd`."""
    from sklearn.cluster import KMeans, MiniBatchKMeans

    verbose = int(progress is not None)
    with _threadpool_limit(n_threads):
        if spherical:
            return spherical_lloyd(
                training, n_clusters, max_iter, seed, n_threads, progress=progress
            )
        if algorithm == "lloyd":
            n_total = max_iter
            estimator = KMeans(
                n_clusters=n_clusters,
                n_init=1,
                max_iter=max_iter,
                random_state=seed,
                verbose=verbose,
            )
        else:
            batch_size = max(1024, 4 * n_clusters)
            # MiniBatchKMeans's own count of steps: max_iter passes over the data.
            n_total = max(1, (max_iter * training.shape[0]) // batch_size)
            estimator = MiniBatchKMeans(
                n_clusters=n_clusters,
                n_init=3,
                max_iter=max_iter,
                batch_size=batch_size,
                random_state=seed,
                verbose=verbose,
            )
        with printed_iterations(progress, n_total):
            return estimator.fit(training).cluster_centers_


def spherical_lloyd(
    training: np.ndarray,
    n_clusters: int,
    max_iter: int,
    seed: int | None,
    n_threads: int | None = None,
    *,
    progress: Progress | None = None,
) -> np.ndarray:
    """Spherical k-means on unit rows: Lloyd's iterations whose centres are
    their members' mean scaled to unit length.

    Seeded by scikit-learn's k-means++ (``sklearn.cluster.kmeans_plusplus``);
    each iteration assigns each row to its nearest centre (on the sphere the
    nearest in Euclidean distance is the most similar in cosine) and stops
    when no label changes. A centre left without members takes the row least
    similar to its own centre, as scikit-learn's ``KMeans`` does; a centre
    whose members sum to zero keeps its place.

    Parameters
    ----------
    training : ndarray of shape (n_descriptors, n_features)
        Unit rows, at least ``n_clusters`` of them.
    n_clusters, max_iter : int
    seed : int or None
    n_threads : int or None, default=None
        Threads of the assignment (None: every core).
    progress : callable, optional
        Called as ``progress(n_done, max_iter)``: 0 first, then after each
        iteration, and ``max_iter`` when converged.

    Returns
    -------
    centers : ndarray of shape (n_clusters, n_features)
        Unit rows, in the dtype of ``training``.
    """
    from scipy.sparse import csr_matrix
    from sklearn.cluster import kmeans_plusplus

    from vlad.core._parallel import resolve_n_jobs

    n_workers = resolve_n_jobs(n_threads)
    rng = np.random.RandomState(seed)
    centers, _ = kmeans_plusplus(training, n_clusters, random_state=rng)
    centers = unit_rows(centers)
    rows = np.arange(training.shape[0])
    labels = None
    if progress is not None:
        progress(0, max_iter)
    for iteration in range(max_iter):
        if progress is not None and iteration:
            progress(iteration, max_iter)
        new_labels = assign_valid(training, centers, CHUNK_BYTES, n_workers)
        if labels is not None and np.array_equal(new_labels, labels):
            break
        labels = new_labels
        members = csr_matrix(
            (np.ones_like(rows, dtype=training.dtype), (labels, rows)),
            shape=(n_clusters, training.shape[0]),
        )
        sums = np.asarray(members @ training)
        counts = np.bincount(labels, minlength=n_clusters)
        empty = np.flatnonzero(counts == 0)
        if empty.size:
            similarity = np.einsum("nf,nf->n", training, centers[labels])
            sums[empty] = training[np.argsort(similarity, kind="stable")[: empty.size]]
        lengths = np.linalg.norm(sums, axis=1)
        moved = lengths > 0
        centers[moved] = unit_rows(sums[moved])
    finish_progress(progress, max_iter)
    return centers


def faiss_kmeans(
    training: np.ndarray,
    n_clusters: int,
    *,
    algorithm: str,
    max_iter: int,
    seed: int | None,
    spherical: bool,
    n_threads: int | None,
    progress: Progress | None = None,
) -> np.ndarray:
    """faiss's k-means (``faiss.Kmeans``: ``max_iter`` Lloyd's iterations in
    float32) on every training row, seeded by k-means++ up to
    ``KMEANS_PLUSPLUS_MAX_CLUSTERS`` centres and by random rows (faiss's own
    seeding) above; ``algorithm="two-level"`` is :func:`two_level_kmeans`.
    With ``progress``, one iteration at a time (:func:`_faiss_iterations`),
    which gives the same centres; the two-level fit reports when it ends.

    faiss seeds with random rows by default, which on a few well-separated
    clusters often puts two centres in one and never recovers. The seeds
    here are scikit-learn's greedy ``kmeans_plusplus`` on a uniform subsample
    of ``SEEDING_ROWS_PER_CENTRE`` rows per centre (at least 1,024), which
    costs about a fifth of the iterations at K=1024.
    """
    try:
        import faiss
    except ImportError:
        raise ImportError(
            "backend='faiss' requires faiss; install it with: "
            + install_command("faiss")
        ) from None
    training = np.ascontiguousarray(training, dtype=np.float32)
    if seed is None:
        seed = int(np.random.default_rng().integers(2**31 - 1))
    if algorithm == "two-level":
        # The coarse level seeded as any fit of its size; the second level's
        # hundreds of small fits from random rows, as faiss seeds them
        # (k-means++ there took four times as long as the whole fit).
        levels = iter([KMEANS_PLUSPLUS_MAX_CLUSTERS, 0])

        def fit(rows: np.ndarray, k: int) -> np.ndarray:
            return _faiss_lloyd(
                faiss, rows, k, max_iter, seed, spherical, n_threads,
                next(levels, 0),
            )  # fmt: skip

        if progress is not None:
            progress(0, max_iter)
        centers = two_level_kmeans(training, n_clusters, fit, n_threads)
        finish_progress(progress, max_iter)
        return centers
    return _faiss_lloyd(
        faiss, training, n_clusters, max_iter, seed, spherical, n_threads,
        KMEANS_PLUSPLUS_MAX_CLUSTERS, progress,
    )  # fmt: skip


def _faiss_lloyd(
    faiss, training, n_clusters, max_iter, seed, spherical, n_threads,
    plusplus_max_clusters, progress=None,
):  # fmt: skip
    """faiss's k-means of float32 ``training``, seeded by k-means++ up to
    ``plusplus_max_clusters`` centres, by faiss's random rows above."""
    n_training, n_features = training.shape
    seeds = None
    if progress is not None:
        progress(0, max_iter)
    if n_clusters <= plusplus_max_clusters:
        from sklearn.cluster import kmeans_plusplus

        rng = np.random.RandomState(seed)
        n_seeding = max(1024, SEEDING_ROWS_PER_CENTRE * n_clusters)
        candidates = training
        if n_training > n_seeding:
            candidates = training[np.sort(rng.choice(n_training, n_seeding, False))]
        with _threadpool_limit(n_threads):
            seeds, _ = kmeans_plusplus(candidates, n_clusters, random_state=rng)
    settings = {
        "niter": max_iter,
        "nredo": 1,
        "seed": seed,
        "spherical": spherical,
        "verbose": False,
        # fit_codebook's `sample` is the one subsample: faiss's own (256 rows
        # per centre) and its warning below 39 rows per centre are turned off.
        "max_points_per_centroid": -(-n_training // n_clusters) + 1,
        "min_points_per_centroid": 1,
    }
    with _faiss_threads(faiss, n_threads):
        if progress is not None:
            return _faiss_iterations(
                faiss, training, n_clusters, seeds, settings, progress
            )
        kmeans = faiss.Kmeans(n_features, n_clusters, **settings)
        kmeans.train(training, init_centroids=seeds)
    return kmeans.centroids


def two_level_kmeans(
    training: np.ndarray,
    n_clusters: int,
    fit: Callable[[np.ndarray, int], np.ndarray],
    n_threads: int | None = None,
) -> np.ndarray:
    """Hierarchical k-means for vocabularies of tens of thousands of words.

    ``round(sqrt(K))`` coarse centres are fitted on the training rows, then
    the rows of each coarse cluster are clustered into its share of the K
    centres, in proportion to its rows (at least one centre, at most one per
    row): about ``2 sqrt(K)`` distances a row and iteration instead of K. This
    is faiss's ``contrib.clustering.two_level_clustering`` (how faiss trains
    inverted files of a million lists), with every share kept between one
    and the rows of its cluster, which faiss's allocation does not ensure;
    each level is fitted by ``fit``.

    Parameters
    ----------
    training : ndarray of shape (n_training, n_features)
        At least ``n_clusters`` rows (of unit length for spherical k-means,
        whose nearest centres are the Euclidean ones).
    n_clusters : int
    fit : callable
        ``fit(rows, k)`` returns ``k`` centres of ``rows``.
    n_threads : int or None, default=None
        Threads of the coarse assignment (None: every core).

    Returns
    -------
    ndarray of shape (n_clusters, n_features)
        The centres, coarse cluster after coarse cluster.
    """
    n_coarse = max(1, min(n_clusters, round(np.sqrt(n_clusters))))
    coarse = np.asarray(fit(training, n_coarse), training.dtype)
    groups = assign_valid(training, coarse, CHUNK_BYTES, n_threads or available_cores())
    sizes = np.bincount(groups, minlength=n_coarse)
    shares = _shares(sizes, n_clusters)
    order = np.argsort(groups, kind="stable")
    bounds = np.concatenate([[0], np.cumsum(sizes)])
    return np.concatenate(
        [
            fit(training[order[bounds[group] : bounds[group + 1]]], int(shares[group]))
            for group in np.flatnonzero(shares)
        ]
    )


def _shares(sizes: np.ndarray, total: int) -> np.ndarray:
    """Integers summing to ``total`` in proportion to ``sizes`` (largest
    remainders), each at least 1 and at most its size where the size is
    positive, 0 where it is 0; ``total`` at most ``sizes.sum()``."""
    exact = sizes * (total / sizes.sum())
    least = np.minimum(sizes, 1)
    shares = np.clip(np.floor(exact).astype(np.int64), least, sizes)
    remainders = exact - shares
    while (missing := total - int(shares.sum())) != 0:
        if missing > 0:
            room = np.flatnonzero(shares < sizes)
            pick = room[np.argmax(remainders[room])]
        else:
            room = np.flatnonzero(shares > least)
            pick = room[np.argmin(remainders[room])]
        step = 1 if missing > 0 else -1
        shares[pick] += step
        remainders[pick] -= step
    return shares


def _faiss_iterations(
    faiss,
    training: np.ndarray,
    n_clusters: int,
    seeds: np.ndarray | None,
    settings: dict,
    progress: Progress,
) -> np.ndarray:
    """faiss's k-means of ``settings`` (``faiss.Kmeans``'s keywords), one
    iteration at a time, calling ``progress`` after each.

    ``faiss.Kmeans.train`` makes a ``faiss.Clustering`` that starts from the
    centres given (or from random rows), scales them to unit length when
    spherical, then runs ``niter`` iterations, each ending with the same
    scaling. The first call here is that with ``niter=1``; each later one
    starts from the centres the last ended with, as the loop does, and so
    must not scale them again: it is not spherical, and ``fvec_renorm_L2``
    (faiss's scaling) follows it. The assignment is the same index as
    ``Kmeans``'s: inner products when spherical, L2 otherwise.
    """
    n_features = training.shape[1]
    max_iter, spherical = settings["niter"], settings["spherical"]
    centroids = seeds
    for iteration in range(max_iter):
        parameters = faiss.ClusteringParameters()
        for name, value in settings.items():
            setattr(parameters, name, value)
        parameters.niter = 1
        parameters.spherical = spherical and iteration == 0
        clustering = faiss.Clustering(n_features, n_clusters, parameters)
        if centroids is not None:
            faiss.copy_array_to_vector(centroids.ravel(), clustering.centroids)
        index = (faiss.IndexFlatIP if spherical else faiss.IndexFlatL2)(n_features)
        clustering.train(training, index)
        centroids = faiss.vector_to_array(clustering.centroids).reshape(
            n_clusters, n_features
        )
        if spherical and iteration:
            faiss.fvec_renorm_L2(n_features, n_clusters, faiss.swig_ptr(centroids))
        progress(iteration + 1, max_iter)
    return centroids


@contextlib.contextmanager
def _threadpool_limit(n_threads: int | None) -> Iterator[None]:
    """OpenMP and BLAS held to ``n_threads`` while the block runs (None: as is)."""
    if n_threads is None:
        yield
        return
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=n_threads):
        yield


@contextlib.contextmanager
def _faiss_threads(faiss, n_threads: int | None) -> Iterator[None]:
    """faiss's OpenMP threads set to ``n_threads`` for the block, then restored."""
    if n_threads is None:
        yield
        return
    previous = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(n_threads)
    try:
        yield
    finally:
        faiss.omp_set_num_threads(previous)


#: Name -> k-means back-end; ``"auto"`` is resolved by :func:`vlad.fit_codebook`.
KMEANS_BACKENDS = {"sklearn": sklearn_kmeans, "faiss": faiss_kmeans}
