"""Folders of vector shards: vectors written as they are made, committed at once.

A folder of shards holds::

    part-00000-KEY.npy   (n_rows, n_dimensions) float32 vectors of some images
    part-00000-KEY.json  their names, the images skipped or empty, and the key
    ...
    manifest.json        written last: the shards, their row counts and keys,
                         the codebook's fingerprint and the options of the run

Each shard covers a fixed number of the images found (its rows are the
readable ones among them) and is written atomically, its ``.json`` after its
``.npy``: a shard with its ``.json`` is complete. The manifest is written
only when every shard is, and readers read nothing without it, so an
interrupted run is never read. A shard's key is a hash of what made it (the
codebook's fingerprint, the options, its images' names, sizes and
modification times; its first 16 hex digits, KEY, name its files): a run
with other settings writes files of other names, so a reader following a
manifest never opens another run's (it fails if a replacing run has removed
them), a reader checks each shard's recorded key and shape, and a resumed
run keeps exactly the shards that the same run would write again, whole and
unchanged: a shard's record holds a checksum of its arrays and of the rest
of its record (names, counts), and a shard whose files no longer match it,
or whose record has none (written by vlad 0.4), is made again. Names
are JSON strings (see :mod:`vlad.formats._names`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np

from vlad.core._files import atomic_write, atomic_writes, read_numpy_file
from vlad.core._writing import REPLACE_HINT, remove_stale_temporaries_in
from vlad.errors import VladError
from vlad.formats._names import names_from_json

__all__ = [
    "MANIFEST_NAME",
    "ShardWriter",
    "ShardedVectors",
    "extra_name",
    "has_shards",
    "is_shard_folder",
    "open_shards",
    "read_json_object",
    "shard_key",
    "shard_names",
    "write_shard",
]

MANIFEST_NAME = "manifest.json"
# A shard's main array and record, and its extra arrays (``.keypoints.npy``).
_SHARD_FILE = re.compile(r"part-\d{5}-[0-9a-f]{16}(\.[a-z]+)?\.(npy|json)")


def shard_key(run: dict, items: list) -> str:
    """A hash of what makes a shard: the run's settings and its items (JSON).

    Examples
    --------
    >>> key = shard_key({"shard_images": 2}, [["a.jpg", 10, 0]])
    >>> len(key), key == shard_key({"shard_images": 2}, [["a.jpg", 10, 1]])
    (64, False)
    """
    text = json.dumps({"run": run, "images": items}, sort_keys=True)
    return hashlib.sha256(text.encode(errors="surrogateescape")).hexdigest()


def shard_names(index: int, key: str) -> tuple[str, str]:
    """The vectors and record file names of shard ``index`` made with ``key``.

    The key is in the names, so that a run with other settings never writes
    files of the same name: a reader of one run never opens another's.

    Examples
    --------
    >>> shard_names(3, "0123456789abcdef" * 4)
    ('part-00003-0123456789abcdef.npy', 'part-00003-0123456789abcdef.json')
    """
    stem = f"part-{index:05d}-{key[:16]}"
    return f"{stem}.npy", f"{stem}.json"


def is_shard_folder(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a folder (a folder of shards, complete or not)."""
    return Path(path).is_dir()


