"""The scikit-learn transformer from images to SIFT descriptor sets."""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Sequence

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils._param_validation import StrOptions

from vlad.core._descriptors import DescriptorSets
from vlad.core._parallel import resolve_n_jobs
from vlad.core._parameters import N_JOBS
from vlad.core._pool import map_in_order
from vlad.errors import VladTypeError
from vlad.estimators._parameters import check_specified, constraints
from vlad.images._describe import describe_image
from vlad.images._files import MAX_PIXELS
from vlad.images._sift import DESCRIPTOR_PARAMETERS, MIN_KEYPOINTS, SiftOptions

__all__ = ["SIFTExtractor"]

logger = logging.getLogger(__name__)


#: The parameters checked by their one specification, as SiftOptions checks
#: them (all but reduce_jpeg, which the extractor does not take).
_SPECIFIED = (
    *(option for option in DESCRIPTOR_PARAMETERS if option.name != "reduce_jpeg"),
    N_JOBS,
)


class SIFTExtractor(TransformerMixin, BaseEstimator):
    """SIFT descriptors (RootSIFT by default), or AKAZE or ORB, of images given as
    paths or arrays.

    A stateless transformer: ``fit`` learns nothing, and ``transform`` turns a
    list of images into one :class:`vlad.DescriptorSets`, ready for a VLAD
    encoder in a :class:`~sklearn.pipeline.Pipeline`.

    Parameters
    ----------
    root_sift : bool or None, default=None
        Map each descriptor to RootSIFT (see :func:`vlad.images.root_sift`);
        None means True for SIFT, False for the binary features.
    max_side : int, default=1024
        Shrink images whose longest side exceeds this many pixels first; 0
        keeps full size.
    max_keypoints : int, default=2000
        Keep at most this many keypoints per image (the strongest); 0 keeps all.
    dense : bool, default=False
        Describe a regular grid of keypoints at a few scales instead of
        detected ones (for images without texture).
    max_pixels : int, default=2**27
        Refuse images of more pixels (see :class:`vlad.SiftOptions`).
    min_keypoints : int, default=20
        Detect again at lower thresholds in images with fewer keypoints (see
        :class:`vlad.SiftOptions`); 0 detects once.
    features : {"sift", "akaze", "orb"}, default="sift"
        The detector and descriptor (see :class:`vlad.SiftOptions`).
    affine_tilts : int, default=0
        Also detect keypoints in views simulating the camera tilted by up to
        sqrt(2) ** ``affine_tilts`` (ASIFT, see :class:`vlad.SiftOptions`); 0
        simulates none.
    on_error : {"raise", "skip"}, default="raise"
        What an image that cannot be read or described does: ``"raise"``
        stops :meth:`transform` with its error; ``"skip"`` logs a warning and
        gives it an empty descriptor set (a zero VLAD vector), so that rows
        stay aligned with ``X``.
    n_jobs : int or None, default=None
        Images described in parallel (threads); None or -1 uses every core, as
        :func:`vlad.assign` and the rest of vlad do. The result does not depend
        on it.

    See Also
    --------
    vlad.images.extract_sift : The same for one image.
    vlad.extract_images : The same for folders, skipping unreadable files.
    vlad.FeatureExtractor : The same with any callable (ViT patch tokens).

    Examples
    --------
    >>> import vlad
    >>> extractor = vlad.SIFTExtractor(max_keypoints=100)
    >>> sets = extractor.fit_transform(["data/chelsea.jpg", "data/coffee.jpg"])
    >>> len(sets), sets.n_features, sets.lengths.tolist()
    (2, 128, [100, 100])
    """

    _parameter_constraints: dict = {
        **{parameter.name: constraints(parameter) for parameter in _SPECIFIED},
        "on_error": [StrOptions({"raise", "skip"})],
    }

    def __init__(
        self,
        root_sift: bool | None = None,
        *,
        max_side: int = 1024,
        max_keypoints: int = 2000,
        dense: bool = False,
        max_pixels: int = MAX_PIXELS,
        min_keypoints: int = MIN_KEYPOINTS,
        features: str = "sift",
        affine_tilts: int = 0,
        on_error: str = "raise",
        n_jobs: int | None = None,
    ):
        self.root_sift = root_sift
        self.max_side = max_side
        self.max_keypoints = max_keypoints
        self.dense = dense
        self.max_pixels = max_pixels
        self.min_keypoints = min_keypoints
        self.features = features
        self.affine_tilts = affine_tilts
        self.on_error = on_error
        self.n_jobs = n_jobs

    def _validate_params(self) -> None:
        check_specified(self, _SPECIFIED)
        super()._validate_params()

    def fit(self, X=None, y=None) -> SIFTExtractor:
        """Check the parameters; there is nothing to learn.

        Parameters
        ----------
        X : ignored
        y : ignored

        Returns
        -------
        self : SIFTExtractor
        """
        self._validate_params()
        resolve_n_jobs(self.n_jobs)
        return self

    def transform(self, X: Sequence) -> DescriptorSets:
        """Descriptors of each image.

        Parameters
        ----------
        X : sequence of path-like or array-like
            Image files, or image arrays of shape (height, width) or
            (height, width, channels) (see :func:`vlad.images._pixels.as_grey_image`).

        Returns
        -------
        DescriptorSets
            One set per image, in order, named by the path (or the index, for
            an array); ``metadata`` records the parameters.

        Raises
        ------
        vlad.images.ImageReadError
            With ``on_error="raise"``, a file that cannot be read (a
            ``ValueError``).
        ValueError, TypeError
            With ``on_error="raise"``, an item that is not an image.
        """
        self._validate_params()
        resolve_n_jobs(self.n_jobs)
        options = SiftOptions(
            self.root_sift,
            self.dense,
            self.max_side,
            self.max_keypoints,
            self.max_pixels,
            self.min_keypoints,
            self.features,
            affine_tilts=self.affine_tilts,
        )
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
        describe = functools.partial(describe_image, options=options)
        if self.on_error == "skip":
            describe = functools.partial(_describe_or_skip, describe)
        blocks = list(map_in_order(describe, images, self.n_jobs))
        for name, block in zip(names, blocks, strict=True):
            if isinstance(block, Exception):
                logger.warning("skipped %s: %s", name, block)
        blocks = [
            np.zeros((0, options.n_features), np.float32)
            if isinstance(block, Exception)
            else block
            for block in blocks
        ]
        return DescriptorSets.from_list(
            blocks, names, n_features=options.n_features, metadata=options.record()
        )

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # Stateless, over a list of image paths or arrays of any size: no 2-D
        # array of samples, so scikit-learn's estimator checks do not apply.
        tags.requires_fit = False
        tags.no_validation = True
        tags.input_tags.two_d_array = False
        tags.input_tags.string = True
        tags.transformer_tags.preserves_dtype = []
        return tags


def _describe_or_skip(describe, image):
    """``describe(image)``, or the error that kept it from being described."""
    try:
        return describe(image)
    except (TypeError, ValueError) as error:
        return error
