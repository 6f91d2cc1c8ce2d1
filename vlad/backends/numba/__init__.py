"""Access to the compiled kernels, which need the optional numba."""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["numba_kernels"]


def numba_kernels() -> ModuleType:
    """The module of compiled kernels (``nearest``, ``add_rows``, ``flush``).

    numba is imported, and the kernels loaded from numba's on-disk cache (or
    compiled), on first use only.

    Raises
    ------
    ImportError
        numba is not installed; the message says how to install it.
    """
    try:
        import numba  # noqa: F401
    except ImportError:
        raise ImportError(
            "the 'numba' aggregator requires numba; install it with: "
            "pip install 'vlad-toolkit[numba]'"
        ) from None
    return importlib.import_module("vlad.backends.numba.kernels")
