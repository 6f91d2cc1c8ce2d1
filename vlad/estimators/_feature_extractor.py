"""The scikit-learn transformer from images to descriptor sets made by any
callable (ViT patch tokens, learned local features)."""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Sequence
from numbers import Integral

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils._param_validation import Interval, StrOptions

from vlad.core._descriptors import DescriptorSets
from vlad.core._parallel import resolve_n_jobs
from vlad.core._parameters import N_JOBS
from vlad.core._pool import map_in_order
from vlad.errors import VladError, VladTypeError
from vlad.estimators._parameters import check_specified, constraints
from vlad.images._callables import CallableExtractor, load_extractor
from vlad.images._files import MAX_PIXELS, ImageReadError

__all__ = ["FeatureExtractor"]

logger = logging.getLogger(__name__)


class FeatureExtractor(TransformerMixin, BaseEstimator):
    """Descriptors of images (paths or arrays) made by a callable.

    A stateless transformer, as :class:`vlad.SIFTExtractor`, over any
    extractor: ``extractor(image)`` takes an RGB ``uint8`` array of shape
    (height, width, 3) and returns a floating-point array of shape (L, F)
    (see :mod:`vlad.images._callables`), such as
    :class:`vlad.backends.torch.PatchTokens`.

    Parameters
    ----------
    extractor : callable or str
        The callable, or its ``"package.module:function"`` name.
    max_pixels : int, default=2**27
        Refuse image files of more pixels (see :class:`vlad.SiftOptions`).
    on_error : {"raise", "skip"}, default="raise"
        What an image that cannot be read, or on which the extractor raises,
        does: ``"raise"`` stops :meth:`transform`; ``"skip"`` logs a warning
        and gives it an empty descriptor set (a zero VLAD vector), so that
        rows stay aligned with ``X``. An extractor that returns anything but
        a finite floating-point (L, F) array always stops it.
    n_jobs : int or None, default=None
        Images read in parallel (threads); None or -1 uses every core. The
        result does not depend on it.

    See Also
    --------
    vlad.extract_images : The same over folders (``extractor=``).
    vlad.SIFTExtractor : The same with OpenCV's features.

    Examples
    --------
    >>> import numpy as np
    >>> import vlad
    >>> def colours(image):
    ...     return image.reshape(-1, 3)[::1000].astype(np.float32) / 255
    >>> sets = vlad.FeatureExtractor(colours).fit_transform(["data/chelsea.jpg"])
    >>> sets.n_features, sets.lengths.tolist()
    (3, [136])
    >>> sets.metadata["extractor"].endswith(":colours")
    True
    """

    _parameter_constraints: dict = {
        "extractor": [callable, str],
        "max_pixels": [Interval(Integral, 0, None, closed="left")],
        "on_error": [StrOptions({"raise", "skip"})],
        "n_jobs": constraints(N_JOBS),
    }

    def __init__(
        self,
        extractor,
        *,
        max_pixels: int = MAX_PIXELS,
        on_error: str = "raise",
        n_jobs: int | None = None,
    ):
        self.extractor = extractor
        self.max_pixels = max_pixels
        self.on_error = on_error
        self.n_jobs = n_jobs

    def _validate_params(self) -> None:
        check_specified(self, (N_JOBS,))
        super()._validate_params()

    def fit(self, X=None, y=None) -> FeatureExtractor:
        """Check the parameters; there is nothing to learn.

        Parameters
        ----------
        X : ignored
        y : ignored

        Returns
        -------
        self : FeatureExtractor
        """
        self._resolve()
        return self

    def transform(self, X: Sequence) -> DescriptorSets:
        """Descriptors of each image.

        Parameters
        ----------
        X : sequence of path-like or array-like
            Image files, or image arrays of shape (height, width) or
            (height, width, channels) (see :func:`vlad.images._pixels.as_rgb_image`).

        Returns
        -------
        DescriptorSets
            One set per image, in order, named by the path (or the index, for
            an array); ``metadata`` records the extractor's name.

        Raises
        ------
        vlad.ImageReadError
            With ``on_error="raise"``, a file that cannot be read or an image
            the extractor raised on (a ``ValueError``).
        TypeError, ValueError
            The extractor returned something other than a finite
            floating-point (L, F) array, or the widths of two images differ.
        """
        extractor = self._resolve()
        if isinstance(X, (str, os.PathLike)):
            raise VladTypeError(
                "X must be a sequence of images (paths or arrays); got the single "
                f"path {X!r}: wrap it in a list"
            )
        images = list(X)
        names = [
            os.fspath(image) if isinstance(image, (str, os.PathLike)) else str(index)
            for index, image in enumerate(images)
        ]
        describe = functools.partial(_describe, extractor, self.on_error == "skip")
        blocks = list(
            map_in_order(describe, list(zip(images, names, strict=True)), self.n_jobs)
        )
        widths = {block.shape[1] for block in blocks if not isinstance(block, str)}
        if len(widths) > 1:
            raise VladError(
                f"the extractor {extractor.name} returned descriptors of "
                f"{len(widths)} widths ({sorted(widths)}); every image's must have "
                "the same"
            )
        if not widths:
            raise VladError(f"none of the {len(images)} images could be described")
        (width,) = widths
        for name, block in zip(names, blocks, strict=True):
            if isinstance(block, str):
                logger.warning("skipped %s: %s", name, block)
        blocks = [
            np.zeros((0, width), np.float32) if isinstance(block, str) else block
            for block in blocks
        ]
        return DescriptorSets.from_list(
            blocks, names, n_features=width, metadata=extractor.record()
        )

    def _resolve(self) -> CallableExtractor:
        """The checked parameters' extractor."""
        self._validate_params()
        resolve_n_jobs(self.n_jobs)
        function = self.extractor
        if isinstance(function, str):
            function = load_extractor(function)
        return CallableExtractor(function, self.max_pixels)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # As SIFTExtractor's: a stateless transformer over a list of images.
        tags.requires_fit = False
        tags.no_validation = True
        tags.input_tags.two_d_array = False
        tags.input_tags.string = True
        tags.transformer_tags.preserves_dtype = []
        return tags


def _describe(extractor: CallableExtractor, skip: bool, item) -> np.ndarray | str:
    """The descriptors of an ``(image, name)`` pair; with ``skip``, why it
    could not be described instead of the error."""
    image, name = item
    try:
        return extractor.describe(image, name)
    except ImageReadError as error:
        if not skip:
            raise
        return error.reason
