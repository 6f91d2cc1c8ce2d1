"""Ragged collections of local descriptors: one ``(L_t, F)`` block per image."""

from __future__ import annotations

import operator
import os
from collections.abc import Iterator, Sequence

import numpy as np
from numpy.typing import ArrayLike

from vlad.core.validation import as_float_matrix, as_offsets
from vlad.formats.files import read_record_archive, save_record_archive

__all__ = ["DescriptorSets", "FORMAT_VERSION", "as_descriptor_sets"]

FORMAT_VERSION = 1


class DescriptorSets:
    """Local descriptors of several images, stored flat with offsets.

    Image ``t`` owns rows ``offsets[t]:offsets[t + 1]`` of ``descriptors``.
    Images with no descriptors are allowed (two equal offsets).

    Parameters
    ----------
    descriptors : array-like of shape (n_descriptors, n_features)
        All images' descriptors, image after image. float64 is kept; any other
        real dtype is stored as float32.
    offsets : array-like of int of shape (n_images + 1,)
        Row boundaries: starts at 0, non-decreasing, ends at ``n_descriptors``.
    names : sequence of str, optional
        One name per image; default ``"0"``, ``"1"``, ...
    metadata : dict, optional
        JSON-serialisable record of how the descriptors were made.

    See Also
    --------
    DescriptorSets.from_list : Build from one array per image.

    Examples
    --------
    >>> import numpy as np
    >>> import vlad
    >>> sets = vlad.DescriptorSets.from_list([np.ones((2, 3)), np.zeros((0, 3))])
    >>> len(sets), sets.offsets.tolist(), sets[0].shape, sets[1].shape
    (2, [0, 2, 2], (2, 3), (0, 3))
    """

    def __init__(
        self,
        descriptors: ArrayLike,
        offsets: ArrayLike,
        names: Sequence[str] | None = None,
        metadata: dict | None = None,
    ):
        self.descriptors = as_float_matrix(descriptors, "descriptors")
        self.offsets = as_offsets(offsets, self.descriptors.shape[0])
        n_images = self.offsets.shape[0] - 1
        if names is None:
            names = [str(t) for t in range(n_images)]
        names = [str(name) for name in names]
        if len(names) != n_images:
            raise ValueError(
                f"names must hold one name per image ({n_images}); got {len(names)}"
            )
        self.names = names
        self.metadata = dict(metadata or {})

    @classmethod
    def from_list(
        cls,
        arrays: Sequence[ArrayLike],
        names: Sequence[str] | None = None,
        *,
        n_features: int | None = None,
        metadata: dict | None = None,
    ) -> DescriptorSets:
        """Build from one ``(L_t, F)`` array per image.

        Parameters
        ----------
        arrays : sequence of array-like, each of shape (L_t, n_features)
            An image with no descriptors may be given as an array of shape
            ``(0, F)`` or an empty 1-D array.
        names : sequence of str, optional
            One name per image.
        n_features : int, optional
            Descriptor dimension; needed only when every array is empty.
        metadata : dict, optional
            JSON-serialisable record of how the descriptors were made.

        Returns
        -------
        DescriptorSets
        """
        blocks = [np.asarray(array) for array in arrays]
        source = "n_features"
        for index, block in enumerate(blocks):
            if block.ndim == 1 and block.size == 0:
                continue
            if block.dtype.kind not in "fiub":
                as_float_matrix(block, f"descriptor array {index}")
            if block.ndim != 2:
                raise ValueError(
                    f"descriptor array {index} must be 2-D of shape (L, n_features); "
                    f"got shape {block.shape}"
                )
            if n_features is None:
                n_features, source = block.shape[1], f"array {index}"
            elif block.shape[1] != n_features:
                raise ValueError(
                    f"descriptor array {index} has {block.shape[1]} features; "
                    f"expected {n_features} (as {source})"
                )
        if n_features is None:
            raise ValueError(
                "cannot infer the descriptor dimension: every array is empty; "
                "pass n_features"
            )
        non_empty = [block for block in blocks if block.size]
        if non_empty and all(block.dtype == np.float64 for block in non_empty):
            dtype = np.dtype(np.float64)
        else:
            dtype = np.dtype(np.float32)
        lengths = [block.shape[0] if block.ndim == 2 else 0 for block in blocks]
        offsets = np.zeros(len(blocks) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        descriptors = np.empty((int(offsets[-1]), n_features), dtype=dtype)
        for block, start, stop in zip(blocks, offsets[:-1], offsets[1:], strict=True):
            if stop > start:
                descriptors[start:stop] = block
        return cls(descriptors, offsets, names=names, metadata=metadata)

    @classmethod
    def load(cls, path: str | os.PathLike) -> DescriptorSets:
        """Read descriptor sets written by :meth:`save` (never unpickles)."""
        arrays, metadata = read_record_archive(
            path, "descriptor sets", ("descriptors", "offsets", "names")
        )
        try:
            return cls(
                arrays["descriptors"],
                arrays["offsets"],
                names=arrays["names"].tolist(),
                metadata=metadata.get("descriptor", {}),
            )
        except (TypeError, ValueError) as error:
            raise ValueError(
                f"{path} holds inconsistent descriptor sets: {error}"
            ) from None

    def save(self, path: str | os.PathLike) -> None:
        """Write to an ``.npz`` file atomically (temporary file, then rename)."""
        save_record_archive(
            path,
            {
                "format": "descriptor sets",
                "format_version": FORMAT_VERSION,
                "descriptor": self.metadata,
            },
            descriptors=self.descriptors,
            offsets=self.offsets,
            names=np.array(self.names, dtype=str),
        )

    @property
    def n_features(self) -> int:
        """Descriptor dimension F."""
        return self.descriptors.shape[1]

    @property
    def lengths(self) -> np.ndarray:
        """Number of descriptors of each image, shape (n_images,)."""
        return np.diff(self.offsets)

    @property
    def dtype(self) -> np.dtype:
        """dtype of the descriptors (float32 or float64)."""
        return self.descriptors.dtype

    def __len__(self) -> int:
        return self.offsets.shape[0] - 1

    def __getitem__(self, index: int) -> np.ndarray:
        """Descriptors of image ``index``, a ``(L_t, F)`` view."""
        try:
            t = range(len(self))[operator.index(index)]
        except TypeError:
            raise TypeError(
                f"descriptor sets are indexed by an integer image index; "
                f"got {type(index).__name__}"
            ) from None
        return self.descriptors[self.offsets[t] : self.offsets[t + 1]]

    def __iter__(self) -> Iterator[np.ndarray]:
        for t in range(len(self)):
            yield self[t]

    def __repr__(self) -> str:
        return (
            f"DescriptorSets(n_images={len(self)}, "
            f"n_descriptors={self.descriptors.shape[0]}, n_features={self.n_features}, "
            f"dtype={self.dtype})"
        )


def as_descriptor_sets(
    values: DescriptorSets | Sequence[ArrayLike] | np.ndarray,
) -> DescriptorSets:
    """Accept a :class:`DescriptorSets`, a list of ``(L_t, F)`` arrays or a
    ``(T, L, F)`` array, and return a :class:`DescriptorSets`."""
    if isinstance(values, DescriptorSets):
        return values
    if isinstance(values, np.ndarray):
        if values.ndim != 3:
            raise ValueError(
                "an array of descriptor sets must have shape "
                f"(n_images, n_descriptors, n_features); got shape {values.shape}"
            )
        n_images, length, n_features = values.shape
        descriptors = values.reshape(n_images * length, n_features)
        offsets = np.arange(n_images + 1, dtype=np.int64) * length
        return DescriptorSets(descriptors, offsets)
    if isinstance(values, (list, tuple)):
        return DescriptorSets.from_list(values)
    raise TypeError(
        "descriptor sets must be a DescriptorSets, a list of (L, F) arrays or a "
        f"(T, L, F) array; got {type(values).__name__}"
    )
