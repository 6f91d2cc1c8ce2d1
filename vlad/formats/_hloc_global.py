"""hloc's global features files: VLAD vectors written as each image's
``global_descriptor`` dataset (vlad's record in a root attribute hloc
ignores), and read back."""

from __future__ import annotations

import io
import json
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from vlad.core._validation import all_finite
from vlad.core._writing import atomic_write
from vlad.errors import VladError, VladTypeError
from vlad.formats._hloc import (
    GLOBAL_DATASET,
    LOCAL_DATASET,
    image_names,
    import_h5py,
    open_hdf5,
)

__all__ = ["RECORD_ATTRIBUTE", "read_global_features", "write_global_features"]

#: The root attribute where vlad keeps the JSON record of the vectors it wrote
#: (hloc reads datasets only).
RECORD_ATTRIBUTE = "vlad_record"


def write_global_features(
    path: str | os.PathLike,
    vectors,
    names: Sequence[str],
    record: dict | None = None,
    *,
    overwrite: bool = False,
) -> None:
    """Write vectors as hloc's global features file, atomically.

    One group per name, holding a float32 dataset ``global_descriptor`` of
    shape (D,), as hloc's ``pairs_from_retrieval.py`` reads; the file is made
    in memory, then written to a temporary file moved into place (see
    :func:`vlad.core._writing.atomic_write`).

    Parameters
    ----------
    path : path-like
    vectors : array-like of shape (n_images, D)
    names : sequence of str
        One name per row: relative paths such as ``db/0001.jpg`` become nested
        groups, as hloc makes them.
    record : dict, optional
        JSON-serialisable description (as ``vectors.json``), kept in the
        root's ``vlad_record`` attribute, which hloc does not read.
    overwrite : bool, default=False
        Replace a file that exists (see :func:`vlad.save_vectors`).

    Raises
    ------
    ValueError
        Vectors of another shape than the names, NaN or infinite vectors, two
        rows of one name, or a name that is no group path (empty, starting or
        ending with ``/``, with an empty, ``.`` or ``..`` part).
    FileExistsError
        Without ``overwrite``, the file exists or appeared meanwhile.
    ImportError
        h5py is not installed.

    Examples
    --------
    >>> import os, tempfile
    >>> import h5py
    >>> import numpy as np
    >>> from vlad.formats import write_global_features
    >>> path = os.path.join(tempfile.mkdtemp(), "global-feats-vlad.h5")
    >>> write_global_features(path, np.eye(2), ["db/1.jpg", "query 2.jpg"])
    >>> with h5py.File(path, "r") as file:
    ...     file["db/1.jpg"]["global_descriptor"][()].tolist()
    [1.0, 0.0]
    """
    h5py = import_h5py()
    vectors = np.asarray(vectors)
    if vectors.dtype.kind not in "fiub":
        raise VladTypeError(
            f"vectors must hold real numbers; got dtype {vectors.dtype}"
        )
    if vectors.ndim != 2 or vectors.shape[0] != len(names):
        raise VladError(
            f"vectors must have shape (n_names, n_dimensions) = ({len(names)}, ...); "
            f"got shape {vectors.shape}"
        )
    if not all_finite(vectors):
        raise VladError("vectors must be finite; got NaN or infinite values")
    for name in names:
        _check_group_name(name)
    if len(set(names)) != len(names):
        raise VladError("names must be distinct: an hloc file has one group per image")
    record_text = None if record is None else json.dumps(record)
    buffer = io.BytesIO()
    with h5py.File(buffer, "w") as file:
        if record_text is not None:
            file.attrs[RECORD_ATTRIBUTE] = record_text
        for name, vector in zip(names, vectors.astype(np.float32), strict=True):
            try:
                file.create_group(name).create_dataset(GLOBAL_DATASET, data=vector)
            except (ValueError, KeyError) as error:
                raise VladError(
                    f"image name {name!r} cannot be an hloc group beside the "
                    f"others: {error}"
                ) from None
    with atomic_write(path, overwrite=overwrite) as handle:
        handle.write(buffer.getbuffer())


def _check_group_name(name: str) -> None:
    """Raise ``ValueError`` unless ``name`` is a relative HDF5 group path that
    reads back as itself."""
    if any(part in ("", ".", "..") for part in name.split("/")):
        raise VladError(
            f"image name {name!r} cannot name an hloc group: it must be a "
            "relative path without empty, '.' or '..' parts"
        )
    try:
        name.encode()
    except UnicodeEncodeError:
        raise VladError(
            f"image name {name!r} cannot name an hloc group: HDF5 names are UTF-8"
        ) from None


def read_global_features(
    path: str | os.PathLike,
) -> tuple[np.ndarray, list[str], dict | None]:
    """Read hloc's global features file as vectors, names and record.

    Parameters
    ----------
    path : path-like
        Written by hloc (NetVLAD, ...) or by :func:`write_global_features`
        (``vlad encode -o global-feats.h5``).

    Returns
    -------
    vectors : ndarray of float32 of shape (n_images, D)
        In the order of the names.
    names : list of str
        Sorted.
    record : dict or None
        What vlad recorded of how the vectors were made; None for a file
        hloc wrote.

    Raises
    ------
    FileNotFoundError
        No such file.
    ValueError
        A file HDF5 cannot read, local features, global descriptors that are
        not 1-D or not of one dimension, NaN or infinite values, or a damaged
        record (one line).
    ImportError
        h5py is not installed.
    """
    h5py = import_h5py()
    path = Path(path)
    with open_hdf5(path) as file:
        names = image_names(file, GLOBAL_DATASET, path)
        if not names:
            kind = (
                "hloc's local features, not global ones: fit a codebook on "
                "them and encode them with vlad encode"
                if image_names(file, LOCAL_DATASET, path)
                else f"no hloc global features (no {GLOBAL_DATASET!r} dataset)"
            )
            raise VladError(f"{path} holds {kind}")
        record = _record_of(file, path)
        vectors = None
        for row, name in enumerate(names):
            dataset = file[f"{name}/{GLOBAL_DATASET}"]
            if not isinstance(dataset, h5py.Dataset):
                raise VladError(
                    f"{path}: image {name!r} has a group named {GLOBAL_DATASET!r}, "
                    "not a dataset"
                )
            vector = np.asarray(dataset[()])
            if vector.ndim != 1 or vector.dtype.kind not in "fiu":
                raise VladError(
                    f"{path}: the global descriptor of {name!r} has shape "
                    f"{vector.shape} and dtype {vector.dtype}; expected a 1-D "
                    "array of numbers (D,)"
                )
            if vectors is None:
                vectors, first = np.empty((len(names), len(vector)), np.float32), name
            elif len(vector) != vectors.shape[1]:
                raise VladError(
                    f"{path}: the global descriptor of {name!r} has {len(vector)} "
                    f"dimensions but that of {first!r} has {vectors.shape[1]}"
                )
            vectors[row] = vector
    if not all_finite(vectors):
        raise VladError(f"{path} holds NaN or infinite global descriptors")
    return vectors, names, record


def _record_of(file, path: Path) -> dict | None:
    """The JSON record vlad keeps in the root's attributes, if any."""
    text = file.attrs.get(RECORD_ATTRIBUTE)
    if text is None:
        return None
    try:
        record = json.loads(text)
    except (TypeError, ValueError, RecursionError) as error:
        raise VladError(
            f"{path}: its {RECORD_ATTRIBUTE} is not JSON ({error})"
        ) from None
    if not isinstance(record, dict):
        raise VladError(f"{path}: its {RECORD_ATTRIBUTE} is not a JSON object")
    return record
