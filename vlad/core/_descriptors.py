"""Ragged collections of local descriptors: one ``(L_t, F)`` block per image."""

from __future__ import annotations

import operator
import os
from collections.abc import Iterator, Sequence

import numpy as np
from numpy.typing import ArrayLike

from vlad.core._files import (
    check_format_version,
    read_record_archive,
    save_record_archive,
)
from vlad.core._validation import as_float_matrix, as_offsets, as_record, check_finite
from vlad.errors import VladError, VladTypeError

__all__ = ["DescriptorSets", "FORMAT_VERSION", "KEYPOINT_FIELDS", "as_descriptor_sets"]

#: Version of the descriptor sets file format this vlad writes and reads up to:
#: 2 added the optional ``keypoints`` member; version-1 files still load.
FORMAT_VERSION = 2
#: The columns of ``DescriptorSets.keypoints``.
KEYPOINT_FIELDS = ("x", "y", "size", "angle")


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
    keypoints : array-like of shape (n_descriptors, 4), optional
        Where each descriptor was taken: x, y (pixels of the original image,
        pixel centres at integers), size (diameter in pixels) and angle
        (degrees, as OpenCV's), one row per row of ``descriptors``; stored as
        float32. Spatial verification needs them.

    Attributes
    ----------
    keypoints : ndarray of float32 of shape (n_descriptors, 4) or None
        None when the sets hold no keypoint positions.

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
        *,
        keypoints: ArrayLike | None = None,
    ):
        self.descriptors = as_float_matrix(descriptors, "descriptors")
        self.offsets = as_offsets(offsets, self.descriptors.shape[0])
        n_images = self.offsets.shape[0] - 1
        if names is None:
            names = [str(t) for t in range(n_images)]
        names = [str(name) for name in names]
        if len(names) != n_images:
            raise VladError(
                f"names must hold one name per image ({n_images}); got {len(names)}"
            )
        self.names = names
        self.metadata = as_record(metadata, "metadata")
        self.keypoints = (
            None
            if keypoints is None
            else _as_keypoints(keypoints, self.descriptors.shape[0])
        )

    @classmethod
    def from_list(
        cls,
        arrays: Sequence[ArrayLike],
        names: Sequence[str] | None = None,
        *,
        n_features: int | None = None,
        metadata: dict | None = None,
        keypoints: Sequence[ArrayLike] | None = None,
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
        keypoints : sequence of array-like, each of shape (L_t, 4), optional
            One block of keypoint positions per array (see the class); an
            image with no descriptors may have an empty 1-D array.

        Returns
        -------
        DescriptorSets

        Examples
        --------
        >>> import numpy as np
        >>> import vlad
        >>> sets = vlad.DescriptorSets.from_list(
        ...     [np.ones((2, 3)), np.ones((1, 3))],
        ...     keypoints=[[[5, 6, 2, 0], [7, 8, 4, 90]], [[1, 2, 3, 45]]],
        ... )
        >>> sets.keypoints_of(1).tolist()
        [[1.0, 2.0, 3.0, 45.0]]
        """
        blocks = []
        for index, array in enumerate(arrays):
            try:
                blocks.append(np.asarray(array))
            except (TypeError, ValueError) as error:  # ragged nested lists
                raise VladError(
                    f"descriptor array {index} is not an array of numbers: {error}"
                ) from None
        source = "n_features"
        for index, block in enumerate(blocks):
            if block.ndim == 1 and block.size == 0:
                continue
            if block.dtype.kind not in "fiub":
                as_float_matrix(block, f"descriptor array {index}")
            if block.ndim != 2:
                raise VladError(
                    f"descriptor array {index} must be 2-D of shape (L, n_features); "
                    f"got shape {block.shape}"
                )
            if n_features is None:
                n_features, source = block.shape[1], f"array {index}"
            elif block.shape[1] != n_features:
                raise VladError(
                    f"descriptor array {index} has {block.shape[1]} features; "
                    f"expected {n_features} (as {source})"
                )
        if n_features is None:
            raise VladError(
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
        if keypoints is not None:
            keypoints = _stack_keypoints(keypoints, lengths)
        return cls(
            descriptors, offsets, names=names, metadata=metadata, keypoints=keypoints
        )

    @classmethod
    def load(cls, path: str | os.PathLike) -> DescriptorSets:
        """Read descriptor sets written by :meth:`save` (never unpickles).

        Files of every format version up to :data:`FORMAT_VERSION` load;
        keypoints come back when the file holds them.

        Parameters
        ----------
        path : str or os.PathLike
            An ``.npz`` file.

        Raises
        ------
        FileNotFoundError
            No such file.
        ValueError
            A file that holds no descriptor sets, or one written by a newer
            vlad (one line).
        """
        # The record alone first: it says whether the file holds keypoints,
        # and a newer format is refused before any array is read.
        _, record = read_record_archive(path, "descriptor sets", ())
        check_format_version(path, record, "descriptor sets", FORMAT_VERSION)
        members = ("descriptors", "offsets", "names")
        has_keypoints = "keypoint_fields" in record
        if has_keypoints:
            if record["keypoint_fields"] != list(KEYPOINT_FIELDS):
                raise VladError(
                    f"{path} is a damaged vlad descriptor sets file: its keypoint "
                    f"fields are {record['keypoint_fields']!r}; expected "
                    f"{list(KEYPOINT_FIELDS)}"
                )
            members += ("keypoints",)
        arrays, metadata = read_record_archive(path, "descriptor sets", members)
        try:
            return cls(
                arrays["descriptors"],
                arrays["offsets"],
                names=arrays["names"].tolist(),
                metadata=metadata.get("descriptor", {}),
                keypoints=arrays["keypoints"] if has_keypoints else None,
            )
        except (TypeError, ValueError) as error:
            raise VladError(
                f"{path} holds inconsistent descriptor sets: {error}"
            ) from None

    def save(self, path: str | os.PathLike, *, overwrite: bool = False) -> None:
        """Write to an ``.npz`` file atomically (temporary file, then rename).

        The ``keypoints`` member is written only when the sets hold keypoints.

        Parameters
        ----------
        path : str or os.PathLike
            The file to write.
        overwrite : bool, default=True
            Replace an existing file; never one that appears while this one is
            written (``FileExistsError``).
        """
        record = {
            "format": "descriptor sets",
            "format_version": FORMAT_VERSION,
            "descriptor": self.metadata,
        }
        arrays = {
            "descriptors": self.descriptors,
            "offsets": self.offsets,
            "names": np.array(self.names, dtype=str),
        }
        if self.keypoints is not None:
            record["keypoint_fields"] = list(KEYPOINT_FIELDS)
            arrays["keypoints"] = self.keypoints
        save_record_archive(path, record, overwrite=overwrite, **arrays)

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
        start, stop = self._rows_of(index)
        return self.descriptors[start:stop]

    def keypoints_of(self, index: int) -> np.ndarray:
        """Keypoint positions of image ``index``, a ``(L_t, 4)`` view.

        Row ``i`` is where descriptor ``i`` of ``self[index]`` was taken: x, y,
        size, angle (see :data:`KEYPOINT_FIELDS`).

        Parameters
        ----------
        index : int
            The image.

        Raises
        ------
        ValueError
            The sets hold no keypoint positions.
        """
        if self.keypoints is None:
            raise VladError(
                "these descriptor sets hold no keypoint positions; extract "
                "descriptors with vlad extract (0.3 or later) or "
                "vlad.extract_images to keep them"
            )
        start, stop = self._rows_of(index)
        return self.keypoints[start:stop]

    def between(self, start: int, stop: int) -> DescriptorSets:
        """Images ``start`` to ``stop`` (excluded), their arrays views of these.

        Parameters
        ----------
        start : int
            The first image.
        stop : int
            The image after the last.

        Examples
        --------
        >>> import numpy as np
        >>> import vlad
        >>> sets = vlad.DescriptorSets.from_list([np.ones((2, 3)), np.zeros((1, 3))])
        >>> part = sets.between(1, 2)
        >>> part.names, part.offsets.tolist(), part[0].shape
        (['1'], [0, 1], (1, 3))
        """
        start, stop, _ = slice(start, stop).indices(len(self))
        stop = max(start, stop)
        first, last = int(self.offsets[start]), int(self.offsets[stop])
        return DescriptorSets(
            self.descriptors[first:last],
            self.offsets[start : stop + 1] - first,
            self.names[start:stop],
            self.metadata,
            keypoints=None if self.keypoints is None else self.keypoints[first:last],
        )

    def _rows_of(self, index: int) -> tuple[int, int]:
        """The rows ``(start, stop)`` of image ``index`` (negative counts from
        the end)."""
        try:
            t = range(len(self))[operator.index(index)]
        except TypeError:
            raise VladTypeError(
                f"descriptor sets are indexed by an integer image index; "
                f"got {type(index).__name__}"
            ) from None
        return int(self.offsets[t]), int(self.offsets[t + 1])

    def __iter__(self) -> Iterator[np.ndarray]:
        for t in range(len(self)):
            yield self[t]

    def __repr__(self) -> str:
        return (
            f"DescriptorSets(n_images={len(self)}, "
            f"n_descriptors={self.descriptors.shape[0]}, n_features={self.n_features}, "
            f"dtype={self.dtype})"
        )


def _as_keypoints(keypoints: ArrayLike, n_descriptors: int) -> np.ndarray:
    """``keypoints`` as a C-contiguous float32 ``(n_descriptors, 4)`` array."""
    array = np.asarray(keypoints)
    if array.dtype.kind not in "fiub":
        raise VladTypeError(
            f"keypoints must hold real numbers; got an array of dtype {array.dtype}"
        )
    if array.shape != (n_descriptors, len(KEYPOINT_FIELDS)):
        raise VladError(
            f"keypoints must have shape (n_descriptors, 4) = ({n_descriptors}, 4), "
            f"one row of {', '.join(KEYPOINT_FIELDS)} per descriptor; "
            f"got shape {array.shape}"
        )
    array = np.ascontiguousarray(array, dtype=np.float32)
    check_finite(array, "keypoints")
    return array


def _stack_keypoints(blocks: Sequence[ArrayLike], lengths: list[int]) -> np.ndarray:
    """One ``(L_t, 4)`` block per image, checked against the descriptors'
    ``lengths``, stacked into one float32 array."""
    if len(blocks) != len(lengths):
        raise VladError(
            f"keypoints must hold one block per image ({len(lengths)}); "
            f"got {len(blocks)}"
        )
    stacked = np.empty((sum(lengths), len(KEYPOINT_FIELDS)), dtype=np.float32)
    start = 0
    for index, (block, length) in enumerate(zip(blocks, lengths, strict=True)):
        block = np.asarray(block)
        if block.ndim == 1 and block.size == 0:
            block = block.reshape(0, len(KEYPOINT_FIELDS))
        if block.dtype.kind not in "fiub":
            raise VladTypeError(
                f"keypoint block {index} must hold real numbers; "
                f"got an array of dtype {block.dtype}"
            )
        if block.shape != (length, len(KEYPOINT_FIELDS)):
            raise VladError(
                f"keypoint block {index} must have shape ({length}, 4), one row "
                f"per descriptor of image {index}; got shape {block.shape}"
            )
        stacked[start : start + length] = block
        start += length
    return stacked


def as_descriptor_sets(
    values: DescriptorSets | Sequence[ArrayLike] | np.ndarray,
) -> DescriptorSets:
    """Accept a :class:`DescriptorSets`, a list of ``(L_t, F)`` arrays or a
    ``(T, L, F)`` array, and return a :class:`DescriptorSets`."""
    if isinstance(values, DescriptorSets):
        return values
    if isinstance(values, np.ndarray):
        if values.ndim != 3:
            raise VladError(
                "an array of descriptor sets must have shape "
                f"(n_images, n_descriptors, n_features); got shape {values.shape}"
            )
        n_images, length, n_features = values.shape
        descriptors = values.reshape(n_images * length, n_features)
        offsets = np.arange(n_images + 1, dtype=np.int64) * length
        return DescriptorSets(descriptors, offsets)
    if isinstance(values, (list, tuple)):
        return DescriptorSets.from_list(values)
    raise VladTypeError(
        "descriptor sets must be a DescriptorSets, a list of (L, F) arrays or a "
        f"(T, L, F) array; got {type(values).__name__}"
    )
