"""The benchmark workloads, their data, and the float64 reference results.

- :class:`Workload` and the named workloads (:data:`WORKLOADS`, what
  ``--size`` accepts in :data:`SIZES`, the sweep's :data:`SWEEP_ROWS` and
  :data:`SWEEP_SHAPE`);
- :class:`Problem`, a workload's data: descriptors built from
  ``np.random.default_rng(seed)``, the essay's fitted k-means and the labels
  (:func:`make_problem`);
- the rules that skip a method where it would be too slow or too large
  (:func:`skip_reason`);
- the float64 residual sums every aggregator is compared with
  (:func:`reference_residuals`).

References
----------
.. [1] V. Feinberg. "Scatter Reduction (Numpy Gems, Part 5)". 2021.
   https://vladfeinberg.com/2021/09/15/scatter-reduction.html
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from benchmarks.measuring import limit_threads
from vlad.core import DescriptorSets, assign
from vlad.datasets import make_descriptor_sets

__all__ = [
    "ESSAY_NORMALIZATION",
    "GIB",
    "LOOP_MAX_ITERATIONS",
    "MASKED_MAX_ELEMENTS",
    "MEMORY_LIMIT_BYTES",
    "MIB",
    "SEARCH_SIZES",
    "SIZES",
    "SWEEP_ROWS",
    "SWEEP_SHAPE",
    "WORKLOADS",
    "Problem",
    "Workload",
    "make_problem",
    "naivec_temporary_bytes",
    "parse_sizes",
    "reference_residuals",
    "skip_reason",
]

MIB = 1 << 20
GIB = 1 << 30

#: Normalisation shared by every end-to-end method: the essay's signed square
#: root followed by a global L2 norm.
ESSAY_NORMALIZATION = {"power": 0.5, "intra": False, "l2": True}

#: ``masked`` forms every residual ``x - c_k``: ``N * K * F`` of them, about 4 ns
#: each on a 2-core EPYC, so above this it is skipped unless asked for.
MASKED_MAX_ELEMENTS = 1 << 28
#: ``loop`` runs ``T * K`` masked sums in Python, about 10 us each.
LOOP_MAX_ITERATIONS = 1 << 18
#: The essay's ``naivec`` is skipped when its ``(T, L, K, F)`` temporary is larger.
MEMORY_LIMIT_BYTES = 2 * GIB


@dataclasses.dataclass(frozen=True)
class Workload:
    """Shape and kind of one benchmark input.

    Parameters
    ----------
    name : str
    n_images : int
        T, the number of images.
    n_descriptors : int
        L, descriptors per image.
    n_features : int
        F, the descriptor dimension.
    n_clusters : int
        K, the number of centres.
    dtype : {"float32", "float64"}, default="float32"
    kind : {"sift", "gaussian"}, default="sift"
        As in :func:`vlad.datasets.make_descriptor_sets`.
    """

    name: str
    n_images: int
    n_descriptors: int
    n_features: int
    n_clusters: int
    dtype: str = "float32"
    kind: str = "sift"

    @property
    def n_rows(self) -> int:
        """N = T * L, the number of descriptors."""
        return self.n_images * self.n_descriptors

    @property
    def itemsize(self) -> int:
        """Bytes per descriptor value."""
        return np.dtype(self.dtype).itemsize

    def describe(self) -> str:
        """One line: the shape, the dtype and the size of the descriptors."""
        size = self.n_rows * self.n_features * self.itemsize / MIB
        return (
            f"T={self.n_images}, L={self.n_descriptors}, F={self.n_features}, "
            f"K={self.n_clusters}, {self.dtype} {self.kind} "
            f"(N={self.n_rows:,} descriptors, {size:,.1f} MiB)"
        )


#: The named workloads of the benchmarks. ``a`` is the essay's own (Gaussian data, as
#: its ``np.random.randn``).
WORKLOADS: dict[str, Workload] = {
    "a": Workload("a", 256, 128, 64, 16, dtype="float64", kind="gaussian"),
    "b": Workload("b", 1000, 1000, 128, 64),
    "c": Workload("c", 200, 2000, 128, 256),
    "single": Workload("single", 1, 500, 128, 64),
}
#: Numbers of descriptors N of the sweep, at ``SWEEP_SHAPE``.
SWEEP_ROWS = (10_000, 30_000, 100_000, 300_000, 1_000_000, 4_000_000)
#: Descriptors per image, features and centres of the sweep.
SWEEP_SHAPE = {"n_descriptors": 1000, "n_features": 128, "n_clusters": 64}
#: What ``--size`` accepts; ``all`` runs them in this order.
SIZES = ("a", "single", "b", "c", "sweep")
#: The search benchmarks (:data:`benchmarks.search.SEARCH_WORKLOADS`), which
#: ``--size`` also accepts; ``all`` leaves them out (``search`` alone takes
#: about 15 minutes and 8 GB on two cores).
SEARCH_SIZES = ("search-small", "search")


def parse_sizes(sizes: str | Sequence[str]) -> list[str]:
    """Expand ``"all"`` and check the names against :data:`SIZES`.

    Raises
    ------
    ValueError
        An unknown size.
    """
    names = [sizes] if isinstance(sizes, str) else list(sizes)
    expanded: list[str] = []
    for name in names:
        if name == "all":
            expanded += [size for size in SIZES if size not in expanded]
        elif name in SIZES or name in SEARCH_SIZES:
            if name not in expanded:
                expanded.append(name)
        else:
            raise ValueError(
                f"Unknown size {name!r}; expected one of "
                f"{[*SIZES, *SEARCH_SIZES, 'all']}"
            )
    return expanded


@dataclasses.dataclass(frozen=True)
class Problem:
    """A workload's data: descriptor sets, a fitted k-means and the labels.

    ``kmeans`` is a fitted :class:`sklearn.cluster.MiniBatchKMeans` (the
    essay's methods call its ``predict``); its centres are the codebook of
    every method, and ``labels`` are :func:`vlad.assign`'s for them.
    """

    workload: Workload
    sets: DescriptorSets
    kmeans: Any
    labels: np.ndarray

    @property
    def descriptors(self) -> np.ndarray:
        """All descriptors, shape (N, F)."""
        return self.sets.descriptors

    @property
    def offsets(self) -> np.ndarray:
        """Image boundaries, shape (T + 1,)."""
        return self.sets.offsets

    @property
    def centers(self) -> np.ndarray:
        """The k-means centres, shape (K, F), in the descriptors' dtype."""
        return self.kmeans.cluster_centers_

    def images(self) -> np.ndarray:
        """The descriptors as the essay takes them, a (T, L, F) view."""
        workload = self.workload
        return self.descriptors.reshape(
            workload.n_images, workload.n_descriptors, workload.n_features
        )

    def head(self, n_images: int) -> Problem:
        """The first ``n_images`` images, as views of this problem's arrays."""
        stop = int(self.offsets[n_images])
        workload = dataclasses.replace(
            self.workload,
            name=f"{self.workload.name}[:{n_images}]",
            n_images=n_images,
        )
        sets = DescriptorSets(
            self.descriptors[:stop], self.offsets[: n_images + 1], names=range(n_images)
        )
        return Problem(workload, sets, self.kmeans, self.labels[:stop])


def make_problem(
    workload: Workload,
    *,
    seed: int = 0,
    sample: int = 20_000,
    threads: int | None = 1,
) -> Problem:
    """Build a workload's descriptors, fit the essay's k-means and assign labels.

    Parameters
    ----------
    workload : Workload
    seed : int, default=0
        Seeds the descriptors (:func:`vlad.datasets.make_descriptor_sets`),
        the k-means sample and k-means itself.
    sample : int, default=20_000
        k-means is fitted on at most this many descriptors; fitting is not
        timed, so only the centres it gives matter.
    threads : int or None, default=1
        Thread limit while fitting (see
        :func:`benchmarks.measuring.limit_threads`). scikit-learn fixes the
        number of OpenMP threads ``predict`` uses when it fits, so this is
        also the essay methods' thread count: pass the limit the measurements
        run under.

    Returns
    -------
    Problem
    """
    from sklearn.cluster import MiniBatchKMeans

    sets = make_descriptor_sets(
        workload.n_images,
        workload.n_descriptors,
        workload.n_features,
        kind=workload.kind,
        dtype=np.dtype(workload.dtype),
        seed=seed,
    )
    descriptors = sets.descriptors
    rng = np.random.default_rng(seed)
    n_rows = descriptors.shape[0]
    rows = np.sort(rng.choice(n_rows, size=min(n_rows, sample), replace=False))
    kmeans = MiniBatchKMeans(n_clusters=workload.n_clusters, random_state=seed)
    with limit_threads(threads):
        kmeans.fit(descriptors[rows])
    labels = assign(descriptors, kmeans.cluster_centers_)
    return Problem(workload, sets, kmeans, labels)


def naivec_temporary_bytes(workload: Workload) -> int:
    """Size of ``naivec``'s (T, L, K, F) residual temporary (it makes two)."""
    return (
        workload.n_rows * workload.n_clusters * workload.n_features * workload.itemsize
    )


def skip_reason(
    name: str, workload: Workload, *, slow: bool = False, memory_limit: int
) -> str | None:
    """Why the aggregator or essay method ``name`` is not run at ``workload``.

    Parameters
    ----------
    name : str
        ``"aggregate <aggregator>"`` or ``"essay <method>"``.
    workload : Workload
    slow : bool, default=False
        Run ``masked`` and ``loop`` however long they take.
    memory_limit : int
        Largest (T, L, K, F) temporary ``naivec`` may make, in bytes.

    Returns
    -------
    str or None
        The reason, as the table shows it, or None to run it.
    """
    n_elements = workload.n_rows * workload.n_clusters * workload.n_features
    n_iterations = workload.n_images * workload.n_clusters
    if name == "essay naivec" and naivec_temporary_bytes(workload) > memory_limit:
        return (
            f"skipped (memory): its (T, L, K, F) temporary needs "
            f"{naivec_temporary_bytes(workload) / GIB:.1f} GiB "
            f"> {memory_limit / GIB:.1f} GiB"
        )
    if slow:
        return None
    if name == "aggregate masked" and n_elements > MASKED_MAX_ELEMENTS:
        return f"skipped (slow): N*K*F = {n_elements:.1e} residuals"
    if name == "aggregate loop" and n_iterations > LOOP_MAX_ITERATIONS:
        return f"skipped (slow): T*K = {n_iterations:,} Python iterations"
    return None


def reference_residuals(
    descriptors: np.ndarray, labels: np.ndarray, offsets: np.ndarray, centers
) -> np.ndarray:
    """Residual sums in float64, independently of the aggregators.

    One ``np.bincount`` per feature, which accumulates in float64.

    Parameters
    ----------
    descriptors : ndarray of shape (n_descriptors, n_features)
    labels : ndarray of int of shape (n_descriptors,)
    offsets : ndarray of int of shape (n_images + 1,)
    centers : ndarray of shape (n_clusters, n_features)

    Returns
    -------
    residuals : ndarray of float64 of shape (n_images, n_clusters, n_features)
    """
    n_images = offsets.shape[0] - 1
    n_clusters, n_features = centers.shape
    n_segments = n_images * n_clusters
    image_of_rows = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
    segments = image_of_rows * n_clusters + labels
    sums = np.empty((n_segments, n_features), dtype=np.float64)
    for feature in range(n_features):
        sums[:, feature] = np.bincount(
            segments, weights=descriptors[:, feature], minlength=n_segments
        )
    counts = np.bincount(segments, minlength=n_segments)
    residuals = sums.reshape(n_images, n_clusters, n_features)
    residuals -= counts.reshape(n_images, n_clusters, 1) * centers.astype(np.float64)
    return residuals
