"""Learned local features by kornia (PyTorch): the networks, their weights,
and batches of images through them; kornia and PyTorch imported on first use
(:func:`import_kornia`).

- :mod:`vlad.backends.kornia._weights`: a weights file read without running
  any of its code, its SHA-256, and its keys checked against the network's;
- :mod:`vlad.backends.kornia._networks`: a network with its weights on a
  device, made once per process, and a batch of images through it.

What images go in, and how their keypoints are mapped back to the images'
pixels, is :mod:`vlad.images._learned`'s.
"""

from __future__ import annotations

from vlad._extras import install_command

_INSTALL = install_command("learned")


def import_kornia():
    """Import PyTorch and kornia, or raise an ``ImportError`` that says how to
    install them.

    Returns
    -------
    torch, kornia : module
    """
    try:
        import torch
    except ImportError:
        raise ImportError(
            f"learned features require PyTorch and kornia; install them with: "
            f"{_INSTALL} (see docs/accelerators.md for a CPU-only PyTorch)"
        ) from None
    try:
        import kornia
        import kornia.feature  # noqa: F401  (the networks)
    except ImportError:
        raise ImportError(
            f"learned features require kornia; install it with: {_INSTALL}"
        ) from None
    return torch, kornia


__all__ = ["import_kornia"]
