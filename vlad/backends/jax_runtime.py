"""JAX, imported on first use, and the padding that keeps its compilations few."""

from __future__ import annotations

__all__ = ["MIN_ROW_BUCKET", "bucket_size", "import_jax"]

#: Smallest padded number of rows; row and image counts are padded to powers of
#: two so that a new batch size reuses a compiled kernel.
MIN_ROW_BUCKET = 1024


def bucket_size(n: int, minimum: int = 1) -> int:
    """Smallest power of two >= ``max(n, minimum)``."""
    return 1 << (max(int(n), int(minimum)) - 1).bit_length()


def import_jax():
    """Import JAX or raise an ``ImportError`` that says how to install it."""
    try:
        import jax
    except ImportError:
        raise ImportError(
            "the 'jax' aggregator requires JAX; "
            "install it with: pip install 'vlad[jax]'"
        ) from None
    return jax
