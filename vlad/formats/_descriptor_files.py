"""Descriptors given as a file instead of images: ``.npz`` sets, an ``.npy``,
or hloc's local features (``.h5``)."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from vlad.core._descriptors import DescriptorSets, as_descriptor_sets
from vlad.core._files import read_numpy_file
from vlad.errors import VladError
from vlad.formats._descriptor_shards import (
    ShardedDescriptorSets,
    is_descriptor_folder,
    open_descriptor_shards,
)
from vlad.formats._hloc import HDF5_SUFFIXES, HlocLocalFeatures, open_local_features
from vlad.formats._vectors import RECORD_SUFFIX

__all__ = ["DESCRIPTOR_FILE_SUFFIXES", "descriptor_file_in", "read_descriptor_file"]

#: Suffixes of the descriptor files that :func:`read_descriptor_file` reads.
DESCRIPTOR_FILE_SUFFIXES = (".npy", ".npz", *HDF5_SUFFIXES)


def descriptor_file_in(
    inputs: str | os.PathLike | Sequence[str | os.PathLike],
) -> Path | None:
    """The descriptors file (or folder of descriptor shards) that ``inputs``
    names, or None if they name images.

    Examples
    --------
    >>> from vlad.formats._descriptor_files import descriptor_file_in
    >>> descriptor_file_in("descriptors.npz"), descriptor_file_in("data")
    (PosixPath('descriptors.npz'), None)
    """
    paths = [inputs] if isinstance(inputs, (str, os.PathLike)) else list(inputs)
    if len(paths) != 1:
        return None
    path = Path(paths[0])
    if path.is_dir():
        return path if is_descriptor_folder(path) else None
    if path.suffix.lower() in DESCRIPTOR_FILE_SUFFIXES:
        return path
    return None


def read_descriptor_file(
    path: str | os.PathLike, *, lazy: bool = False
) -> DescriptorSets | ShardedDescriptorSets | HlocLocalFeatures:
    """Descriptor sets from a file or a folder of descriptor shards.

    Parameters
    ----------
    path : path-like
        An ``.npz`` written by :meth:`vlad.DescriptorSets.save` (or ``vlad
        extract``), an ``.npy`` of shape (L, F) (one image) or (T, L, F)
        (T images of L descriptors each), a folder of shards written by
        ``vlad extract -o FOLDER`` (see :mod:`vlad.formats._descriptor_shards`),
        or hloc's local features, an ``.h5`` (see :mod:`vlad.formats._hloc`).
    lazy : bool, default=False
        Open a folder of shards or an ``.h5`` without reading it
        (:class:`~vlad.formats.ShardedDescriptorSets`, read
        a shard at a time, or :class:`~vlad.formats.HlocLocalFeatures`)
        instead of reading it whole.

    Returns
    -------
    DescriptorSets, ShardedDescriptorSets or HlocLocalFeatures
        With the keypoint positions an ``.npz``, folder or ``.h5`` holds
        (``vlad extract`` and hloc keep them); an ``.npy`` holds none.

    Raises
    ------
    FileNotFoundError
        No such file.
    ValueError
        A file that holds no descriptor sets (VLAD vectors, say: an ``.npy``
        with a vectors record beside it, or hloc's global features), or one
        written by a newer vlad (one line).
    ImportError
        An ``.h5`` without h5py installed.
    """
    path = Path(path)
    if path.is_dir():
        shards = open_descriptor_shards(path)
        return shards if lazy else shards.to_sets()
    if path.suffix.lower() in HDF5_SUFFIXES:
        features = open_local_features(path)
        return features if lazy else features.to_sets()
    if path.suffix.lower() == ".npz":
        return DescriptorSets.load(path)
    _refuse_vectors_file(path)
    array = read_numpy_file(path, "descriptors file")
    if not isinstance(array, np.ndarray):
        raise VladError(f"{path} is not a descriptors file: an .npz archive named .npy")
    if array.ndim == 2:
        array = array[np.newaxis]
    if array.ndim != 3:
        raise VladError(
            f"{path} must hold descriptors of shape (L, F) or (T, L, F); "
            f"got shape {array.shape}"
        )
    try:
        return as_descriptor_sets(array)
    except (TypeError, ValueError) as error:
        raise VladError(f"{path} holds no descriptor sets: {error}") from None


def _refuse_vectors_file(path: Path) -> None:
    """Raise ``ValueError`` if ``path`` is a vectors file of ``vlad encode``
    (its ``.json`` record beside it says so): vectors are not descriptors."""
    record_path = path.with_suffix(RECORD_SUFFIX)
    try:
        record = json.loads(record_path.read_text())
    except (OSError, ValueError, RecursionError):
        return
    if isinstance(record, dict) and record.get("format") == "vlad vectors":
        raise VladError(
            f"{path} holds VLAD vectors (see {record_path.name}), not descriptors: "
            "fit and encode take images or the descriptors of vlad extract"
        )
