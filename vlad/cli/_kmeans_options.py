"""The k-means options of ``vlad fit``, passed on as one ``kmeans_options`` dict."""

from __future__ import annotations

from collections.abc import Callable

from vlad.cli._options import option_group, spec_option
from vlad.core._parameters import ALGORITHM, BACKEND, MAX_ITER, SPHERICAL

__all__ = ["kmeans_options"]


def kmeans_options(command: Callable) -> Callable:
    """``--backend``, ``--algorithm``, ``--max-iter`` and ``--spherical``,
    passed on as ``kmeans_options``: keyword arguments of
    :func:`vlad.fit_codebook`."""
    options = [
        spec_option(BACKEND),
        spec_option(ALGORITHM),
        spec_option(MAX_ITER),
        spec_option(SPHERICAL, is_flag=True, show_default=False),
    ]

    return option_group(
        "kmeans_options",
        ("backend", "algorithm", "max_iter", "spherical"),
        options,
    )(command)
