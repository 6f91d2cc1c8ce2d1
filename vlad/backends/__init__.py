"""Compiled and accelerator back-ends, each behind an optional dependency
and each in a package of its own.

- :mod:`vlad.backends.numba`: numba's compiled loops (loaded on first use),
  the ``numba`` aggregator and :func:`vlad.encode`'s pass with assignment
  fused in;
- :mod:`vlad.backends.jax`: JAX's jitted kernels, the host side of a batch,
  the ``jax`` aggregator and :class:`vlad.JaxEncoder`;
- :mod:`vlad.backends.torch`: PyTorch's kernels, the ``torch`` aggregator,
  :class:`vlad.TorchEncoder`, the trainable NetVLAD layer and a ViT's patch
  tokens as descriptors;
- :mod:`vlad.backends.keras`: the NetVLAD layer for Keras 3, on any of its
  back-ends;
- shared by several (private): how the device back-ends cut a batch into
  chunks of rows and summation blocks, what the device encoders share, and
  the NetVLAD layers' initialisation from a codebook.

:mod:`vlad.core` imports nothing from here: its aggregator registry names
the back-ends' aggregators as ``"module:function"`` strings
(``vlad.core.aggregators.BACKEND_AGGREGATORS``), imported on first use.
"""

from typing import TYPE_CHECKING

from vlad._lazy import attach_declared

if TYPE_CHECKING:
    from vlad.backends.jax._encoder import JaxEncoder
    from vlad.backends.torch._encoder import TorchEncoder

__getattr__, __dir__, __all__ = attach_declared(__name__, __file__)
