"""VLAD vectors of many images, encoded a chunk of images at a time.

Descriptor sets read lazily (a folder of shards, see
:class:`vlad.formats.ShardedDescriptorSets`) are never held
whole: each chunk of images is gathered, encoded and dropped. Chunks start at
multiples of ``chunk_images`` counted from image 0, so a range of images that
starts on such a multiple gets the same vectors as the whole collection.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from vlad.core._codebook import Codebook
from vlad.core._descriptors import DescriptorSets
from vlad.core._encoding import encode
from vlad.core._options import EncodingOptions

__all__ = ["RangeReadable", "encode_in_chunks"]


class RangeReadable(Protocol):
    """Descriptor sets that give a range of their images as
    :class:`vlad.DescriptorSets` (``DescriptorSets`` itself, or a folder of
    shards)."""

    def __len__(self) -> int: ...

    def between(self, start: int, stop: int) -> DescriptorSets: ...


def encode_in_chunks(
    sets: RangeReadable,
    codebook: Codebook,
    options: EncodingOptions,
    *,
    chunk_images: int,
    n_jobs: int | None = None,
    start: int = 0,
    stop: int | None = None,
) -> np.ndarray:
    """:func:`vlad.encode` of images ``start`` to ``stop``, a chunk at a time.

    Parameters
    ----------
    sets : DescriptorSets or ShardedDescriptorSets
    codebook : Codebook
    options : EncodingOptions
    chunk_images : int
        Images encoded at once; chunks start at multiples of it.
    n_jobs : int or None, default=None
        As in :func:`vlad.encode`.
    start, stop : int
        The images encoded (``stop`` excluded; None for all).

    Returns
    -------
    ndarray of float32 of shape (stop - start, n_clusters * n_features)

    Examples
    --------
    >>> import numpy as np
    >>> import vlad
    >>> from vlad.core._chunked_encoding import encode_in_chunks
    >>> blocks = list(vlad.datasets.make_descriptor_sets(5, 20, 8))
    >>> sets = vlad.DescriptorSets.from_list(blocks)
    >>> codebook = vlad.fit_codebook(sets, 3)
    >>> options = vlad.EncodingOptions()
    >>> chunked = encode_in_chunks(sets, codebook, options, chunk_images=2, n_jobs=1)
    >>> np.allclose(chunked, vlad.encode(sets, codebook, n_jobs=1), atol=1e-6)
    True
    """
    stop = len(sets) if stop is None else stop
    n_dimensions = codebook.n_clusters * codebook.n_features
    vectors = np.zeros((stop - start, n_dimensions), np.float32)
    first = start
    while first < stop:
        last = min(stop, (first // chunk_images + 1) * chunk_images)
        vectors[first - start : last - start] = encode(
            sets.between(first, last), codebook, options, n_jobs=n_jobs
        )
        first = last
    return vectors
