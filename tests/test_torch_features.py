"""Patch tokens of a PyTorch ViT as local descriptors:
vlad.backends.torch._features.PatchTokens, on a small random ViT written here."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
from photos import DATA

import vlad

torch = pytest.importorskip("torch")
from vlad.backends.torch._features import (  # noqa: E402
    IMAGENET_MEAN,
    IMAGENET_STD,
    PatchTokens,
)

PATCH = 8


class TinyViT(torch.nn.Module):
    """A two-block ViT: patch embedding, class + register tokens, positions
    interpolated to any grid."""

    def __init__(self, width=24, registers=0, dinov2=False):
        super().__init__()
        torch.manual_seed(0)
        self.embed = torch.nn.Conv2d(3, width, PATCH, stride=PATCH)
        self.prefix = torch.nn.Parameter(torch.randn(1, 1 + registers, width))
        self.positions = torch.nn.Parameter(torch.randn(1, width, 4, 4))
        layer = torch.nn.TransformerEncoderLayer(width, 4, 48, batch_first=True)
        self.blocks = torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.norm = torch.nn.LayerNorm(width)
        self.n_prefix = 1 + registers
        self.dinov2 = dinov2

    def tokens(self, x):
        patches = self.embed(x)
        positions = torch.nn.functional.interpolate(
            self.positions, size=patches.shape[2:], mode="bilinear"
        )
        patches = (patches + positions).flatten(2).transpose(1, 2)
        prefix = self.prefix.expand(x.shape[0], -1, -1)
        return self.norm(self.blocks(torch.cat([prefix, patches], dim=1)))

    def forward(self, x):
        return self.tokens(x)

    def forward_features(self, x):
        tokens = self.tokens(x)
        if not self.dinov2:
            return tokens
        return {
            "x_norm_clstoken": tokens[:, 0],
            "x_norm_patchtokens": tokens[:, self.n_prefix :],
        }


def by_hand(model, image, size, l2=True):
    """The reference: resize, normalise, run, drop the prefix tokens."""
    height, width = size
    resized = cv2.resize(image, (width, height), interpolation=cv2.INTER_AREA)
    values = (resized / 255.0 - np.array(IMAGENET_MEAN)) / np.array(IMAGENET_STD)
    x = torch.tensor(values.transpose(2, 0, 1)[None], dtype=torch.float32)
    with torch.no_grad():
        tokens = model.tokens(x)[0, model.n_prefix :].numpy()
    if l2:
        tokens = tokens / np.linalg.norm(tokens, axis=1, keepdims=True)
    return tokens


@pytest.fixture(scope="module")
def chelsea():
    return cv2.cvtColor(cv2.imread(str(DATA / "chelsea.jpg")), cv2.COLOR_BGR2RGB)


@pytest.mark.parametrize("registers", [0, 4])
@pytest.mark.parametrize("dinov2", [False, True])
def test_patch_tokens_are_the_models_without_prefix_tokens(chelsea, registers, dinov2):
    model = TinyViT(registers=registers, dinov2=dinov2)
    tokens = PatchTokens(model, patch_size=PATCH, max_side=100)(chelsea)
    # 300 x 451 shrunk to at most 100: 66 x 100, rounded down to 64 x 96.
    assert PatchTokens(model, patch_size=PATCH, max_side=100).input_size(300, 451) == (
        64,
        96,
    )
    expected = by_hand(model, chelsea, (64, 96))
    assert tokens.shape == (8 * 12, 24) and tokens.dtype == np.float32
    np.testing.assert_allclose(tokens, expected, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(tokens, axis=1), 1.0, rtol=1e-5)


def test_without_l2_or_resizing(chelsea):
    model = TinyViT()
    crop = chelsea[:40, :64]
    tokens = PatchTokens(model, patch_size=PATCH, max_side=0, l2=False)(crop)
    np.testing.assert_allclose(
        tokens, by_hand(model, crop, (40, 64), l2=False), rtol=1e-4, atol=1e-5
    )


def test_a_model_returning_too_few_tokens_is_refused(chelsea):
    class Pooled(torch.nn.Module):
        def forward(self, x):
            return torch.zeros(1, 1, 5)

    with pytest.raises(ValueError, match=r"expected \(1, L, F\) with L >= 96"):
        PatchTokens(Pooled(), patch_size=PATCH, max_side=100)(chelsea)


@pytest.mark.parametrize(
    ("settings", "error", "match"),
    [
        ({"model": "vit"}, TypeError, "model must be a torch.nn.Module"),
        ({"patch_size": 0}, ValueError, "patch_size must be an integer >= 1"),
        ({"max_side": 4}, ValueError, "max_side must be 0 or at least patch_size"),
    ],
)
def test_bad_settings_are_refused(settings, error, match):
    arguments = {"model": TinyViT(), "patch_size": PATCH} | settings
    with pytest.raises(error, match=match):
        PatchTokens(arguments.pop("model"), **arguments)


def test_patch_tokens_through_the_batch_functions(tmp_path):
    model = TinyViT(registers=1, dinov2=True)
    tokens = PatchTokens(model, patch_size=PATCH, max_side=64)
    sets, report = vlad.extract_images(DATA, extractor=tokens, n_jobs=2)
    alone, _ = vlad.extract_images(DATA, extractor=tokens, n_jobs=1)
    np.testing.assert_array_equal(sets.descriptors, alone.descriptors)
    first = cv2.cvtColor(cv2.imread(str(DATA / report.names[0])), cv2.COLOR_BGR2RGB)
    np.testing.assert_allclose(
        sets[0], by_hand(model, first, tokens.input_size(*first.shape[:2])), atol=1e-5
    )
    assert sets.metadata["extractor"].startswith(
        "python:vlad.backends.torch_features:PatchTokens("
    )
    codebook, _ = vlad.fit_codebook_to_images(DATA, 4, extractor=tokens, n_jobs=2)
    result = vlad.encode_images(DATA, codebook, extractor=tokens, n_jobs=2)
    np.testing.assert_allclose(
        result.vectors, vlad.encode(sets, codebook), rtol=1e-5, atol=1e-6
    )
    other = PatchTokens(TinyViT(), patch_size=PATCH, max_side=32)
    with pytest.raises(ValueError, match="the codebook was fitted on"):
        vlad.encode_images(DATA, codebook, extractor=other)
