"""The weights of learned features for the tests: the authors' ALIKED-N16
checkpoint, kept beside the checkout (``../shared/weights/``) because tests
cannot download it, and weights of a network made here at random, which need
nothing but kornia.

A plain module rather than a conftest.py, as photos.py; its users import
PyTorch and kornia first (pytest.importorskip).
"""

from __future__ import annotations

from pathlib import Path

import pytest

#: The authors' checkpoint of ALIKED-N16 (BSD-3-Clause), and its SHA-256.
WEIGHTS = Path(__file__).resolve().parents[2] / "shared" / "weights" / "aliked-n16.pth"
WEIGHTS_SHA256 = "5be8704840ed662d9d8c561bf7279c222092674e7eb05fd0feab94899e9d82f2"


def authors_weights() -> Path:
    """The authors' ALIKED-N16 weights; the test is skipped, saying why, where
    they are absent."""
    if not WEIGHTS.is_file():
        pytest.skip(
            f"the authors' ALIKED-N16 weights are not at {WEIGHTS} (tests cannot "
            "download them)"
        )
    return WEIGHTS


def random_weights(path: Path, model: str = "aliked-n16", seed: int = 0) -> Path:
    """Save the weights of a kornia ALIKED made at random, as the authors'
    checkpoints are (without the buffer the network computes); return
    ``path``."""
    import kornia
    import torch

    torch.manual_seed(seed)
    network = kornia.feature.ALIKED(model_name=model)
    state = network.state_dict()
    del state["dkd.hw_grid"]
    torch.save(state, path)
    return path
