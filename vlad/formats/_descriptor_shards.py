"""Folders of descriptor shards: descriptor sets of any number of images.

``vlad extract IMAGES -o NAME`` (no suffix) writes a folder laid out as a
folder of vector shards (see :mod:`vlad.formats._shards`, whose writer it
uses)::

    part-00000-KEY.npy            (n_descriptors, F) float32 descriptors of the
                                  shard's images, image after image
    part-00000-KEY.keypoints.npy  (n_descriptors, 4) float32 keypoint positions
    part-00000-KEY.json           the key, the images' names and their numbers
                                  of descriptors, the images skipped or empty
    ...
    manifest.json                 written last: the shards, their counts and
                                  keys, the descriptor options of the run

:func:`open_descriptor_shards` reads the manifest only; a shard is read
(memory-mapped) when one of its images is asked for, and only the last one
read stays mapped, so reading the images in order holds one shard.
"""

from __future__ import annotations

import bisect
import json
import os
from pathlib import Path

import numpy as np

from vlad.core._descriptors import FORMAT_VERSION, KEYPOINT_FIELDS, DescriptorSets
from vlad.core._files import check_format_version, read_numpy_file
from vlad.errors import VladError
from vlad.formats._names import names_from_json
from vlad.formats._shards import (
    MANIFEST_NAME,
    has_shards,
    read_json_object,
    shard_names,
)

__all__ = [
    "KEYPOINTS_ARRAY",
    "ShardedDescriptorSets",
    "is_descriptor_folder",
    "open_descriptor_shards",
]

#: The name of the keypoint array of a shard (``part-00000-KEY.keypoints.npy``).
KEYPOINTS_ARRAY = "keypoints"
_KIND = "descriptor shards"
#: The formats of the manifests vlad writes into folders of shards.
_SHARD_FORMATS = ("descriptor sets", "vlad vectors")


