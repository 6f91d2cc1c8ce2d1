"""The numba back-end: compiled loops, loaded on first use (numba is
optional).

- :mod:`vlad.backends.numba._kernels`: the compiled loops themselves;
- :mod:`vlad.backends.numba._aggregator`: the ``numba`` aggregator;
- :mod:`vlad.backends.numba._fused`: :func:`vlad.encode`'s pass with
  assignment and aggregation fused;
- :mod:`vlad.backends.numba._asmk_kernels`: ASMK* search's pass over the
  posting lists.

This module loads the kernels (:func:`numba_kernels`, :func:`asmk_kernels`)
and imports numba only then.
"""

from __future__ import annotations

import importlib
from types import ModuleType

import numpy as np

from vlad._extras import install_command
from vlad._lazy import attach_declared


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
            + install_command("numba")
        ) from None
    return importlib.import_module("vlad.backends.numba._kernels")


def read_only(array: np.ndarray) -> np.ndarray:
    """A read-only view of ``array`` (no copy).

    numba compiles a kernel once per type of its arguments, and a read-only
    array (a memory-mapped file's) is another type than a writable one: the
    kernels' inputs are passed as read-only views, whatever they are, so that
    each is compiled (and cached on disk) once per dtype, not twice.

    Parameters
    ----------
    array : ndarray

    Returns
    -------
    ndarray
        A view of ``array`` that cannot be written to.
    """
    view = array.view()
    view.flags.writeable = False
    return view


def asmk_kernels() -> ModuleType | None:
    """The module of ASMK*'s compiled search loop (``add_binary_scores``), or
    None when numba is not installed (the search then runs on NumPy alone).
    """
    try:
        import numba  # noqa: F401
    except ImportError:
        return None
    return importlib.import_module("vlad.backends.numba._asmk_kernels")


__getattr__, __dir__, __all__ = attach_declared(
    __name__, __file__, ("asmk_kernels", "numba_kernels", "read_only")
)
