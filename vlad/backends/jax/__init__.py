"""The JAX back-end; JAX itself imported on first use, with an error that
says how to install it (:func:`import_jax`).

- :mod:`vlad.backends.jax._kernels`: the jitted kernels;
- :mod:`vlad.backends.jax._batches`: the host side of a batch (chunks of rows
  sent to the device, summation blocks);
- :mod:`vlad.backends.jax._aggregator`: the ``jax`` aggregator;
- :mod:`vlad.backends.jax._encoder`: :class:`vlad.JaxEncoder`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vlad._extras import install_command
from vlad._lazy import attach_declared


def import_jax():
    """Import JAX or raise an ``ImportError`` that says how to install it."""
    try:
        import jax
    except ImportError:
        raise ImportError(
            "the 'jax' aggregator requires JAX; install it with: "
            + install_command("jax")
        ) from None
    return jax


if TYPE_CHECKING:
    from vlad.backends.jax._encoder import JaxEncoder

__getattr__, __dir__, __all__ = attach_declared(__name__, __file__, ("import_jax",))
