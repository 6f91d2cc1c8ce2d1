"""JAX, imported on first use, with an error that says how to install it."""

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
