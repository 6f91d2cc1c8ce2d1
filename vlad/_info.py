"""What a vlad file holds: a codebook, descriptor sets, VLAD vectors (and
their names and record beside them), an index folder (VLAD or ASMK), search
results, an evaluation, a page and its folder, or a picture."""

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
from vlad.formats._names import names_from_lines
from vlad.formats._shards import MANIFEST_NAME, is_shard_folder, open_shards
from vlad.formats._vectors import NAMES_SUFFIX, load_vectors, vector_file_paths
from vlad.images._files import IMAGE_EXTENSIONS
from vlad.images._headers import read_header
from vlad.pages._describe import (
    PAGE_SUFFIXES,
    describe_page,
    describe_page_folder,
    is_page_folder,
)

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

#: Bytes of an image read for its header: its size comes before its pixels,
#: after metadata (EXIF, ICC profiles) of at most a few hundred kilobytes.
_IMAGE_HEADER_BYTES = 4 << 20


def describe_file(path: str | os.PathLike) -> dict:
    """A JSON-serialisable summary of any file or folder vlad writes.

    Parameters
    ----------
    path : path-like
        A codebook or descriptor sets ``.npz`` (from :meth:`Codebook.save`,
        :meth:`DescriptorSets.save` or the ``vlad`` command), a vectors ``.npy``
        with its record (see :mod:`vlad.formats._vectors`), or that record
        (``.json``) or names (``.names.txt``) beside it, a folder of vector
        or descriptor shards (see :mod:`vlad.formats._shards`), any other
        ``.npy``, an index folder (from :meth:`vlad.search.VectorIndex.save`
        or :meth:`vlad.asmk.ASMKIndex.save`), search results (``.json``,
        ``.csv`` or pairs ``.txt``, from
        :meth:`vlad.search.SearchResults.write`), an evaluation (``.json``,
        from :meth:`vlad.evaluation.Evaluation.write`), a page (``.html``,
        from :func:`vlad.pages.write_search_page` or
        :func:`vlad.pages.write_evaluation_page`) or its folder, an image
        (a picture of matches, a thumbnail), or hloc's local or global
        features ``.h5`` (see :mod:`vlad.formats._hloc`).

    Returns
    -------
    dict
        ``"file"``, ``"kind"`` (``"codebook"``, ``"descriptor sets"``,
        ``"vectors"``, ``"vectors record"``, ``"vector names"``,
        ``"array"``, ``"index"``, ``"asmk index"``, ``"search results"``,
        ``"evaluation"``, ``"search page"``, ``"evaluation report"``,
        ``"page folder"`` or ``"image"``), shapes and dtypes, and the file's
        record of how it was made. Descriptor sets that keep keypoint
        positions have ``"keypoints"``: their fields (``["x", "y", "size",
        "angle"]``). What vlad computes (the file, its kind, shapes, the
        fingerprint) is never replaced by what the file's record says. Only
        what the summary needs is read: descriptor sets' descriptors are not,
        whatever their size, nor an image's pixels.

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
        return _describe_index_folder(path)
    if is_page_folder(path):
        return describe_page_folder(path)
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
    if suffix == ".json":
        return _describe_json(path)
    if path.name.lower().endswith(NAMES_SUFFIX):
        return _describe_names(path)
    if suffix in (".csv", ".txt"):
        return _describe_results(path)
    if suffix in PAGE_SUFFIXES:
        return describe_page(path)
    if suffix in IMAGE_EXTENSIONS:
        return _describe_image(path)
    raise VladError(
        f"{path} is not a vlad file: expected a codebook or descriptor sets .npz, "
        "a vectors .npy (or its .json or .names.txt), an index folder, search "
        "results (.json, .csv, .txt), an evaluation .json, a page .html, an "
        "image or hloc's features .h5"
    )


def _describe_index_folder(path: Path) -> dict:
    """A VLAD or an ASMK index folder, told by its ``index.json``."""
    from vlad.asmk._files import FORMAT as ASMK_FORMAT

    try:
        kind = json.loads((path / "index.json").read_bytes()).get("format")
    except (OSError, ValueError, AttributeError, RecursionError):
        kind = None
    if kind == ASMK_FORMAT:
        return _describe_asmk_index(path)
    return _describe_index(path)


def _describe_asmk_index(path: Path) -> dict:
    """An ASMK index folder, as :func:`vlad.asmk.load_asmk_index` reads it
    (its inverted file mapped, not read)."""
    from vlad.asmk._files import load_asmk_index

    index = load_asmk_index(path, mmap=True)
    return {
        "file": str(path),
        "kind": "asmk index",
        "kernel": index.kernel,
        "n_images": index.n_images,
        "n_empty": index.n_empty,
        "n_words": index.n_words,
        "n_features": index.n_features,
        "n_entries": index.n_entries,
        "bytes_per_entry": index.bytes_per_entry,
        "alpha": index.alpha,
        "threshold": index.threshold,
        "idf": index.idf,
        "multiple_assignment": index.default_multiple_assignment,
        "codebook": {
            "fingerprint": index.codebook.fingerprint,
            "n_clusters": index.codebook.n_clusters,
        },
        "source": index.source,
    }


def _describe_json(path: Path) -> dict:
    """A JSON file vlad writes, told by its ``format``: search results, an
    evaluation, the record beside vectors, or the record of a folder (an
    index's ``index.json``, shards' ``manifest.json``: the folder's summary)."""
    from vlad.evaluation._scoring import FORMAT as EVALUATION_FORMAT
    from vlad.search._results import FORMAT as RESULTS_FORMAT

    try:
        document = json.loads(path.read_bytes())
    except (ValueError, RecursionError) as error:
        raise VladError(f"{path} is not a vlad file: not JSON ({error})") from None
    if not isinstance(document, dict):
        document = {}
    kind = document.get("format")
    if kind == RESULTS_FORMAT:
        return _describe_results(path)
    if kind == EVALUATION_FORMAT:
        return _describe_evaluation(path, document)
    if path.name == "index.json" and (path.parent / "names.json").is_file():
        return _describe_index_folder(path.parent)
    if path.name == MANIFEST_NAME and is_shard_folder(path.parent):
        return _describe_folder(path.parent)
    checksums = document.get("checksums")
    if (
        kind == "vlad vectors"
        or (isinstance(checksums, dict) and "vectors" in checksums)
        or path.with_suffix(".npy").is_file()
    ):
        return _describe_vectors_record(path, document)
    raise VladError(
        f"{path} is not a vlad file: a JSON file that is not search results, an "
        "evaluation or the record of vectors or of an index"
    )


def _describe_vectors_record(path: Path, record: dict) -> dict:
    """The record beside a vectors ``.npy``: the vectors' summary when they
    are there, else what the record says."""
    vectors_path = path.with_suffix(".npy")
    summary = {"file": str(path), "kind": "vectors record", "vectors_file": None}
    if vectors_path.is_file():
        vectors = _describe_npy(vectors_path)
        summary["vectors_file"] = str(vectors_path)
        return summary | {k: v for k, v in vectors.items() if k not in summary}
    if isinstance(record.get("shape"), list):
        summary["shape"] = record["shape"]
    for field in _VECTOR_RECORD_FIELDS:
        if field in record:
            summary[field] = record[field]
    return summary


def _describe_names(path: Path) -> dict:
    """The ``.names.txt`` beside a vectors ``.npy``: one image name a line."""
    names = names_from_lines(path.read_bytes())
    vectors_path = path.with_name(path.name[: -len(NAMES_SUFFIX)] + ".npy")
    summary = {
        "file": str(path),
        "kind": "vector names",
        "n_names": len(names),
        "n_distinct": len(set(names)),
        "vectors_file": str(vectors_path) if vectors_path.is_file() else None,
    }
    if vectors_path.is_file():
        array = read_numpy_file(vectors_path, "vlad vectors file", mmap=True)
        if isinstance(array, np.ndarray) and array.ndim == 2:
            summary["n_vectors"] = int(array.shape[0])
    return summary


def _describe_evaluation(path: Path, document: dict) -> dict:
    """An evaluation written by ``vlad evaluate --json``: what was scored and
    the means."""
    per_query = document.get("per_query")
    return {
        "file": str(path),
        "kind": "evaluation",
        "results": document.get("results"),
        "ground_truth": document.get("ground_truth"),
        "ground_truth_kind": document.get("ground_truth_kind"),
        "n_queries": len(per_query) if isinstance(per_query, dict) else None,
        "mean": document.get("mean"),
        "tags": sorted(document.get("by_tag") or {}),
        "notes": document.get("notes", []),
    }


def _describe_image(path: Path) -> dict:
    """An image (a picture of matches, a thumbnail): its format and size, read
    from its header, never decoded."""
    with open(path, "rb") as handle:
        start = handle.read(_IMAGE_HEADER_BYTES)
    try:
        header = read_header(start)
    except ValueError as error:
        raise VladError(f"{path} is not a vlad file: {error}") from None
    return {
        "file": str(path),
        "kind": "image",
        "format": header.format,
        "width": header.width,
        "height": header.height,
        "n_bytes": path.stat().st_size,
    }


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
        "found_nothing": [query for query, names in rankings.items() if not names],
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
    arrays, record = read_record_archive(path, kind, ("offsets", "names"))
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
        "empty": _empty_names(arrays["names"].tolist(), lengths),
        "descriptor": record.get("descriptor", {}),
    }


def _empty_names(names, lengths: np.ndarray) -> list[str]:
    """The names of the images without descriptors (``lengths`` 0)."""
    if not isinstance(names, list) or len(names) != len(lengths):
        raise VladError("descriptor sets whose names do not match their images")
    pairs = zip(names, lengths, strict=True)
    return [str(name) for name, length in pairs if not length]


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
        "empty": _empty_names(shards.names, lengths),
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
        "empty": _empty_names(features.names, lengths),
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
