"""Patch tokens of a PyTorch vision transformer as local descriptors.

:class:`PatchTokens` wraps a user's model (a DINOv2 from ``torch.hub``, a
timm ViT, anything that returns patch tokens) into the callable that
:func:`vlad.extract_images`, :func:`vlad.encode_images`,
:class:`vlad.estimators.FeatureExtractor` and
``vlad extract --extractor`` take: an RGB ``uint8`` image in, an ``(L, F)``
float32 array out, one row per patch. This is the AnyLoc recipe's
descriptor (Keetha et al. 2023), to be encoded with a spherical codebook of
K=32, intra and L2 normalisation.
"""

from __future__ import annotations

import threading

import numpy as np

from vlad.backends.torch import import_torch
from vlad.errors import VladError, VladTypeError

__all__ = ["IMAGENET_MEAN", "IMAGENET_STD", "PatchTokens"]

#: ImageNet channel means and standard deviations (RGB, on [0, 1] values).
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


class PatchTokens:
    """A callable from an RGB image to the patch tokens of a PyTorch ViT.

    Each call resizes the image (area interpolation) so that its longest side
    is at most ``max_side`` and both sides are multiples of ``patch_size``,
    normalises it with the ImageNet mean and standard deviation, runs the
    model on a batch of one without gradients, and returns one row per
    patch, the class token (and any register tokens) dropped. Calls from
    several threads take turns on the model.

    Parameters
    ----------
    model : torch.nn.Module
        Either has ``forward_features(x)`` returning a dict with
        ``"x_norm_patchtokens"`` (DINOv2) or a tensor of tokens, or returns
        tokens from ``model(x)``: a tensor of shape (1, L, F) for an input
        ``x`` of shape (1, 3, H, W). When ``L`` is more than the
        ``(H / patch_size) * (W / patch_size)`` patches, the first ``L`` minus
        that many tokens (class and register tokens) are dropped. The model is
        put in evaluation mode.
    patch_size : int, default=14
        The model's patch side in pixels (14 for DINOv2, 16 for most ViTs).
    max_side : int, default=518
        Longest side, in pixels, the image is resized to at most (518 = 37
        patches of 14); 0 keeps its size, rounded down to whole patches.
    l2 : bool, default=True
        L2-normalise each token (for cosine assignment, as AnyLoc does).
    device : str or torch.device, optional
        Where the image tensor goes; by default, where the model's first
        parameter is (the CPU for a model without parameters).

    Attributes
    ----------
    extractor_name : str
        The name descriptor records give it: the model's class and these
        settings.

    Examples
    --------
    With DINOv2 weights on disk (not run here)::

        model = torch.hub.load("/path/to/dinov2", "dinov2_vitb14", source="local")
        tokens = PatchTokens(model.cuda(), patch_size=14)
        sets, report = vlad.extract_images("photos", extractor=tokens)
    """

    def __init__(
        self,
        model,
        *,
        patch_size: int = 14,
        max_side: int = 518,
        l2: bool = True,
        device=None,
    ):
        torch = import_torch()
        if not isinstance(model, torch.nn.Module):
            raise VladTypeError(
                f"model must be a torch.nn.Module; got {type(model).__name__}"
            )
        for name, value, low in (
            ("patch_size", patch_size, 1),
            ("max_side", max_side, 0),
        ):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise VladTypeError(
                    f"{name} must be an integer >= {low}; got {value!r}"
                )
            if value < low:
                raise VladError(f"{name} must be an integer >= {low}; got {value!r}")
        if max_side and max_side < patch_size:
            raise VladError(
                f"max_side must be 0 or at least patch_size={patch_size}; "
                f"got {max_side}"
            )
        if device is None:
            parameter = next(model.parameters(), None)
            device = "cpu" if parameter is None else parameter.device
        self.model = model.eval()
        self.patch_size = int(patch_size)
        self.max_side = int(max_side)
        self.l2 = bool(l2)
        self.device = torch.device(device)
        self._lock = threading.Lock()
        model_class = type(model)
        # The name descriptor files record, compared with a codebook's: it
        # keeps the module path it was first written with, so that files
        # written before the module moved stay comparable.
        self.extractor_name = (
            f"vlad.backends.torch_features:PatchTokens({model_class.__module__}."
            f"{model_class.__qualname__}, patch_size={self.patch_size}, "
            f"max_side={self.max_side}, l2={self.l2})"
        )

    def input_size(self, height: int, width: int) -> tuple[int, int]:
        """The (height, width) an image of that size is resized to: longest
        side at most ``max_side``, both rounded down to whole patches (one at
        least)."""
        scale = 1.0
        if self.max_side and max(height, width) > self.max_side:
            scale = self.max_side / max(height, width)
        patch = self.patch_size
        return (
            max(patch, int(height * scale) // patch * patch),
            max(patch, int(width * scale) // patch * patch),
        )

    def __call__(self, image: np.ndarray) -> np.ndarray:
        """Patch tokens of one image.

        Parameters
        ----------
        image : ndarray of uint8 of shape (height, width, 3)
            RGB, as :func:`vlad.read_image` returns with ``colour=True``.

        Returns
        -------
        ndarray of float32 of shape (n_patches, n_features)
            Rows in raster order of the patches.
        """
        import cv2

        torch = import_torch()
        pixels = np.asarray(image)
        if pixels.dtype != np.uint8 or pixels.ndim != 3 or pixels.shape[2] != 3:
            raise VladError(
                "image must be an RGB uint8 array of shape (height, width, 3); "
                f"got {pixels.dtype} of shape {pixels.shape}"
            )
        height, width = self.input_size(*pixels.shape[:2])
        if (height, width) != pixels.shape[:2]:
            pixels = cv2.resize(pixels, (width, height), interpolation=cv2.INTER_AREA)
        values = (pixels.astype(np.float32) / 255.0 - IMAGENET_MEAN) / IMAGENET_STD
        batch = torch.from_numpy(
            np.ascontiguousarray(values.transpose(2, 0, 1)[None], dtype=np.float32)
        )
        n_patches = (height // self.patch_size) * (width // self.patch_size)
        with self._lock, torch.inference_mode():
            tokens = self._tokens(batch.to(self.device))
            if tokens.ndim != 3 or tokens.shape[0] != 1 or tokens.shape[1] < n_patches:
                raise VladError(
                    f"the model returned tokens of shape {tuple(tokens.shape)} for "
                    f"an input of shape {tuple(batch.shape)}; expected (1, L, F) "
                    f"with L >= {n_patches} patches"
                )
            tokens = tokens[0, tokens.shape[1] - n_patches :].float()
            if self.l2:
                tokens = torch.nn.functional.normalize(tokens, dim=1)
            return tokens.cpu().numpy()

    def _tokens(self, batch):
        """The model's tokens of ``batch``, by ``forward_features`` if it has one."""
        forward = getattr(self.model, "forward_features", None)
        output = self.model(batch) if forward is None else forward(batch)
        if isinstance(output, dict):
            if "x_norm_patchtokens" not in output:
                raise VladError(
                    "the model's forward_features returned a dict without "
                    f"'x_norm_patchtokens' (keys: {sorted(output)})"
                )
            output = output["x_norm_patchtokens"]
        return output
