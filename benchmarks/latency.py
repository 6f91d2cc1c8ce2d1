"""Single-image latency: ``vlad.encode([x], codebook)`` against bare NumPy.

:func:`benchmark_latency` times the kernels a bare NumPy encoder of one image
needs (the product with the centres, the argmin, a scatter-add of the
residuals in three variants, the signed square root with L2 norm), each alone
on precomputed inputs, and compares ``vlad.encode`` with the sum of their
medians.
"""

from __future__ import annotations

import functools

import numpy as np

from benchmarks.measuring import MAX_SECONDS, measure
from benchmarks.suites import settings_note
from benchmarks.tables import ENCODE, KERNEL, Table, format_seconds
from benchmarks.workloads import ESSAY_NORMALIZATION, Problem, reference_residuals
from vlad.core import encode, normalize

__all__ = ["SCATTER_KERNELS", "benchmark_latency"]


#: Scatter-adds a bare NumPy encoder of one image may use; the fastest counts.
SCATTER_KERNELS = ("np.add.at", "sort + np.add.reduceat", "one-hot @ x")


def _scatter_add_at(image, labels, centers):
    sums = np.zeros(centers.shape, dtype=image.dtype)
    np.add.at(sums, labels, image)
    sums -= np.bincount(labels, minlength=centers.shape[0])[:, None] * centers
    return sums


def _scatter_reduceat(image, labels, centers):
    order = np.argsort(labels, kind="stable")
    sorted_labels = labels[order]
    starts = np.flatnonzero(np.diff(sorted_labels, prepend=-1))
    sums = np.zeros(centers.shape, dtype=image.dtype)
    sums[sorted_labels[starts]] = np.add.reduceat(image[order], starts, axis=0)
    sums -= np.bincount(labels, minlength=centers.shape[0])[:, None] * centers
    return sums


def _scatter_one_hot(image, labels, centers):
    one_hot = labels == np.arange(centers.shape[0])[:, None]
    sums = one_hot.astype(image.dtype) @ image
    sums -= one_hot.sum(axis=1)[:, None] * centers
    return sums


def _signed_sqrt_l2(sums):
    vector = sums.ravel()
    vector = np.sign(vector) * np.sqrt(np.abs(vector))
    vector /= np.linalg.norm(vector)
    return vector


def benchmark_latency(
    problem: Problem,
    *,
    repeats: int = 5,
    threads: int | None = 1,
    max_seconds: float = MAX_SECONDS,
) -> Table:
    """``vlad.encode([x], codebook)`` against bare NumPy kernels for one image.

    The bare kernels are the matrix product ``x @ (-2 centers.T)``, the argmin
    of the distances ``|c|^2 - 2 x.c``, a scatter-add of the residuals (three
    variants; the fastest counts) and the signed square root with L2 norm,
    each timed alone on precomputed inputs. Their medians, summed, are the
    baseline of every row.

    Parameters
    ----------
    problem : Problem
        Its first image is used.
    repeats, threads, max_seconds
        As in :func:`benchmarks.suites.benchmark_workload`.

    Returns
    -------
    Table
    """
    image = problem.sets[0]
    centers = problem.centers
    options = {"repeats": repeats, "threads": threads, "max_seconds": max_seconds}
    scaled_centers_t = np.ascontiguousarray(-2.0 * centers.T)
    squared_norms = np.einsum("kf,kf->k", centers, centers)
    products = image @ scaled_centers_t
    labels = np.argmin(products + squared_norms, axis=1)
    sums = _scatter_add_at(image, labels, centers)
    scatters = dict(
        zip(
            SCATTER_KERNELS,
            (_scatter_add_at, _scatter_reduceat, _scatter_one_hot),
            strict=True,
        )
    )
    kernel = functools.partial(measure, group=KERNEL, **options)
    rows = [
        kernel(
            "product x @ (-2 centers.T)",
            functools.partial(np.matmul, image, scaled_centers_t),
        ),
        kernel(
            "argmin of products + |c|^2",
            lambda: np.argmin(products + squared_norms, axis=1),
        ),
        *(
            kernel(
                f"scatter-add: {name}",
                functools.partial(function, image, labels, centers),
            )
            for name, function in scatters.items()
        ),
        kernel("signed sqrt + L2", functools.partial(_signed_sqrt_l2, sums)),
    ]
    fastest_scatter = min(
        (m for m in rows if m.name.startswith("scatter-add")), key=lambda m: m.median
    )
    bare = (rows[0].name, rows[1].name, fastest_scatter.name, rows[-1].name)
    for measurement in rows:
        measurement.baseline = bare
    rows.append(
        measure(
            "vlad.encode([x], codebook)",
            lambda: encode([image], centers, **ESSAY_NORMALIZATION),
            group=ENCODE,
            baseline=bare,
            reference=normalize(
                reference_residuals(
                    image,
                    problem.labels[: image.shape[0]],
                    problem.offsets[:2],
                    centers,
                ),
                **ESSAY_NORMALIZATION,
            ),
            **options,
        )
    )
    table = Table(
        "single latency",
        f"Single-image latency: {problem.workload.describe()}",
        rows,
        ratio_label="x bare",
    )
    total = table.baseline_seconds(rows[-1])
    table.notes = [
        f"bare NumPy kernels: {format_seconds(total)} = product + argmin + "
        f"{fastest_scatter.name} + signed sqrt + L2 (sum of medians); "
        "x bare divides each median by it.",
        settings_note(threads, repeats),
    ]
    return table
