"""Files written whole or not at all (see :mod:`vlad.core._writing`, where
they live, below the codebook and descriptor sets that use them)."""

from __future__ import annotations

from vlad.core._writing import (
    atomic_write,
    atomic_writes,
    check_writable_folder,
    remove_stale_temporaries,
    remove_stale_temporaries_in,
    writer_gone,
)

__all__ = [
    "atomic_write",
    "atomic_writes",
    "check_writable_folder",
    "remove_stale_temporaries",
    "remove_stale_temporaries_in",
    "writer_gone",
]