def has_shards(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a folder that holds a manifest or shards (of a
    complete run or not)."""
    path = Path(path)
    if not path.is_dir():
        return False
    if (path / MANIFEST_NAME).is_file():
        return True
    return any(_SHARD_FILE.fullmatch(entry.name) for entry in os.scandir(path))


@dataclasses.dataclass(frozen=True)
class ShardedVectors:
    """The vectors of a folder of shards, mapped read-only, one block per shard.

    Behaves as a read-only ``(n_images, n_dimensions)`` array for ``shape``,
    ``dtype``, ``len`` and ``np.asarray`` (which concatenates the blocks:
    only then are all rows in memory).

    Attributes
    ----------
    blocks : tuple of ndarray of shape (n_rows, n_dimensions)
        Each shard's vectors, memory-mapped.
    names : list of str
        The image of each row, in row order.
    record : dict
        The manifest.
    """

    blocks: tuple[np.ndarray, ...]
    names: list[str]
    record: dict

    @property
    def shape(self) -> tuple[int, int]:
        """``(n_images, n_dimensions)``."""
        return len(self.names), int(self.record["shape"][1])

    @property
    def dtype(self) -> np.dtype:
        """float32."""
        return np.dtype(np.float32)

    @property
    def ndim(self) -> int:
        """2."""
        return 2

    @property
    def n_shards(self) -> int:
        """Shards of the folder."""
        return len(self.blocks)

    def __len__(self) -> int:
        return len(self.names)

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        vectors = np.concatenate(self.blocks) if self.blocks else np.zeros(self.shape)
        return vectors.astype(dtype or np.float32, copy=False)


def open_shards(folder: str | os.PathLike) -> ShardedVectors:
    """Open a complete folder of shards, checking that its parts belong together.

    Parameters
    ----------
    folder : path-like
        A folder of vector shards written by ``vlad encode -o FOLDER`` and
        complete (with its ``manifest.json``).

    Returns
    -------
    ShardedVectors
        Every shard's vectors, memory-mapped, with the images' names and the
        manifest.

    Raises
    ------
    FileNotFoundError
        No such folder.
    ValueError
        No manifest (the run that writes it was interrupted or is still
        running), or shards that are missing, of another shape or of another
        run than the manifest's.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"no such folder of vectors: {folder}")
    manifest_path = folder / MANIFEST_NAME
    if not manifest_path.is_file() and not any(
        _SHARD_FILE.fullmatch(name) for name in os.listdir(folder)
    ):
        raise VladError(
            f"{folder} is not a folder of vectors: it has no {MANIFEST_NAME} and no "
            "shards"
        )
    if not manifest_path.is_file():
        raise VladError(
            f"{folder} is not a complete folder of vectors: it has no {MANIFEST_NAME} "
            "(the run writing it was interrupted or is still running; resume it "
            "with resume=True or --resume)"
        )
    manifest = read_json_object(manifest_path)
    try:
        n_dimensions = int(manifest["shape"][1])
        entries = [(entry["key"], int(entry["n_rows"])) for entry in manifest["shards"]]
    except (KeyError, TypeError, IndexError, ValueError):
        raise VladError(f"{manifest_path} is not a manifest of vector shards") from None
    blocks, names = [], []
    for index, (key, n_rows) in enumerate(entries):
        vectors_name, record_name = shard_names(index, str(key))
        record = read_json_object(folder / record_name)
        if record.get("key") != key:
            raise VladError(
                f"{folder / record_name} belongs to another run than {manifest_path} "
                "(the folder is being replaced, or was altered)"
            )
        shard_names_ = names_from_json(record.get("names"), str(folder / record_name))
        vectors = read_numpy_file(folder / vectors_name, "vectors shard", mmap=True)
        expected = (n_rows, n_dimensions)
        if (
            not isinstance(vectors, np.ndarray)
            or vectors.shape != expected
            or vectors.dtype != np.float32
            or len(shard_names_) != n_rows
        ):
            raise VladError(
                f"{folder / vectors_name} is not the shard {manifest_path} names: "
                f"expected {n_rows} names and float32 vectors of shape {expected}"
            )
        blocks.append(vectors)
        names.extend(shard_names_)
    return ShardedVectors(tuple(blocks), names, manifest)


class ShardWriter:
    """Write the shards of a folder, then its manifest.

    Parameters
    ----------
    folder : path-like
        Created (its parent must exist).
    overwrite : bool, default=False
        Replace a folder of shards that exists: its manifest is removed first
        (so it is never read again), then its shards.
    resume : bool, default=False
        Keep the shards of an interrupted run (:meth:`finished` says which).
    kind : str, default="vector"
        What the shards hold, for messages (``"descriptor"``).

    Raises
    ------
    FileExistsError
        The folder exists and neither ``overwrite`` nor ``resume`` is given.
    ValueError
        With ``overwrite`` or ``resume``, a folder that holds other files than
        shards (it is never emptied).
    """

    def __init__(
        self,
        folder: str | os.PathLike,
        *,
        overwrite: bool = False,
        resume: bool = False,
        kind: str = "vector",
    ):
        self.folder = Path(folder)
        if not (overwrite or resume):
            try:
                os.mkdir(self.folder)
            except FileExistsError:
                raise FileExistsError(
                    f"{self.folder} exists; {REPLACE_HINT} or resume=True "
                    "(--resume) to finish it"
                ) from None
            return
        self.folder.mkdir(exist_ok=True)
        # What a killed run left in the instant between link and rename.
        remove_stale_temporaries_in(self.folder)
        others = sorted(
            entry.name
            for entry in os.scandir(self.folder)
            if entry.name != MANIFEST_NAME and not _SHARD_FILE.fullmatch(entry.name)
        )
        if others:
            raise VladError(
                f"{self.folder} is not a folder of {kind} shards: it holds "
                f"{others[0]!r}; give a new folder"
            )
        if overwrite and not resume:
            (self.folder / MANIFEST_NAME).unlink(missing_ok=True)
            for entry in sorted(os.listdir(self.folder)):
                (self.folder / entry).unlink(missing_ok=True)

    def finished(
        self,
        index: int,
        key: str,
        n_dimensions: int,
        *,
        n_rows: Callable[[dict], int] | None = None,
        extras: Mapping[str, int] | None = None,
    ) -> dict | None:
        """The record of shard ``index`` if it is complete and was made with
        ``key``; None if it must be (re)written.

        ``n_rows(record)`` is the number of rows the record says its arrays
        have (default: one per name); ``extras`` maps the name of each extra
        array (see :meth:`write`) to its number of columns. The record's
        checksum must match the arrays and the rest of the record: a shard
        changed since it was written, or one without a checksum, is made
        again.
        """
        vectors_name, record_name = shard_names(index, key)
        try:
            record = json.loads((self.folder / record_name).read_bytes())
            if not isinstance(record, dict) or not isinstance(
                record.get("names"), list
            ):
                return None
            rows = len(record["names"]) if n_rows is None else n_rows(record)
            shapes = {vectors_name: (rows, n_dimensions)}
            for name, n_columns in (extras or {}).items():
                shapes[extra_name(vectors_name, name)] = (rows, n_columns)
            arrays = {}
            for name, shape in shapes.items():
                array = read_numpy_file(self.folder / name, "shard", mmap=True)
                if (
                    not isinstance(array, np.ndarray)
                    or array.dtype != np.float32
                    or array.shape != shape
                ):
                    return None
                arrays[name] = array
            if record.get("key") != key or record.get("checksum") != _shard_checksum(
                arrays, record
            ):
                return None
        except (OSError, ValueError, TypeError, KeyError, RecursionError):
            return None
        return record

    def write(
        self,
        index: int,
        vectors: np.ndarray,
        record: dict,
        *,
        extras: Mapping[str, np.ndarray] | None = None,
    ) -> None:
        """:func:`write_shard` into this folder."""
        write_shard(self.folder, index, vectors, record, extras=extras)

    def commit(self, manifest: dict) -> None:
        """Write the manifest, last: the folder is complete.

        Shards beyond those ``manifest["shards"]`` lists (left by a run with
        larger shards, resumed with smaller ones) are removed first.
        """
        kept = {
            shard_names(index, entry["key"])[0][: -len(".npy")]
            for index, entry in enumerate(manifest["shards"])
        }
        for name in sorted(os.listdir(self.folder)):
            if _SHARD_FILE.fullmatch(name) and name.split(".")[0] not in kept:
                (self.folder / name).unlink(missing_ok=True)
        with atomic_write(self.folder / MANIFEST_NAME, overwrite=True) as handle:
            handle.write((json.dumps(manifest, indent=2) + "\n").encode())


def write_shard(
    folder: str | os.PathLike,
    index: int,
    vectors: np.ndarray,
    record: dict,
    *,
    extras: Mapping[str, np.ndarray] | None = None,
) -> None:
    """Write shard ``index`` of ``folder`` atomically: its vectors (and
    ``extras``, each to ``part-INDEX-KEY.NAME.npy``), then its record
    (``record["names"]`` names the images; ``record["key"]`` what made them),
    with one more field, ``"checksum"``: of the arrays and the rest of the
    record. Arrays are written as float32. Writing the same shard again, from
    any process, rewrites the same files."""
    folder = Path(folder)
    vectors_name, record_name = shard_names(index, record["key"])
    arrays = {vectors_name: vectors} | {
        extra_name(vectors_name, name): array for name, array in (extras or {}).items()
    }
    arrays = {
        name: np.ascontiguousarray(array, dtype=np.float32)
        for name, array in arrays.items()
    }
    paths = [folder / name for name in arrays] + [folder / record_name]
    record = {**record, "checksum": _shard_checksum(arrays, record)}
    record_text = json.dumps(record).encode()
    # The writer removed stale temporary files once, for every shard.
    with atomic_writes(*paths, overwrite=True, remove_stale=False) as files:
        for file, array in zip(files, arrays.values(), strict=False):
            np.save(file, array)
        files[-1].write(record_text)


def _shard_checksum(arrays: Mapping[str, np.ndarray], record: dict) -> str:
    """``"sha256:HEX"`` of a shard's arrays (by file name, their bytes in row
    order) and of its record less its checksum (as sorted JSON)."""
    digest = hashlib.sha256()
    for name in sorted(arrays):
        digest.update(name.encode())
        digest.update(np.ascontiguousarray(arrays[name]).reshape(-1).view(np.uint8))
    others = {field: value for field, value in record.items() if field != "checksum"}
    digest.update(json.dumps(others, sort_keys=True).encode())
    return "sha256:" + digest.hexdigest()


def extra_name(vectors_name: str, name: str) -> str:
    """The file of the extra array ``name`` of the shard whose vectors are in
    ``vectors_name``."""
    return f"{vectors_name[: -len('.npy')]}.{name}.npy"


def read_json_object(path: str | os.PathLike, kind: str = "vectors") -> dict:
    """A JSON object from ``path``, a file of a folder of ``kind``.

    Raises
    ------
    ValueError
        The file is missing, is not JSON or holds no object (one line).
    """
    path = Path(path)
    try:
        record = json.loads(path.read_bytes())
    except FileNotFoundError:
        raise VladError(f"{path} is missing from its folder of {kind}") from None
    except (ValueError, RecursionError) as error:
        raise VladError(f"{path} is not readable JSON ({error})") from None
    if not isinstance(record, dict):
        raise VladError(f"{path} holds a JSON {type(record).__name__}, not an object")
    return record
