"""The JAX back-end; JAX itself imported on first use, with an error that
says how to install it (:func:`import_jax`).

- :mod:`vlad.backends.jax.kernels`: the jitted kernels;
- :mod:`vlad.backends.jax.batches`: the host side of a batch (chunks of rows
  sent to the device, summation blocks);
- :mod:`vlad.backends.jax.aggregator`: the ``jax`` aggregator;
- :mod:`vlad.backends.jax.encoder`: :class:`vlad.JaxEncoder`.
"""

from __future__ import annotations

__all__ = ["import_jax"]


def import_jax():
    """Import JAX or raise an ``ImportError`` that says how to install it."""
    try:
        import jax
    except ImportError:
        raise ImportError(
            "the 'jax' aggregator requires JAX; "
            "install it with: pip install 'vlad-toolkit[jax]'"
        ) from None
    return jax
