"""``python -m benchmarks.codebooks``: codebook quality against fitting time.

For each size, fits a codebook of K centres on N training descriptors with
each method of :data:`CODEBOOK_METHODS` and reports, side by side in one run,
the seconds of the fit and the held-out quantisation error: the mean squared
Euclidean distance from each of 100,000 held-out descriptors to its nearest
centre (lower is better), computed by brute force in float64.

The descriptors are SIFT-like: the RootSIFT descriptors of the photos in
``data/`` (about 6,800 of 128 dimensions, extracted once), resampled with
replacement and perturbed, each coordinate plus Gaussian noise of half that
coordinate's standard deviation over the photos, negative values clipped to
zero (RootSIFT is non-negative) and each row scaled back to unit length.

Usage, from the root of a source checkout::

    python -m benchmarks.codebooks [--size small|medium|large ...]
        [--threads N] [--json results.json]

``--size smoke`` is a tiny run for tests.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import json
import time
from collections.abc import Callable
from pathlib import Path

import click
import numpy as np

import vlad
from benchmarks.tables import markdown_table

__all__ = [
    "CODEBOOK_METHODS",
    "CODEBOOK_SIZES",
    "CodebookSize",
    "benchmark_codebooks",
    "format_codebook_table",
    "main",
    "make_codebook_problem",
    "quantisation_error",
]

DATA = Path(__file__).resolve().parent.parent / "data"
N_HELDOUT = 100_000


@dataclasses.dataclass(frozen=True)
class CodebookSize:
    """One benchmark size: ``n_training`` descriptors, ``n_clusters`` centres."""

    name: str
    n_training: int
    n_clusters: int
    n_heldout: int = N_HELDOUT


CODEBOOK_SIZES = {
    size.name: size
    for size in (
        CodebookSize("smoke", 3_000, 8, 1_000),
        CodebookSize("small", 100_000, 64),
        CodebookSize("medium", 1_000_000, 256),
        CodebookSize("large", 1_000_000, 1024),
    )
}


@functools.cache
def photo_descriptors() -> np.ndarray:
    """RootSIFT descriptors of every bundled photo, ``(L, 128)`` float32."""
    photos = sorted(path for path in DATA.iterdir() if path.suffix in (".jpg", ".png"))
    return np.concatenate([vlad.extract_sift(vlad.read_image(p)) for p in photos])


def make_codebook_problem(
    n_training: int, n_heldout: int, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """SIFT-like training and held-out descriptors (see the module docstring).

    Returns
    -------
    training : ndarray of shape (n_training, 128), float32
    heldout : ndarray of shape (n_heldout, 128), float32
    """
    photos = photo_descriptors()
    spread = 0.5 * photos.std(axis=0)
    rng = np.random.default_rng(seed)
    n_rows = n_training + n_heldout
    descriptors = np.empty((n_rows, photos.shape[1]), dtype=np.float32)
    block = 100_000
    for start in range(0, n_rows, block):
        stop = min(start + block, n_rows)
        rows = photos[rng.integers(0, photos.shape[0], stop - start)]
        noise = rng.standard_normal(rows.shape, dtype=np.float32) * spread
        descriptors[start:stop] = np.maximum(rows + noise, 0)
    descriptors /= np.linalg.norm(descriptors, axis=1, keepdims=True)
    return descriptors[:n_training], descriptors[n_training:]


def quantisation_error(descriptors: np.ndarray, centers: np.ndarray) -> float:
    """Mean squared distance from each descriptor to its nearest centre.

    The nearest centre is found by :func:`vlad.assign`; the distances are
    computed again in float64 from the differences.
    """
    labels = vlad.assign(descriptors, centers)
    total = 0.0
    for start in range(0, descriptors.shape[0], 50_000):
        stop = start + 50_000
        differences = descriptors[start:stop].astype(np.float64) - centers[
            labels[start:stop]
        ].astype(np.float64)
        total += float(np.einsum("nf,nf->", differences, differences))
    return total / descriptors.shape[0]


def _fit(**settings) -> Callable[[np.ndarray, int, int | None], np.ndarray]:
    """A method: :func:`vlad.fit_codebook` with ``settings``."""

    def fit(training, n_clusters, n_jobs):
        options = dict(settings)
        per_centre = options.pop("per_centre", None)
        if per_centre is not None:
            options["sample"] = per_centre * n_clusters
        return vlad.fit_codebook(
            training, n_clusters, seed=0, n_jobs=n_jobs, **options
        ).centers

    return fit


def _minibatch(**settings) -> Callable[[np.ndarray, int, int | None], np.ndarray]:
    """A method: scikit-learn's ``MiniBatchKMeans`` with ``settings`` on the
    same 100,000-descriptor sample as :func:`vlad.fit_codebook`."""

    def fit(training, n_clusters, n_jobs):
        from sklearn.cluster import MiniBatchKMeans
        from threadpoolctl import threadpool_limits

        rng = np.random.default_rng(0)
        if training.shape[0] > 100_000:
            rows = np.sort(rng.choice(training.shape[0], 100_000, replace=False))
            training = training[rows]
        options = dict(settings)
        batch = options.pop("batch_per_centre")
        with threadpool_limits(limits=n_jobs):
            kmeans = MiniBatchKMeans(
                n_clusters,
                batch_size=max(8192, batch * n_clusters),
                random_state=0,
                **options,
            )
            return kmeans.fit(training).cluster_centers_

    return fit


def _faiss_defaults(training, n_clusters, n_jobs):
    """``faiss.Kmeans(d, k, seed=0).train(all rows)``: 25 iterations from
    random rows on at most 256 rows per centre, as users call faiss directly."""
    import faiss

    previous = faiss.omp_get_max_threads()
    if n_jobs is not None:
        faiss.omp_set_num_threads(n_jobs)
    try:
        kmeans = faiss.Kmeans(training.shape[1], n_clusters, seed=0)
        kmeans.train(training)
    finally:
        faiss.omp_set_num_threads(previous)
    return kmeans.centroids


#: Label -> (back-end it needs, method(training, n_clusters, n_jobs) -> centres).
CODEBOOK_METHODS: dict[str, tuple[str, Callable]] = {
    "sklearn auto (mini-batch above 50k)": ("sklearn", _fit(backend="sklearn")),
    "sklearn Lloyd": ("sklearn", _fit(backend="sklearn", algorithm="lloyd")),
    "sklearn mini-batch, batch max(8192, 32K), n_init 1": (
        "sklearn",
        _minibatch(batch_per_centre=32, n_init=1),
    ),
    "sklearn mini-batch, batch 8192, no early stop, 30 epochs": (
        "sklearn",
        _minibatch(batch_per_centre=0, n_init=1, max_no_improvement=None, max_iter=30),
    ),
    "faiss, 10 iterations": ("faiss", _fit(backend="faiss", max_iter=10)),
    "faiss, 25 iterations": ("faiss", _fit(backend="faiss", max_iter=25)),
    "faiss, 50 iterations": ("faiss", _fit(backend="faiss", max_iter=50)),
    "faiss, 25 iterations, 256 per centre": (
        "faiss",
        _fit(backend="faiss", max_iter=25, per_centre=256),
    ),
    "faiss.Kmeans defaults (random seeding, 256 per centre)": (
        "faiss",
        _faiss_defaults,
    ),
    "vlad default (backend='auto')": ("", _fit()),
}


def benchmark_codebooks(
    size: CodebookSize, *, n_jobs: int | None = None, methods=None
) -> list[dict]:
    """Fit with each method at ``size``; one record per method.

    Returns
    -------
    list of dict
        ``{"size", "n_training", "n_clusters", "method", "seconds", "error"}``,
        where ``error`` is the held-out quantisation error.
    """
    training, heldout = make_codebook_problem(size.n_training, size.n_heldout)
    methods = {
        label: method
        for label, (needs, method) in (methods or CODEBOOK_METHODS).items()
        if needs != "faiss" or importlib.util.find_spec("faiss") is not None
    }
    # A first call pays for imports and thread pools: not timed.
    for method in methods.values():
        method(training[:1000], 4, n_jobs)
    records = []
    for label, method in methods.items():
        start = time.perf_counter()
        centers = method(training, size.n_clusters, n_jobs)
        seconds = time.perf_counter() - start
        records.append(
            {
                "size": size.name,
                "n_training": size.n_training,
                "n_clusters": size.n_clusters,
                "method": label,
                "seconds": seconds,
                "error": quantisation_error(heldout, centers),
            }
        )
    return records


def format_codebook_table(records: list[dict]) -> str:
    """A Markdown table of ``records``; errors also relative to sklearn Lloyd."""
    lloyd = {
        record["size"]: record["error"]
        for record in records
        if record["method"] == "sklearn Lloyd"
    }
    rows = []
    for record in records:
        reference = lloyd.get(record["size"])
        rows.append(
            [
                f"N={record['n_training']:.0e} K={record['n_clusters']}",
                record["method"],
                f"{record['error']:.5f}",
                "" if reference is None else f"{record['error'] / reference:.4f}",
                f"{record['seconds']:.2f}",
            ]
        )
    return markdown_table(
        ["size", "method", "held-out error", "vs Lloyd", "seconds"], rows, "llrrr"
    )


@click.command()
@click.option(
    "--size",
    "sizes",
    type=click.Choice(list(CODEBOOK_SIZES)),
    multiple=True,
    help="Sizes to run (default: small, medium and large).",
)
@click.option("--threads", type=int, default=None, help="n_jobs of every fit.")
@click.option("--json", "json_path", type=click.Path(), help="Also write JSON here.")
def main(sizes: tuple[str, ...], threads: int | None, json_path: str | None) -> None:
    """Held-out quantisation error and seconds of each codebook method."""
    records = []
    for name in sizes or ("small", "medium", "large"):
        records += benchmark_codebooks(CODEBOOK_SIZES[name], n_jobs=threads)
        click.echo(format_codebook_table(records), err=True)
    click.echo(format_codebook_table(records))
    if json_path:
        Path(json_path).write_text(json.dumps(records, indent=1) + "\n")


if __name__ == "__main__":
    main()
