"""The PyTorch back-end; PyTorch itself imported on first use
(:func:`import_torch`), and full float32 precision for products.

- :mod:`vlad.backends.torch._kernels`: distances, residual sums and
  normalisation on tensors;
- :mod:`vlad.backends.torch._aggregator`: the ``torch`` aggregator;
- :mod:`vlad.backends.torch._encoder`: :class:`vlad.TorchEncoder`;
- :mod:`vlad.backends.torch._layer`: the trainable NetVLAD layer;
- :mod:`vlad.backends.torch._features`: a vision transformer's patch tokens as
  local descriptors.

On NVIDIA GPUs PyTorch may compute float32 matrix products in TF32 (10-bit
mantissas) when a program allows it (``torch.backends.cuda.matmul.
fp32_precision = "tf32"``, ``allow_tf32 = True`` or
``torch.set_float32_matmul_precision("high")``): enough to send descriptors
to another centre than the nearest. :func:`full_float32_matmul` turns that
off while vlad's distance products run and restores the caller's setting
afterwards, however calls from several threads overlap.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from vlad._extras import install_command
from vlad._lazy import attach_declared
from vlad.core._parallel import SharedThreadLimit


def import_torch():
    """Import PyTorch or raise an ``ImportError`` that says how to install it."""
    try:
        import torch
    except ImportError:
        raise ImportError(
            f"this requires PyTorch; install it with: {install_command('torch')} "
            "(see docs/accelerators.md for a CPU-only build)"
        ) from None
    return torch


def _full_precision():
    """Set IEEE float32 products (no TF32, no bfloat16); return the restorer."""
    torch = import_torch()
    backends = [torch.backends.cuda.matmul, torch.backends.mkldnn.matmul]
    if all(hasattr(backend, "fp32_precision") for backend in backends):
        previous = [backend.fp32_precision for backend in backends]
        for backend in backends:
            backend.fp32_precision = "ieee"

        def restore() -> None:
            for backend, value in zip(backends, previous, strict=True):
                backend.fp32_precision = value

        return restore
    # PyTorch before the fp32_precision settings.
    previous_precision = torch.get_float32_matmul_precision()
    previous_tf32 = torch.backends.cuda.matmul.allow_tf32
    torch.set_float32_matmul_precision("highest")
    torch.backends.cuda.matmul.allow_tf32 = False

    def restore_legacy() -> None:
        torch.set_float32_matmul_precision(previous_precision)
        torch.backends.cuda.matmul.allow_tf32 = previous_tf32

    return restore_legacy


_FULL_PRECISION = SharedThreadLimit(_full_precision)


def full_float32_matmul() -> contextlib.AbstractContextManager[None]:
    """Run the block with float32 matrix products at full IEEE precision.

    Examples
    --------
    >>> import torch  # doctest: +SKIP
    >>> from vlad.backends.torch import full_float32_matmul
    >>> torch.backends.cuda.matmul.fp32_precision = "tf32"  # doctest: +SKIP
    >>> with full_float32_matmul():  # doctest: +SKIP
    ...     torch.backends.cuda.matmul.fp32_precision
    'ieee'
    >>> torch.backends.cuda.matmul.fp32_precision  # doctest: +SKIP
    'tf32'
    """
    return _FULL_PRECISION.held()


if TYPE_CHECKING:
    from vlad.backends.torch._encoder import TorchEncoder
    from vlad.backends.torch._features import PatchTokens
    from vlad.backends.torch._layer import NetVLAD

__getattr__, __dir__, __all__ = attach_declared(
    __name__, __file__, ("full_float32_matmul", "import_torch")
)
