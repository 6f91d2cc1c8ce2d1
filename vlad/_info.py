"""What a vlad file holds: a codebook, descriptor sets, VLAD vectors, an index
folder or search results."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from vlad.core._codebook import Codebook
from vlad.core._descriptors import FORMAT_VERSION, KEYPOINT_FIELDS
from vlad.core._files import (
    check_format_version,
    npz_member_header,
    parse_record,
    read_numpy_file,
    read_record_archive,
)
from vlad.core._validation import all_finite, as_offsets
from vlad.errors import VladError
from vlad.formats._descriptor_shards import open_descriptor_shards
from vlad.formats._hloc import HDF5_SUFFIXES, hloc_file_kind, open_local_features
from vlad.formats._hloc_global import read_global_features
from vlad.formats._shards import MANIFEST_NAME, is_shard_folder, open_shards
from vlad.formats._vectors import load_vectors, vector_file_paths

__all__ = ["describe_file"]

#: Fields of a vectors record shown by :func:`describe_file`.
_VECTOR_RECORD_FIELDS = (
    "inputs",
    "codebook",
    "descriptor",
    "encoding",
    "n_found",
    "n_skipped",
    "n_empty",
    "skipped",
    "empty",
)


def describe_file(path: str | os.PathLike) -> dict:
    """A JSON-serialisable summary of a codebook, descriptors, vectors, index
    or search results file.

    Parameters
    ----------
    path : path-like
        A codebook or descriptor sets ``.npz`` (from :meth:`Codebook.save`,
        :meth:`DescriptorSets.save` or the ``vlad`` command), a vectors ``.npy``
        with its record (see :mod:`vlad.formats._vectors`), a folder of vector
        shards (see :mod:`vlad.formats._shards`), any other ``.npy``, an index
        folder (from :meth:`vlad.search.VectorIndex.save`), search results
        (``.json``, ``.csv`` or pairs ``.txt``, from
        :meth:`vlad.search.SearchResults.write`) or hloc's local or global
        features ``.h5`` (see :mod:`vlad.formats._hloc`).

    Returns
    -------
    dict
        ``"file"``, ``"kind"`` (``"codebook"``, ``"descriptor sets"``,
        ``"vectors"``, ``"array"``, ``"index"`` or ``"search results"``),
        shapes and dtypes, and the file's record
        of how it was made. Descriptor sets that keep keypoint positions have
        ``"keypoints"``: their fields (``["x", "y", "size", "angle"]``). What
        vlad computes (the file, its kind, shapes, the fingerprint) is never
        replaced by what the file's record says. Only what the summary needs
        is read: descriptor sets' descriptors are not, whatever their size.

    Raises
    ------
    FileNotFoundError
        No such file.
    ValueError
        A file that is none of these.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import vlad
    >>> path = pathlib.Path(tempfile.mkdtemp(), "codebook.npz")
    >>> vlad.fit_codebook(vlad.datasets.make_descriptor_sets(4, 50, 8), 2).save(path)
    >>> summary = vlad.describe_file(path)
    >>> summary["kind"], summary["n_clusters"], summary["n_features"]
    ('codebook', 2, 8)
    """
    path = Path(path)
    if (path / "index.json").is_file():
        return _describe_index(path)
    if is_shard_folder(path):
        return _describe_folder(path)
    if not path.is_file():
        if path.exists():  # a folder, a named pipe, a device
            raise VladError(f"{path} is not a vlad file: it is not a regular file")
        raise FileNotFoundError(f"no such file: {path}")
    suffix = path.suffix.lower()
    if suffix == ".npz":
        kind = _npz_format(path)
        if kind == "codebook":
            return _describe_codebook(path)
        if kind == "descriptor sets":
            return _describe_descriptor_sets(path)
        raise VladError(
            f"{path} is not a vlad file: an .npz without a vlad codebook's or "
            "descriptor sets' record"
        )
    if suffix == ".npy":
        return _describe_npy(path)
    if suffix in HDF5_SUFFIXES:
        return _describe_hloc(path)
    if suffix in (".json", ".csv", ".txt"):
        return _describe_results(path)
    raise VladError(
        f"{path} is not a vlad file: expected a codebook or descriptor sets .npz, "
        "a vectors .npy, an index folder, search results (.json, .csv, .txt) or "
        "hloc's features .h5"
    )


def _describe_index(path: Path) -> dict:
    """An index folder, as :func:`vlad.search.load_index` reads it (an exact
    index's vectors mapped, not read)."""
    from vlad.search._index import load_index

    index = load_index(path, mmap=True)
    return {
        "file": str(path),
        "kind": "index",
        "n_images": index.n_images,
        "n_empty": index.n_empty,
        "n_features": index.n_features,
        "dimension": index.dimension,
        "search": index.factory or "exact",
        "parameters": index.store.parameters,
        "bytes_per_image": index.bytes_per_image,
        "whitening": None if index.whitening is None else index.whitening.record(),
        "augmentation": (
            None if index.augmentation is None else index.augmentation.record()
        ),
        "source": index.source,
    }


def _describe_results(path: Path) -> dict:
    """Search results: the queries and what they found, and (``.json``) how
    the search was made."""
    from vlad.search._results import read_rankings

    rankings = read_rankings(path)
    lengths = [len(names) for names in rankings.values()]
    summary = {
        "file": str(path),
        "kind": "search results",
        "format": {".json": "json", ".csv": "csv"}.get(path.suffix.lower(), "pairs"),
        "n_queries": len(rankings),
        "n_results": sum(lengths),
        "most_per_query": max(lengths, default=0),
        "n_found_nothing": lengths.count(0),
    }
    if summary["format"] == "json":
        document = json.loads(path.read_bytes())
        for field in ("k", "index", "query_expansion", "spatial_verification"):
            if field in document:
                summary[field] = document[field]
        summary["notes"] = document.get("notes", [])
    return summary


def _describe_folder(path: Path) -> dict:
    """A folder of vector shards, read a shard at a time, or of descriptor
    shards, from its manifest and the shards' records."""
    if (path / MANIFEST_NAME).is_file() and _is_descriptor_manifest(path):
        return _describe_descriptor_folder(path)
    shards = open_shards(path)
    summary = {
        "file": str(path),
        "kind": "vectors",
        "n_images": shards.shape[0],
        "n_dimensions": shards.shape[1],
        "dtype": shards.dtype.name,
        "all_finite": all(all_finite(block) for block in shards.blocks),
        "n_zero_rows": sum(
            int(np.count_nonzero(~block.any(axis=1))) for block in shards.blocks
        ),
        "n_shards": len(shards.blocks),
    }
    for field in _VECTOR_RECORD_FIELDS:
        if field in shards.record:
            summary[field] = shards.record[field]
    return summary


def _npz_format(path: Path) -> str | None:
    """The ``format`` of an ``.npz``'s vlad record, None if it names none."""
    arrays = read_numpy_file(path, "vlad file", members=("metadata",))
    if not isinstance(arrays, dict):
        raise VladError(f"{path} is not a vlad file: an .npy named .npz")
    record = parse_record(arrays["metadata"], path, "vlad file")
    return record.get("format") if isinstance(record, dict) else None


def _describe_codebook(path: Path) -> dict:
    codebook = Codebook.load(path)
    summary = {
        "file": str(path),
        "kind": "codebook",
        "n_clusters": codebook.n_clusters,
        "n_features": codebook.n_features,
        "dtype": codebook.centers.dtype.name,
        "fingerprint": codebook.fingerprint,
    }
    if codebook.n_vocabularies > 1:
        summary["n_vocabularies"] = codebook.n_vocabularies
        summary["vocabulary_sizes"] = list(codebook.vocabulary_sizes)
    return _with_record(summary, codebook.metadata)


def _with_record(summary: dict, record: dict) -> dict:
    """``summary`` followed by the fields of a file's record it lacks: what
    vlad computed is never replaced by what the file says."""
    for key, value in record.items():
        summary.setdefault(str(key), value)
    return summary


def _describe_descriptor_sets(path: Path) -> dict:
    """Descriptor sets from their record, offsets and the header of their
    descriptors: never the descriptors themselves."""
    kind = "descriptor sets"
    arrays, record = read_record_archive(path, kind, ("offsets",))
    check_format_version(path, record, f"vlad {kind} file", FORMAT_VERSION)
    shape, dtype = npz_member_header(path, f"vlad {kind} file", "descriptors")
    if len(shape) != 2:
        raise VladError(
            f"{path} holds inconsistent descriptor sets: descriptors of shape {shape}"
        )
    try:
        offsets = as_offsets(arrays["offsets"], shape[0])
    except (TypeError, ValueError) as error:
        raise VladError(f"{path} holds inconsistent descriptor sets: {error}") from None
    lengths = np.diff(offsets)
    has_keypoints = record.get("keypoint_fields") == list(KEYPOINT_FIELDS)
    keypoints = {"keypoints": list(KEYPOINT_FIELDS)} if has_keypoints else {}
    return {
        "file": str(path),
        "kind": kind,
        "n_images": int(lengths.size),
        "n_descriptors": int(shape[0]),
        "n_features": int(shape[1]),
        "dtype": "float64" if dtype == np.float64 else "float32",
        **keypoints,
        "descriptors_per_image": {
            "min": int(lengths.min()) if lengths.size else 0,
            "median": float(np.median(lengths)) if lengths.size else 0.0,
            "max": int(lengths.max(initial=0)),
        },
        "n_empty": int(np.count_nonzero(lengths == 0)),
        "descriptor": record.get("descriptor", {}),
    }


def _is_descriptor_manifest(path: Path) -> bool:
    """Whether the folder's manifest says it holds descriptor sets."""
    try:
        return json.loads((path / MANIFEST_NAME).read_bytes()).get("format") == (
            "descriptor sets"
        )
    except (OSError, ValueError, AttributeError, RecursionError):
        return False


def _describe_descriptor_folder(path: Path) -> dict:
    """A folder of descriptor shards, as :func:`_describe_descriptor_sets`."""
    shards = open_descriptor_shards(path)
    lengths = shards.lengths
    keypoints = {"keypoints": list(KEYPOINT_FIELDS)} if shards.has_keypoints else {}
    return {
        "file": str(path),
        "kind": "descriptor sets",
        "n_images": len(shards),
        "n_descriptors": shards.n_descriptors,
        "n_features": shards.n_features,
        "dtype": "float32",
        **keypoints,
        "descriptors_per_image": {
            "min": int(lengths.min()) if lengths.size else 0,
            "median": float(np.median(lengths)) if lengths.size else 0.0,
            "max": int(lengths.max(initial=0)),
        },
        "n_empty": int(np.count_nonzero(lengths == 0)),
        "n_shards": shards.n_shards,
        "descriptor": shards.metadata,
    }


def _describe_hloc(path: Path) -> dict:
    """hloc's local features as descriptor sets (from the datasets' shapes),
    or its global features as vectors."""
    if hloc_file_kind(path) == "global":
        vectors, _, record = read_global_features(path)
        summary = {
            "file": str(path),
            "kind": "vectors",
            "format": "hloc global features",
            "n_images": int(vectors.shape[0]),
            "n_dimensions": int(vectors.shape[1]),
            "all_finite": True,  # read_global_features refuses others
            "n_zero_rows": int(np.count_nonzero(~vectors.any(axis=1))),
        }
        for field in _VECTOR_RECORD_FIELDS:
            if field in (record or {}):
                summary[field] = record[field]
        return summary
    features = open_local_features(path)
    lengths = features.lengths
    return {
        "file": str(path),
        "kind": "descriptor sets",
        "format": "hloc local features",
        "n_images": len(features),
        "n_descriptors": int(lengths.sum()),
        "n_features": features.n_features,
        "dtype": features.metadata["dtype"],
        "keypoints": ["x", "y"],
        "descriptors_per_image": {
            "min": int(lengths.min()),
            "median": float(np.median(lengths)),
            "max": int(lengths.max()),
        },
        "n_empty": int(np.count_nonzero(lengths == 0)),
        "descriptor": features.metadata,
    }


def _describe_npy(path: Path) -> dict:
    """A vectors file when it has its record beside it, else a plain array."""
    _, names_path, record_path = vector_file_paths(path)
    if not record_path.is_file():
        array = read_numpy_file(path, "vlad file", mmap=True)
        if not isinstance(array, np.ndarray):
            raise VladError(f"{path} is not a vlad file: an .npz named .npy")
        return {
            "file": str(path),
            "kind": "array",
            "shape": list(array.shape),
            "dtype": array.dtype.name,
        }
    vectors, names, record = load_vectors(path, mmap=True)
    summary = {
        "file": str(path),
        "kind": "vectors",
        "n_images": int(vectors.shape[0]),
        "n_dimensions": int(vectors.shape[1]),
        "dtype": vectors.dtype.name,
        "all_finite": all_finite(vectors),
        "n_zero_rows": int(np.count_nonzero(~vectors.any(axis=1))),
        "names_file": str(names_path) if names is not None else None,
    }
    for field in _VECTOR_RECORD_FIELDS:
        if field in record:
            summary[field] = record[field]
    return summary
