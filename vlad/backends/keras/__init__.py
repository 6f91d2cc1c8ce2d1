"""The Keras 3 back-end: a trainable NetVLAD layer (:class:`NetVLAD`) on any
of Keras's back-ends (JAX, TensorFlow or PyTorch); Keras itself imported
when the layer is, with an error that says how to install it."""

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
