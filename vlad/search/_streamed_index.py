"""An index built from a folder of vector shards a shard at a time.

:func:`vlad.search.build_index` takes every vector in memory at once. A
folder of shards (``vlad encode -o FOLDER``) can be indexed without that:
an exact index's ``vectors.npy`` is written a shard at a time, and a faiss
index is trained on a uniform sample of the vectors and filled a shard at a
time, so memory holds one shard, the sample and what faiss keeps (its
compressed codes). Whitening and database-side augmentation need every
vector at once, so they are built in memory (:func:`vlad.search.build_index`).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np

from vlad.core._files import read_numpy_file
from vlad.core._validation import check_finite, check_positive_int
from vlad.core._writing import REPLACE_HINT
from vlad.formats._shards import open_shards, shard_names
from vlad.search._exact import ExactStore
from vlad.search._faiss_store import FaissStore
from vlad.search._index import VectorIndex, load_index
from vlad.search._whitening import nonzero_rows

__all__ = ["TRAINING_ROWS", "index_shards"]

#: Vectors a faiss index is trained on at most (a uniform sample).
TRAINING_ROWS = 50_000


class _WrittenStore(ExactStore):
    """An exact store whose vectors are already written to ``file``: saving
    moves the file into the index folder instead of writing it again."""

    def __init__(self, vectors: np.ndarray, file: Path):
        super().__init__(vectors)
        self.file = file

    def save(self, path) -> None:
        os.replace(self.file, path)


def index_shards(
    folder: str | os.PathLike,
    output: str | os.PathLike,
    *,
    factory: str | None = None,
    parameters: str | None = None,
    training_rows: int = TRAINING_ROWS,
    seed: int = 0,
    source: dict | None = None,
    overwrite: bool = False,
) -> VectorIndex:
    """Index the vectors of a folder of shards, reading one shard at a time.

    Parameters
    ----------
    folder : path-like
        A folder of shards written by ``vlad encode -o FOLDER``.
    output : path-like
        The index folder to write (as :meth:`VectorIndex.save`).
    factory, parameters, source
        As in :func:`vlad.search.build_index`.
    training_rows : int, default=TRAINING_ROWS
        A faiss index is trained on a uniform sample of this many vectors
        with descriptors (all when fewer), drawn with ``seed``.
    seed : int, default=0
        Seed of the draw of the training sample: the same seed, the same
        index. Unused without ``factory`` (an exact index is not trained).
    overwrite : bool, default=False
        Replace an index folder that exists.

    Returns
    -------
    VectorIndex
        The index written, loaded with its exact vectors memory-mapped.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> import vlad
    >>> from vlad.pipeline import encode_images_to_folder
    >>> from vlad.search import index_shards
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> quick = {"max_side": 256}  # small images, to be quick
    >>> codebook, _ = vlad.fit_codebook_to_images(
    ...     "data", 4, descriptor_options=quick, n_jobs=1
    ... )
    >>> _ = encode_images_to_folder("data", codebook, root / "v", shard_images=3)
    >>> index = index_shards(root / "v", root / "index")
    >>> whole = vlad.search.build_index(*vlad.load_vectors(root / "v")[:2])
    >>> index.search(np.asarray(index.store.vectors[:2]), 3)[1].names == (
    ...     whole.search(np.asarray(whole.store.vectors[:2]), 3)[1].names
    ... )
    True
    """
    folder, output = Path(folder), Path(output)
    training_rows = check_positive_int(training_rows, "training_rows")
    if output.exists() and not overwrite:
        raise FileExistsError(f"{output} exists; {REPLACE_HINT}")
    shards = open_shards(folder)
    n_dimensions = shards.shape[1]
    rows, start = [], 0
    for block in _blocks(folder, shards.record):
        check_finite(block, "vectors")
        rows.append(start + np.flatnonzero(nonzero_rows(block)))
        start += len(block)
    rows = np.concatenate(rows) if rows else np.zeros(0, np.int64)
    output.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(
        prefix=f".{output.name}.", dir=output.parent
    ) as work:
        if factory is None:
            store = _write_exact(folder, shards.record, rows, n_dimensions, Path(work))
        else:
            store = _fill_faiss(
                folder, shards.record, rows, factory, parameters, training_rows, seed
            )
        index = VectorIndex(store, shards.names, rows, n_dimensions, source=source)
        index.save(output, overwrite=overwrite)
    return load_index(output, mmap=True)


def _blocks(folder: Path, manifest: dict):
    """Each shard's vectors, read (not mapped) one at a time, so that only one
    is ever resident."""
    for index, entry in enumerate(manifest["shards"]):
        path = folder / shard_names(index, str(entry["key"]))[0]
        yield read_numpy_file(path, "vectors shard")


def _stored_blocks(folder: Path, manifest: dict, rows: np.ndarray):
    """The rows with descriptors of each shard, in order."""
    start = 0
    for block in _blocks(folder, manifest):
        kept = rows[(rows >= start) & (rows < start + len(block))] - start
        yield block[kept]
        start += len(block)


def _write_exact(
    folder: Path, manifest: dict, rows: np.ndarray, n_dimensions: int, work: Path
) -> ExactStore:
    """Write the stored vectors to ``work/vectors.npy`` a shard at a time."""
    path = work / "vectors.npy"
    header = {
        "descr": np.lib.format.dtype_to_descr(np.dtype(np.float32)),
        "fortran_order": False,
        "shape": (len(rows), n_dimensions),
    }
    with open(path, "wb") as handle:
        np.lib.format.write_array_header_1_0(handle, header)
        for block in _stored_blocks(folder, manifest, rows):
            handle.write(np.ascontiguousarray(block, np.float32).tobytes())
    return _WrittenStore(np.load(path, mmap_mode="r", allow_pickle=False), path)


def _fill_faiss(
    folder: Path,
    manifest: dict,
    rows: np.ndarray,
    factory: str,
    parameters: str | None,
    training_rows: int,
    seed: int,
) -> FaissStore:
    """Train on a uniform sample of the stored vectors, then add them all a
    shard at a time."""
    rng = np.random.default_rng(seed)
    n_training = min(training_rows, len(rows))
    chosen = np.sort(rng.choice(len(rows), n_training, replace=False))
    sample, seen = [], 0
    for block in _stored_blocks(folder, manifest, rows):
        picked = chosen[(chosen >= seen) & (chosen < seen + len(block))] - seen
        sample.append(block[picked])
        seen += len(block)
    store = FaissStore.build(np.concatenate(sample), factory, parameters)
    store.index.reset()  # trained; the vectors are added in order below
    for block in _stored_blocks(folder, manifest, rows):
        store.add(block)
    return store
