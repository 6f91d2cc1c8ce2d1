"""The k-means options of ``vlad fit``, passed on as one ``kmeans_options`` dict."""

from __future__ import annotations

from collections.abc import Callable

import click

from vlad.cli.options import option_group
from vlad.core.kmeans import KMEANS_BACKENDS

__all__ = ["kmeans_options"]


def kmeans_options(command: Callable) -> Callable:
    """``--backend``, ``--algorithm``, ``--max-iter`` and ``--spherical``,
    passed on as ``kmeans_options``: keyword arguments of
    :func:`vlad.fit_codebook`."""
    options = [
        click.option(
            "--backend",
            type=click.Choice(["auto", *sorted(KMEANS_BACKENDS)]),
            default="auto",
            show_default=True,
            help="K-means implementation: auto is faiss when it is installed, "
            "--algorithm is auto and over 50,000 descriptors are sampled; "
            "scikit-learn otherwise.",
        ),
        click.option(
            "--algorithm",
            type=click.Choice(["auto", "lloyd", "minibatch"]),
            default="auto",
            show_default=True,
            help="scikit-learn's k-means: Lloyd's, mini-batch, or auto (Lloyd up "
            "to 50,000 sampled descriptors, mini-batch above).",
        ),
        click.option(
            "--max-iter",
            type=click.IntRange(min=1),
            default=None,
            help="K-means iterations at most (default: 25 for faiss, 100 for "
            "scikit-learn).",
        ),
        click.option(
            "--spherical",
            is_flag=True,
            help="Spherical (cosine) k-means: unit-length descriptors and "
            "centres; encoding then scales each descriptor to unit length.",
        ),
    ]

    return option_group(
        "kmeans_options",
        ("backend", "algorithm", "max_iter", "spherical"),
        options,
    )(command)