def is_descriptor_folder(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a folder of shards written by vlad, complete or not
    (descriptors or vectors: :func:`open_descriptor_shards` tells), rather
    than a folder of images (which may hold a ``manifest.json`` of its own).

    Examples
    --------
    >>> is_descriptor_folder("data")
    False
    """
    if not has_shards(path):
        return False
    manifest = Path(path) / MANIFEST_NAME
    if not manifest.is_file():
        return True  # shards without a manifest: an interrupted run
    try:
        record = json.loads(manifest.read_bytes())
    except (OSError, ValueError, RecursionError):
        return False
    return isinstance(record, dict) and record.get("format") in _SHARD_FORMATS


class ShardedDescriptorSets:
    """The descriptor sets of a folder of shards, read a shard at a time.

    Behaves as a read-only :class:`vlad.DescriptorSets` for ``len``,
    ``sets[t]`` (image ``t``'s ``(L_t, F)`` descriptors), iteration,
    ``keypoints_of``, ``names``, ``lengths``, ``n_features``, ``dtype`` and
    ``metadata``; :meth:`between` gives a :class:`vlad.DescriptorSets` of a
    range of images and :meth:`to_sets` of all of them (in memory). Made by
    :func:`open_descriptor_shards`, which checks the manifest first.

    Parameters
    ----------
    folder : Path
        The folder of shards.
    record : dict
        The folder's manifest (``manifest.json``), already checked: its
        ``shards`` (each with ``key``, ``n_images`` and ``n_descriptors``),
        ``n_features``, and the ``descriptor`` metadata and
        ``keypoint_fields`` when there are any.
    starts : ndarray of int64 of shape (n_shards + 1,)
        The first image of each shard, and the number of images.

    Attributes
    ----------
    folder, record, starts
        The parameters, as given.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> import vlad
    >>> from vlad.pipeline import extract_images_to_folder
    >>> folder = pathlib.Path(tempfile.mkdtemp(), "descriptors")
    >>> options = {"max_keypoints": 50}
    >>> shards = extract_images_to_folder("data", folder, options, shard_images=3)
    >>> len(shards), shards.n_shards, shards.names[:2]
    (8, 3, ['astronaut.jpg', 'brick.jpg'])
    >>> sets, _ = vlad.extract_images("data", options, n_jobs=1)
    >>> np.array_equal(shards[5], sets[5]), np.array_equal(shards.lengths, sets.lengths)
    (True, True)
    >>> np.array_equal(shards.to_sets().keypoints, sets.keypoints)
    True
    """

    def __init__(self, folder: Path, record: dict, starts: np.ndarray):
        self.folder = folder
        self.record = record
        self.starts = starts
        self._open: tuple[int, DescriptorSets] | None = None
        self._names: list[str] | None = None
        self._lengths: np.ndarray | None = None

    @property
    def n_shards(self) -> int:
        """Number of shards."""
        return len(self.starts) - 1

    @property
    def n_features(self) -> int:
        """Descriptor dimension F."""
        return int(self.record["n_features"])

    @property
    def n_descriptors(self) -> int:
        """Descriptors of all images."""
        return sum(int(entry["n_descriptors"]) for entry in self.record["shards"])

    @property
    def dtype(self) -> np.dtype:
        """float32."""
        return np.dtype(np.float32)

    @property
    def metadata(self) -> dict:
        """How the descriptors were made (as ``DescriptorSets.metadata``)."""
        return self.record.get("descriptor") or {}

    @property
    def has_keypoints(self) -> bool:
        """Whether the shards hold keypoint positions."""
        return "keypoint_fields" in self.record

    @property
    def names(self) -> list[str]:
        """The name of every image (every shard's record is read once)."""
        if self._names is None:
            self._read_records()
        return self._names

    @property
    def lengths(self) -> np.ndarray:
        """Number of descriptors of each image, shape (n_images,)."""
        if self._lengths is None:
            self._read_records()
        return self._lengths

    def __len__(self) -> int:
        return int(self.starts[-1])

    def __getitem__(self, index: int) -> np.ndarray:
        """Descriptors of image ``index``, a ``(L_t, F)`` view of its shard."""
        shard, local = self._locate(index)
        return self.shard(shard)[local]

    def __iter__(self):
        for t in range(len(self)):
            yield self[t]

    def keypoints_of(self, index: int) -> np.ndarray:
        """Keypoint positions of image ``index``, a ``(L_t, 4)`` view.

        Parameters
        ----------
        index : int
            The image's place in ``names``; negative counts from the end.

        Returns
        -------
        ndarray of float32 of shape (L_t, 4)
            x, y, size and angle of each descriptor of ``self[index]``, a
            view of its memory-mapped shard.

        Raises
        ------
        ValueError
            The shards hold no keypoint positions (see ``has_keypoints``).
        """
        shard, local = self._locate(index)
        return self.shard(shard).keypoints_of(local)

    def shard(self, index: int) -> DescriptorSets:
        """Shard ``index`` as descriptor sets whose arrays are memory-mapped.

        Parameters
        ----------
        index : int
            The shard's place in the manifest, from 0 to ``n_shards - 1``.
            The last shard opened is kept open; opening another drops it.

        Returns
        -------
        DescriptorSets
            The shard's images, with descriptors (and keypoints, when the
            shards hold them) memory-mapped from its files.

        Raises
        ------
        ValueError
            The shard is missing, damaged or of another run than the
            manifest's.
        """
        if self._open is not None and self._open[0] == index:
            return self._open[1]
        self._open = None  # drop the last shard's maps before mapping another
        entry = self.record["shards"][index]
        key = str(entry["key"])
        descriptors_name, record_name = shard_names(index, key)
        path = self.folder / record_name
        record = read_json_object(path, "descriptors")
        if record.get("key") != key:
            raise VladError(
                f"{path} belongs to another run than {self.folder / MANIFEST_NAME} "
                "(the folder is being replaced, or was altered)"
            )
        names = names_from_json(record.get("names"), str(path))
        lengths = record.get("lengths")
        n_images = int(self.starts[index + 1] - self.starts[index])
        if (
            len(names) != n_images
            or not isinstance(lengths, list)
            or len(lengths) != n_images
            or not all(type(length) is int and length >= 0 for length in lengths)
            or sum(lengths) != int(entry["n_descriptors"])
        ):
            raise VladError(
                f"{path} is not the shard the manifest names: expected {n_images} "
                f"names and lengths summing to {entry['n_descriptors']}"
            )
        arrays = {
            "descriptors": (descriptors_name, self.n_features),
        }
        if self.has_keypoints:
            stem = descriptors_name[: -len(".npy")]
            arrays["keypoints"] = (f"{stem}.{KEYPOINTS_ARRAY}.npy", 4)
        mapped = {}
        for field, (name, n_columns) in arrays.items():
            array = read_numpy_file(self.folder / name, "descriptor shard", mmap=True)
            shape = (int(entry["n_descriptors"]), n_columns)
            if (
                not isinstance(array, np.ndarray)
                or array.dtype != np.float32
                or array.shape != shape
            ):
                raise VladError(
                    f"{self.folder / name} is not the shard the manifest names: "
                    f"expected float32 {field} of shape {shape}"
                )
            mapped[field] = array
        offsets = np.zeros(n_images + 1, np.int64)
        np.cumsum(lengths, out=offsets[1:])
        sets = DescriptorSets(
            mapped["descriptors"],
            offsets,
            names,
            self.metadata,
            keypoints=mapped.get("keypoints"),
        )
        self._open = (index, sets)
        return sets

    def between(self, start: int, stop: int) -> DescriptorSets:
        """Images ``start`` to ``stop`` (excluded) as descriptor sets in memory.

        Parameters
        ----------
        start : int
            The first image, a place in ``names``.
        stop : int
            The place after the last image, at most ``len(self)``; no image
            when it is not above ``start``.

        Returns
        -------
        DescriptorSets
            The images' descriptors (and keypoints, when the shards hold
            them), copied from their shards, with the shards' ``metadata``.
        """
        blocks, names, keypoints = [], [], []
        for t in range(start, stop):
            shard, local = self._locate(t)
            sets = self.shard(shard)
            blocks.append(sets[local])
            names.append(sets.names[local])
            if self.has_keypoints:
                keypoints.append(sets.keypoints_of(local))
        return DescriptorSets.from_list(
            blocks,
            names,
            n_features=self.n_features,
            metadata=self.metadata,
            keypoints=keypoints if self.has_keypoints else None,
        )

    def to_sets(self) -> DescriptorSets:
        """All images as descriptor sets in memory."""
        return self.between(0, len(self))

    def _locate(self, index: int) -> tuple[int, int]:
        """The shard of image ``index`` and its place there."""
        t = range(len(self))[index]
        shard = bisect.bisect_right(self.starts, t) - 1
        return shard, t - int(self.starts[shard])

    def _read_records(self) -> None:
        names: list[str] = []
        lengths: list[int] = []
        for index, entry in enumerate(self.record["shards"]):
            path = self.folder / shard_names(index, str(entry["key"]))[1]
            record = read_json_object(path, "descriptors")
            names.extend(names_from_json(record.get("names"), str(path)))
            lengths.extend(record.get("lengths") or [])
        if len(names) != len(self) or len(lengths) != len(self):
            raise VladError(
                f"the shards of {self.folder} do not hold the {len(self)} images "
                "their manifest counts"
            )
        self._names, self._lengths = names, np.asarray(lengths, np.int64)

    def __repr__(self) -> str:
        return (
            f"ShardedDescriptorSets(n_images={len(self)}, n_shards={self.n_shards}, "
            f"n_features={self.n_features}, folder={str(self.folder)!r})"
        )


def open_descriptor_shards(folder: str | os.PathLike) -> ShardedDescriptorSets:
    """Open a complete folder of descriptor shards (its manifest only).

    Parameters
    ----------
    folder : path-like
        A folder of descriptor shards written by ``vlad extract -o FOLDER``
        and complete (with its ``manifest.json``).

    Returns
    -------
    ShardedDescriptorSets
        The images' descriptors; nothing is read but the manifest until
        images are asked for.

    Raises
    ------
    FileNotFoundError
        No such folder.
    ValueError
        No manifest (the run writing it was interrupted or is still running),
        a folder of vectors, a manifest of a newer vlad or a damaged one.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"no such folder of descriptors: {folder}")
    manifest_path = folder / MANIFEST_NAME
    if not manifest_path.is_file():
        raise VladError(
            f"{folder} is not a complete folder of descriptors: it has no "
            f"{MANIFEST_NAME} (the run writing it was interrupted or is still "
            "running; resume it with resume=True or --resume)"
        )
    record = read_json_object(manifest_path, "descriptors")
    if record.get("format") != "descriptor sets" or record.get("layout") != "shards":
        raise VladError(
            f"{folder} is not a folder of descriptor shards (its manifest says "
            f"format {record.get('format')!r}): give the descriptors of vlad extract"
        )
    check_format_version(manifest_path, record, "descriptor sets", FORMAT_VERSION)
    try:
        counts = [int(entry["n_images"]) for entry in record["shards"]]
        for entry in record["shards"]:
            str(entry["key"]), int(entry["n_descriptors"])
        int(record["n_features"])
    except (KeyError, TypeError, ValueError):
        raise VladError(f"{manifest_path} is a damaged manifest of {_KIND}") from None
    fields = record.get("keypoint_fields")
    if fields is not None and fields != list(KEYPOINT_FIELDS):
        raise VladError(
            f"{manifest_path} is a damaged manifest of {_KIND}: its keypoint fields "
            f"are {fields!r}; expected {list(KEYPOINT_FIELDS)}"
        )
    starts = np.zeros(len(counts) + 1, np.int64)
    np.cumsum(counts, out=starts[1:])
    return ShardedDescriptorSets(folder, record, starts)
