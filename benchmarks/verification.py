"""The spatial verification benchmark: milliseconds per verified pair.

Times :func:`vlad.verification.spatial_rerank` on real photos' descriptors
(a descriptors file from ``vlad extract``, with keypoints), for each variant
of :data:`VARIANTS` side by side in one run: vlad 0.4's verification (Lowe's
ratio test by OpenCV's brute-force matcher, an affine model by RANSAC, every
keypoint) and mutual nearest neighbours from matrix products with a
fundamental matrix by MAGSAC++, of every keypoint or of each image's 1,024
(the default) or 512 largest. Each query verifies its first ``depth``
candidates: its nearest images by VLAD vectors when ``--vectors`` are given
(as re-ranking meets them), otherwise images drawn at random with a fixed seed
(mostly unrelated: RANSAC's worst case). Each setting is timed once, after a
warm-up query, at one thread and at every core::

    python -m benchmarks.verification descriptors.npz --vectors vectors.npy \\
        --queries 10 --depth 20 --depth 100

prints a Markdown table: milliseconds per verified pair and per query, and
the mean inliers of a verified pair.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import time

import numpy as np

from vlad.core import DescriptorSets
from vlad.verification import spatial_rerank

__all__ = [
    "VARIANTS",
    "VerificationTiming",
    "benchmark_verification",
    "main",
    "nearest_candidates",
]

#: What is compared, by label: keyword arguments of ``spatial_rerank``.
VARIANTS = {
    "0.4: ratio test, affine, all keypoints": {
        "matching": "ratio",
        "model": "affine",
        "max_keypoints": None,
    },
    "mutual+ratio, fundamental, all keypoints": {
        "matching": "mutual+ratio",
        "model": "fundamental",
        "max_keypoints": None,
    },
    "mutual, fundamental, 1024 keypoints": {
        "matching": "mutual",
        "model": "fundamental",
    },
    "mutual+ratio, fundamental, 1024 keypoints (default)": {
        "matching": "mutual+ratio",
        "model": "fundamental",
    },
    "mutual+ratio, fundamental, 512 keypoints": {
        "matching": "mutual+ratio",
        "model": "fundamental",
        "max_keypoints": 512,
    },
}


@dataclasses.dataclass(frozen=True)
class VerificationTiming:
    """One row of the table: a variant at one depth and number of threads."""

    variant: str
    depth: int
    n_jobs: int
    n_queries: int
    seconds: float
    mean_inliers: float
    cpu_seconds: float = float("nan")

    @property
    def ms_per_pair(self) -> float:
        return 1000 * self.seconds / (self.n_queries * self.depth)

    @property
    def cpu_ms_per_pair(self) -> float:
        """CPU time of every thread per pair: what a pair costs however busy
        the machine is."""
        return 1000 * self.cpu_seconds / (self.n_queries * self.depth)

    @property
    def ms_per_query(self) -> float:
        return 1000 * self.seconds / self.n_queries


def nearest_candidates(
    vectors: np.ndarray, queries: np.ndarray, depth: int
) -> np.ndarray:
    """Each query row's ``depth`` most similar other rows of ``vectors``."""
    similarities = vectors[queries] @ vectors.T
    similarities[np.arange(len(queries)), queries] = -np.inf
    return np.argsort(-similarities, axis=1, kind="stable")[:, :depth]


def benchmark_verification(
    database: DescriptorSets,
    queries: np.ndarray,
    candidates: np.ndarray,
    *,
    depths: tuple[int, ...] = (20, 100),
    jobs: tuple[int, ...] = (1, -1),
    variants: dict[str, dict] | None = None,
) -> list[VerificationTiming]:
    """Time ``spatial_rerank`` of each query's candidates for every variant,
    depth and number of threads.

    Parameters
    ----------
    database : DescriptorSets
        With keypoints; queries are rows of it.
    queries : ndarray of int of shape (n_queries,)
    candidates : ndarray of int of shape (n_queries, max(depths))
    depths, jobs : tuple of int
    variants : dict, optional
        Label to keyword arguments of ``spatial_rerank``; :data:`VARIANTS`
        by default.
    """
    variants = VARIANTS if variants is None else variants
    rows = []
    for depth in depths:
        for n_jobs in jobs:
            for label, settings in variants.items():

                def verify_all(chosen, settings=settings, depth=depth, n_jobs=n_jobs):
                    return [
                        spatial_rerank(
                            database.keypoints_of(query),
                            database[query],
                            row,
                            database,
                            depth=depth,
                            n_jobs=n_jobs,
                            **settings,
                        )[1]
                        for query, row in zip(
                            queries[chosen], candidates[chosen], strict=True
                        )
                    ]

                verify_all(slice(0, 1))
                start, cpu_start = time.perf_counter(), time.process_time()
                inliers = verify_all(slice(None))
                seconds = time.perf_counter() - start
                cpu_seconds = time.process_time() - cpu_start
                verified = np.concatenate([found[found >= 0] for found in inliers])
                rows.append(
                    VerificationTiming(
                        label,
                        depth,
                        n_jobs if n_jobs > 0 else os.cpu_count() or 1,
                        len(queries),
                        seconds,
                        float(verified.mean()),
                        cpu_seconds,
                    )
                )
    return rows


def markdown(rows: list[VerificationTiming]) -> str:
    """The rows as a Markdown table."""
    lines = [
        "| verification | depth | threads | ms per pair | CPU ms per pair | "
        "ms per query | inliers per pair |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        lines.append(
            f"| {row.variant} | {row.depth} | {row.n_jobs} | {row.ms_per_pair:.2f} "
            f"| {row.cpu_ms_per_pair:.2f} | {row.ms_per_query:.1f} "
            f"| {row.mean_inliers:.1f} |"
        )
    return "\n".join(lines)


def main(arguments: list[str] | None = None) -> None:
    """``python -m benchmarks.verification``: see the module's docstring."""
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.verification", description=__doc__.split("\n")[0]
    )
    parser.add_argument("descriptors", help="descriptors file from vlad extract")
    parser.add_argument("--vectors", help=".npy of VLAD vectors, one row per image")
    parser.add_argument("--queries", type=int, default=10)
    parser.add_argument("--depth", type=int, action="append", dest="depths")
    parser.add_argument("--jobs", type=int, action="append")
    parser.add_argument(
        "--variant",
        action="append",
        dest="variants",
        metavar="TEXT",
        help="only the variants whose label holds TEXT (repeat; default: all)",
    )
    options = parser.parse_args(arguments)
    depths = tuple(options.depths or (20, 100))
    database = DescriptorSets.load(options.descriptors)
    if database.keypoints is None:
        parser.error(f"{options.descriptors} holds no keypoint positions")
    n_images = len(database)
    queries = np.linspace(0, n_images - 1, min(options.queries, n_images)).astype(int)
    if options.vectors:
        vectors = np.load(options.vectors, allow_pickle=False)
        candidates = nearest_candidates(vectors, queries, max(depths))
    else:
        rng = np.random.default_rng(0)
        candidates = np.stack(
            [
                rng.choice(np.delete(np.arange(n_images), query), max(depths), False)
                for query in queries
            ]
        )
    rows = benchmark_verification(
        database,
        queries,
        candidates,
        depths=depths,
        jobs=tuple(options.jobs or (1, -1)),
        variants={
            label: settings
            for label, settings in VARIANTS.items()
            if not options.variants or any(text in label for text in options.variants)
        },
    )
    print(
        f"{len(queries)} queries; {database.lengths.mean():.0f} descriptors per "
        f"image; {os.cpu_count()} cores"
    )
    print(markdown(rows))


if __name__ == "__main__":
    main()
