"""Synthetic descriptor sets for examples, tests and benchmarks."""

from __future__ import annotations

import numpy as np

from vlad.core._descriptors import DescriptorSets
from vlad.core._validation import check_positive_int
from vlad.errors import VladError

__all__ = ["make_descriptor_sets"]


def make_descriptor_sets(
    n_images: int = 100,
    n_descriptors: int = 500,
    n_features: int = 128,
    *,
    kind: str = "sift",
    ragged: bool = False,
    dtype=np.float32,
    seed: int | None = 0,
) -> DescriptorSets:
    """Random local descriptors shaped like real ones.

    Parameters
    ----------
    n_images : int, default=100
    n_descriptors : int, default=500
        Descriptors per image (the mean, when ``ragged``).
    n_features : int, default=128
    kind : {"sift", "gaussian"}, default="sift"
        ``"sift"``: non-negative, sparse-ish values in [0, 255] drawn around a
        few hundred random "visual words", like OpenCV SIFT output;
        ``"gaussian"``: standard normal values.
    ragged : bool, default=False
        Draw each image's descriptor count uniformly from
        ``[0, 2 * n_descriptors]`` (some images may have none).
    dtype : {np.float32, np.float64}, default=np.float32
    seed : int or None, default=0

    Returns
    -------
    DescriptorSets

    Examples
    --------
    >>> import vlad.datasets
    >>> sets = vlad.datasets.make_descriptor_sets(3, 10, 16, seed=0)
    >>> sets.descriptors.shape, sets.descriptors.dtype
    ((30, 16), dtype('float32'))
    """
    n_images = check_positive_int(n_images, "n_images")
    n_descriptors = check_positive_int(n_descriptors, "n_descriptors")
    n_features = check_positive_int(n_features, "n_features")
    if kind not in ("sift", "gaussian"):
        raise VladError(f"kind must be one of ['gaussian', 'sift']; got {kind!r}")
    if np.dtype(dtype) not in (np.float32, np.float64):
        raise VladError(f"dtype must be float32 or float64; got {dtype!r}")
    rng = np.random.default_rng(seed)
    if ragged:
        lengths = rng.integers(0, 2 * n_descriptors + 1, size=n_images)
    else:
        lengths = np.full(n_images, n_descriptors)
    offsets = np.zeros(n_images + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    n_rows = int(offsets[-1])
    if kind == "gaussian":
        descriptors = rng.standard_normal((n_rows, n_features), dtype=np.float32)
    else:
        words = rng.gamma(0.5, 40.0, size=(256, n_features)).astype(np.float32)
        descriptors = words[rng.integers(0, 256, size=n_rows)]
        noise = rng.standard_normal((n_rows, n_features), dtype=np.float32)
        noise *= 12.0
        descriptors += noise
        np.clip(descriptors, 0.0, 255.0, out=descriptors)
    return DescriptorSets(descriptors.astype(dtype, copy=False), offsets)
