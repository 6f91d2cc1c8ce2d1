"""vlad.backends.keras."""

from typing import TYPE_CHECKING

from vlad._lazy import attach

if TYPE_CHECKING:
    from vlad.backends.keras._layer import NetVLAD, padded

__getattr__, __dir__ = attach(
    __name__,
    {
        "NetVLAD": "vlad.backends.keras._layer",
        "padded": "vlad.backends.keras._layer",
    },
)
__all__ = [
    "NetVLAD",
    "padded",
]
