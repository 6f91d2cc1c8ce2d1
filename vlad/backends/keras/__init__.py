"""The Keras 3 back-end: a trainable NetVLAD layer (:class:`NetVLAD`) on any
of Keras's back-ends (JAX, TensorFlow or PyTorch); Keras itself imported
when the layer is, with an error that says how to install it."""

from typing import TYPE_CHECKING

from vlad._lazy import attach_declared

if TYPE_CHECKING:
    from vlad.backends.keras._layer import NetVLAD, padded

__getattr__, __dir__, __all__ = attach_declared(__name__, __file__)
