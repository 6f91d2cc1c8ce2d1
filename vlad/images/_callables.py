"""Any local feature extractor given as a Python callable.

The callable takes one image, an RGB ``uint8`` array of shape
``(height, width, 3)``, and returns its local descriptors, a floating-point
array of shape ``(L, F)`` (``L`` may differ from image to image, may be 0;
``F`` may not). ViT patch tokens (AnyLoc), learned keypoint descriptors,
anything. It is called from several threads at once (``n_jobs``).
"""

from __future__ import annotations

import dataclasses
import importlib
import os
from collections.abc import Callable

import numpy as np

from vlad.errors import VladError, VladTypeError
from vlad.images._files import MAX_PIXELS, ImageReadError, read_image
from vlad.images._pixels import as_rgb_image

__all__ = [
    "EXTRACTOR_PREFIX",
    "CallableExtractor",
    "extractor_name",
    "load_extractor",
]

#: Descriptor records name a callable's descriptors ``"python:module:name"``.
EXTRACTOR_PREFIX = "python:"


def extractor_name(function: Callable) -> str:
    """The name a callable is recorded by: its ``extractor_name`` attribute if
    it has one, else ``module:qualified_name`` (of its class, for an instance).

    Examples
    --------
    >>> import numpy as np
    >>> from vlad.images._callables import extractor_name
    >>> extractor_name(np.asarray)
    'numpy:asarray'
    """
    name = getattr(function, "extractor_name", None)
    if isinstance(name, str) and name:
        return name
    named = function if hasattr(function, "__qualname__") else type(function)
    return f"{named.__module__}:{named.__qualname__}"


def load_extractor(spec: str) -> Callable:
    """The callable named ``"package.module:attribute"``, imported.

    Raises
    ------
    ValueError
        ``spec`` is not of that form, or the attribute is not callable.
    ImportError
        The module cannot be imported or lacks the attribute.

    Examples
    --------
    >>> from vlad.images._callables import load_extractor
    >>> load_extractor("numpy:asarray").__name__
    'asarray'
    """
    module_name, _, attribute = str(spec).partition(":")
    if not module_name or not attribute:
        raise VladError(f"extractor must be 'package.module:function'; got {spec!r}")
    try:
        module = importlib.import_module(module_name)
    except Exception as error:  # any error of the user's module, as one line
        raise ImportError(
            f"cannot import the extractor {spec!r}: {type(error).__name__}: {error}"
        ) from None
    function = module
    for part in attribute.split("."):
        function = getattr(function, part, None)
        if function is None:
            raise ImportError(
                f"cannot import the extractor {spec!r}: {module_name} has no "
                f"{attribute!r}"
            )
    if not callable(function):
        raise VladError(
            f"extractor {spec!r} must be callable; got a {type(function).__name__}"
        )
    return function


@dataclasses.dataclass(frozen=True)
class CallableExtractor:
    """A callable from an RGB image to its descriptors, and how images are read
    for it.

    Parameters
    ----------
    function : callable
        ``function(image) -> descriptors``: ``image`` an RGB ``uint8`` array
        of shape (height, width, 3), ``descriptors`` a floating-point array of
        shape (L, F), finite.
    max_pixels : int, default=MAX_PIXELS
        Skip image files of more pixels, as :class:`vlad.SiftOptions`.

    Attributes
    ----------
    name : str
        :func:`extractor_name` of ``function``.
    """

    function: Callable
    max_pixels: int = MAX_PIXELS

    def __post_init__(self):
        if not callable(self.function):
            raise VladTypeError(
                "extractor must be a callable from an RGB image to an (L, F) "
                f"array; got {self.function!r:.80}"
            )
        value = self.max_pixels
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise VladTypeError(f"max_pixels must be an integer >= 0; got {value!r}")
        if value < 0:
            raise VladError(f"max_pixels must be an integer >= 0; got {value!r}")

    @property
    def name(self) -> str:
        """The callable's recorded name."""
        return extractor_name(self.function)

    @property
    def n_features(self) -> None:
        """Unknown until the callable has run: None."""
        return None

    @property
    def kind(self) -> str:
        """What the descriptors are, in words."""
        return f"descriptors of {self.name}"

    def record(self) -> dict:
        """JSON-serialisable description, for ``DescriptorSets.metadata``."""
        return {
            "extractor": EXTRACTOR_PREFIX + self.name,
            "max_pixels": int(self.max_pixels),
        }

    def describe(self, image, name: str | None = None) -> np.ndarray:
        """Descriptors of an image file (path-like) or image array.

        Returns
        -------
        ndarray of float32 of shape (L, F)

        Raises
        ------
        vlad.ImageReadError
            The file cannot be read, or the callable raised on this image.
        ValueError
            The callable returned something other than a finite
            floating-point (L, F) array (a :class:`vlad.errors.VladError` when
            not an array of floats).
        """
        if isinstance(image, (str, os.PathLike)):
            name = name or os.fspath(image)
            pixels = read_image(image, max_pixels=self.max_pixels, colour=True)
        else:
            name = name or "an image"
            pixels = as_rgb_image(image)
        try:
            descriptors = self.function(pixels)
        except Exception as error:  # the image is skipped, the batch goes on
            raise ImageReadError(
                name,
                f"the extractor {self.name} raised {type(error).__name__}: {error}",
            ) from None
        return self._checked(descriptors, name)

    def _checked(self, descriptors, name: str) -> np.ndarray:
        """``descriptors`` as a float32 (L, F) array, or the error saying what
        is wrong with them."""
        array = descriptors
        try:
            array = np.asarray(descriptors)
        except Exception:  # reported below as not an array
            array = None
        if array is None or array.dtype.kind != "f":
            what = f"dtype {array.dtype}" if array is not None else type(descriptors)
            raise VladError(
                f"the extractor {self.name} returned {what} for {name}; expected "
                "a floating-point array of shape (L, F)"
            )
        if array.ndim != 2 or array.shape[1] == 0:
            raise VladError(
                f"the extractor {self.name} returned shape {array.shape} for "
                f"{name}; expected (L, F) with F >= 1"
            )
        if not np.isfinite(array).all():
            raise VladError(
                f"the extractor {self.name} returned NaN or infinite values for {name}"
            )
        return np.ascontiguousarray(array, dtype=np.float32)
