"""An index of VLAD vectors and their image names, searched by inner product.

Images without descriptors (all-zero vectors) are named in the index but never
stored, so they are never returned as matches; queries without descriptors
find nothing, with the reason in their result.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from numpy.typing import ArrayLike

from vlad._version import __version__
from vlad.core._files import check_format_version, read_numpy_file
from vlad.core._parameters import FACTORY, SEARCH_PARAMETERS, K
from vlad.core._validation import as_float_matrix, check_finite, checked_names
from vlad.errors import DamagedIndexError, VladError
from vlad.formats._folders import replace_folder
from vlad.search._exact import ExactStore
from vlad.search._expansion import QueryExpansion, augment_database, search_expanded
from vlad.search._faiss_store import FaissStore
from vlad.search._index_folders import (
    RECORD_NAME,
    check_checksums,
    check_finite_member,
    folder_member,
    read_folder_json,
    write_record,
)
from vlad.search._results import (
    SearchResults,
    empty_result,
    results_from_arrays,
)
from vlad.search._whitening import PCAWhitening, fit_whitening, nonzero_rows

__all__ = ["VectorIndex", "build_index", "load_index"]

FORMAT = "vlad index"
FORMAT_VERSION = 1
NO_DESCRIPTORS = "no descriptors: the query's vector is all zero, so it matches nothing"
FEWER_FOUND = (
    "the approximate index returned fewer images than asked; search more of it "
    "(nprobe, efSearch)"
)


class VectorIndex:
    """Database vectors with their names, optionally whitened or compressed.

    Build one with :func:`build_index` (or :meth:`build`), read one with
    :func:`load_index`.

    Parameters
    ----------
    store : ExactStore or FaissStore
        The searchable vectors (after whitening), one per image with
        descriptors.
    names : sequence of str
        Every image's name, including those without descriptors.
    rows : ndarray of int64 of shape (len(store),)
        The image (position in ``names``) of each stored vector, increasing.
    n_features : int
        Dimension of the vectors the index takes (before whitening).
    whitening : PCAWhitening, optional
        Applied to every vector added and every query.
    source : dict, optional
        How the vectors were made (codebook fingerprint, encoding settings),
        JSON-serialisable; queries encoded from images must match it.
    augmentation : QueryExpansion, optional
        The database-side augmentation the stored vectors were built with
        (recorded; :meth:`add` does not apply it).
    """

    def __init__(
        self,
        store: ExactStore | FaissStore,
        names: Sequence[str],
        rows: np.ndarray,
        n_features: int,
        *,
        whitening: PCAWhitening | None = None,
        source: dict | None = None,
        augmentation: QueryExpansion | None = None,
    ):
        self.store = store
        self.names = list(names)
        self.rows = np.asarray(rows, dtype=np.int64)
        self.n_features = n_features
        self.whitening = whitening
        self.source = dict(source or {})
        self.augmentation = augmentation
        # The names as an object array, for one gather per search; add()
        # renews it.
        self._name_array: np.ndarray | None = None

    @classmethod
    def build(
        cls,
        vectors: ArrayLike,
        names: Sequence[str] | None = None,
        *,
        factory: str | None = FACTORY.default,
        parameters: str | None = SEARCH_PARAMETERS.default,
        whitening: PCAWhitening | None = None,
        augmentation: QueryExpansion | None = None,
        source: dict | None = None,
    ) -> VectorIndex:
        """Index ``vectors`` (see :func:`build_index`, which also learns the
        whitening).

        Parameters
        ----------
        vectors : array-like of shape (n_images, n_features)
            L2-normalised VLAD vectors.
        names : sequence of str, optional
            One per row; default ``"0"``, ``"1"``, ...
        factory : str, optional
            A faiss ``index_factory`` string; default exact search.
        parameters : str, optional
            faiss search parameters (``"nprobe=16"``), only with ``factory``.
        whitening : PCAWhitening, optional
            Applied to ``vectors`` before they are stored, and to every query.
        augmentation : QueryExpansion, optional
            Database-side augmentation with this many neighbours and weighting.
        source : dict, optional
            How the vectors were made, kept in the index.
        """
        vectors = _checked_vectors(vectors, "vectors", None)
        names = checked_names(names, vectors.shape[0], "vectors")
        n_features = vectors.shape[1]
        if whitening is not None and whitening.n_features != n_features:
            raise VladError(
                f"the whitening takes {whitening.n_features} dimensions; the "
                f"vectors have {n_features}"
            )
        has_vector = nonzero_rows(vectors)
        stored = _transformed(vectors[has_vector], whitening)
        if augmentation is not None and stored.shape[0] > 1:
            exact = ExactStore(stored)
            stored = augment_database(stored, augmentation, search=exact.search)
        factory = FACTORY.check(factory)
        parameters = SEARCH_PARAMETERS.check(parameters)
        if factory is None:
            store = ExactStore.build(stored, parameters)
        else:
            store = FaissStore.build(stored, factory, parameters)
        return cls(
            store,
            names,
            np.flatnonzero(has_vector),
            n_features,
            whitening=whitening,
            source=source,
            augmentation=augmentation,
        )

    @property
    def n_images(self) -> int:
        """Images named in the index, with descriptors or not."""
        return len(self.names)

    @property
    def n_empty(self) -> int:
        """Images without descriptors: named, never matched."""
        return self.n_images - len(self.store)

    @property
    def dimension(self) -> int:
        """Dimension of the stored vectors (after whitening)."""
        return self.store.dimension

    @property
    def bytes_per_image(self) -> int:
        """Bytes of one stored vector's code (4 per dimension when exact)."""
        return self.store.bytes_per_vector

    @property
    def factory(self) -> str | None:
        """The faiss ``index_factory`` string, or None for exact search."""
        return self.store.factory

    def __len__(self) -> int:
        return self.n_images

    def __repr__(self) -> str:
        kind = "exact" if self.factory is None else repr(self.factory)
        return (
            f"VectorIndex(n_images={self.n_images}, n_empty={self.n_empty}, "
            f"dimension={self.dimension}, search={kind}, "
            f"bytes_per_image={self.bytes_per_image})"
        )

    def add(self, vectors: ArrayLike, names: Sequence[str] | None = None) -> None:
        """Append images (whitened and compressed as the index was built).

        Database-side augmentation, if the index was built with it, is not
        applied to added vectors.

        Parameters
        ----------
        vectors : array-like of shape (n_images, n_features)
            The new images' vectors.
        names : sequence of str, optional
            One per row; default their places in the index, counted on
            from :attr:`n_images` (as strings).
        """
        vectors = _checked_vectors(vectors, "vectors", self.n_features)
        names = checked_names(names, vectors.shape[0], "vectors", self.n_images)
        has_vector = nonzero_rows(vectors)
        self.store.add(_transformed(vectors[has_vector], self.whitening))
        self.rows = np.concatenate(
            [self.rows, self.n_images + np.flatnonzero(has_vector)]
        )
        self.names.extend(names)
        self._name_array = None

    def search(
        self,
        queries: ArrayLike,
        k: int = K.default,
        *,
        query_names: Sequence[str] | None = None,
        expansion: QueryExpansion | None = None,
    ) -> SearchResults:
        """The ``k`` best images of each query.

        Parameters
        ----------
        queries : array-like of shape (n_queries, n_features)
            VLAD vectors made as the index's were.
        k : int, default=10
            Images per query; at most as many as the index holds with
            descriptors (a note in the results says when fewer).
        query_names : sequence of str, optional
            Default ``"0"``, ``"1"``, ...
        expansion : QueryExpansion, optional
            Search again with each query expanded by its first results.

        Returns
        -------
        SearchResults

        Raises
        ------
        ValueError
            Queries of another dimension, NaN or infinite values, ``k`` < 1.
        """
        queries = _checked_vectors(queries, "queries", self.n_features)
        query_names = checked_names(query_names, queries.shape[0], "queries")
        k = K.check(k)
        has_vector = nonzero_rows(queries)
        stored = len(self.store)
        notes = []
        if k > stored:
            notes.append(
                f"k={k} but the index holds {stored} images with descriptors"
                + (f" (and {self.n_empty} without)" if self.n_empty else "")
                + f": each query gets at most {stored}"
            )
        record = {"k": k, "index": self.record()}
        if expansion is not None:
            record["query_expansion"] = expansion.record()
        if stored == 0:
            reason = "the index holds no image with descriptors"
            results = [empty_result(name, reason) for name in query_names]
            return SearchResults(results, record, notes)
        transformed = _transformed(queries[has_vector], self.whitening)
        scores, positions = self.store.search(transformed, min(k, stored))
        if expansion is not None:
            scores, positions = search_expanded(
                self.store, transformed, scores, positions, expansion
            )
        rows = np.where(positions >= 0, self.rows[np.maximum(positions, 0)], -1)
        searched = list(itertools.compress(query_names, has_vector))
        if self._name_array is None or len(self._name_array) != len(self.names):
            self._name_array = np.array(self.names, dtype=object)
        found = iter(results_from_arrays(searched, self._name_array, scores, rows))
        results = []
        for name, has in zip(query_names, has_vector, strict=True):
            result = next(found) if has else empty_result(name, NO_DESCRIPTORS)
            if has and len(result.names) < min(k, stored):
                result = dataclasses.replace(result, reason=FEWER_FOUND)
            results.append(result)
        return SearchResults(results, record, notes)

    def record(self) -> dict:
        """JSON description of the index."""
        return {
            "n_images": self.n_images,
            "n_empty": self.n_empty,
            "n_features": self.n_features,
            "dimension": self.dimension,
            "factory": self.factory,
            "parameters": self.store.parameters,
            "bytes_per_image": self.bytes_per_image,
            "whitening": None if self.whitening is None else self.whitening.record(),
            "augmentation": (
                None if self.augmentation is None else self.augmentation.record()
            ),
        }

    def save(self, path: str | os.PathLike, *, overwrite: bool = False) -> None:
        """Write to a folder, atomically: all of it or none of it.

        The folder holds ``index.json`` (the record, with the SHA-256 of
        each other file), ``names.json``, ``rows.npy``, ``vectors.npy``
        (exact) or ``vectors.faiss`` (faiss's own format) and, when
        whitened, ``whitening.npz``.

        Parameters
        ----------
        path : str or os.PathLike
            The folder to write.
        overwrite : bool, default=False
            Replace an existing folder.

        Raises
        ------
        FileExistsError
            ``path`` exists and ``overwrite`` is False.
        """
        record = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "vlad_version": __version__,
            **self.record(),
            "source": self.source,
        }
        with replace_folder(path, overwrite=overwrite) as folder:
            (folder / "names.json").write_text(json.dumps(self.names))
            np.save(folder / "rows.npy", self.rows)
            self.store.save(folder / f"vectors{self.store.suffix}")
            if self.whitening is not None:
                self.whitening.save(folder / "whitening.npz")
            write_record(folder, record)


def build_index(
    vectors: ArrayLike,
    names: Sequence[str] | None = None,
    *,
    pca: int | None = None,
    whiten: float | None = None,
    factory: str | None = FACTORY.default,
    parameters: str | None = SEARCH_PARAMETERS.default,
    augmentation: QueryExpansion | None = None,
    source: dict | None = None,
) -> VectorIndex:
    """Index VLAD vectors for search, optionally whitened and compressed.

    Parameters
    ----------
    vectors : array-like of shape (n_images, n_features)
        L2-normalised VLAD vectors; all-zero rows (images without
        descriptors) are named but never matched.
    names : sequence of str, optional
        One per row; default ``"0"``, ``"1"``, ...
    pca : int, optional
        Learn a PCA-whitening to this many dimensions on ``vectors`` (see
        :func:`vlad.search.fit_whitening`).
    whiten : float, optional
        Whitening power with ``pca`` (default 1.0: full whitening); without
        ``pca``, whitening keeps every dimension the vectors span.
    factory : str, optional
        A faiss ``index_factory`` string (``"IVF256,PQ32"``, ``"HNSW32"``)
        for approximate or compressed search, trained on ``vectors``;
        default exact search.
    parameters : str, optional
        faiss search parameters (``"nprobe=16"``), only with ``factory``.
    augmentation : QueryExpansion, optional
        Database-side augmentation with this many neighbours and weighting.
    source : dict, optional
        How the vectors were made, kept in the index.

    Returns
    -------
    VectorIndex

    Examples
    --------
    >>> import numpy as np
    >>> from vlad.search import build_index
    >>> vectors = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]])
    >>> index = build_index(vectors, ["a.jpg", "b.jpg", "blank.jpg"])
    >>> index
    VectorIndex(n_images=3, n_empty=1, dimension=2, search=exact, bytes_per_image=8)
    >>> result = index.search([[0.9, 0.1]], k=5)[0]
    >>> result.names
    ('a.jpg', 'b.jpg')
    """
    whitening = None
    if pca is not None or whiten is not None:
        whitening = fit_whitening(vectors, pca, power=1.0 if whiten is None else whiten)
    return VectorIndex.build(
        vectors,
        names,
        factory=factory,
        parameters=parameters,
        whitening=whitening,
        augmentation=augmentation,
        source=source,
    )


def load_index(
    path: str | os.PathLike, *, mmap: bool = False, parameters: str | None = None
) -> VectorIndex:
    """Read an index folder written by :meth:`VectorIndex.save`.

    Every file is checked against the record: its SHA-256 (recorded since
    vlad 0.5), and what it holds (shapes, dtypes, finite vectors), which
    reads each file once more, mapped ones included.

    Parameters
    ----------
    path : path-like
    mmap : bool, default=False
        Map an exact index's vectors read-only instead of reading them.
    parameters : str, optional
        faiss search parameters replacing those it was saved with (refused
        for an exact index).

    Raises
    ------
    FileNotFoundError
        No such folder.
    DamagedIndexError
        A file missing, changed since the index was written, of another shape
        or dtype than the others, or holding NaN or infinite vectors (one
        line naming it).
    ValueError
        Not a vlad index, a file that cannot be read, or an index written by
        a newer vlad.
    """
    folder = Path(path)
    if not folder.is_dir():
        if folder.exists():
            raise VladError(f"{folder} is not a vlad index: it is not a folder")
        raise FileNotFoundError(f"no such index folder: {folder}")
    record = read_folder_json(folder, RECORD_NAME, dict, "vlad index")
    if record.get("format") != FORMAT:
        raise VladError(f"{folder} is not a vlad index: index.json does not say so")
    check_format_version(folder, record, FORMAT, FORMAT_VERSION)
    factory = record.get("factory")
    vectors_name = "vectors.npy" if factory is None else "vectors.faiss"
    members = ["names.json", "rows.npy", vectors_name]
    if record.get("whitening") is not None:
        members.append("whitening.npz")
    # First, so that the message names the file that changed, and no reader
    # (faiss's trusts what it parses) sees bytes the index was not written
    # with.
    check_checksums(folder, record, members, "vlad index")
    names = read_folder_json(folder, "names.json", list, "vlad index")
    if factory is None:
        store = ExactStore.load(
            _member(folder, vectors_name), mmap=mmap, parameters=parameters
        )
        check_finite_member(store.vectors, folder / vectors_name, "vlad index")
    else:
        store = FaissStore.load(
            _member(folder, vectors_name),
            factory,
            parameters or record.get("parameters"),
        )
    whitening = None
    if record.get("whitening") is not None:
        whitening = PCAWhitening.load(_member(folder, "whitening.npz"))
    rows = read_numpy_file(_member(folder, "rows.npy"), "vlad index rows file")
    augmentation = _augmentation(folder, record.get("augmentation"))
    n_features = record.get("n_features")
    consistent = (
        all(isinstance(name, str) for name in names)
        and isinstance(rows, np.ndarray)
        and rows.ndim == 1
        and rows.dtype.kind == "i"
        and rows.shape[0] == len(store)
        and np.all(np.diff(rows) > 0)
        and (rows.size == 0 or (rows[0] >= 0 and rows[-1] < len(names)))
        and isinstance(n_features, int)
        and (whitening is None or whitening.n_features == n_features)
        and store.dimension
        == (n_features if whitening is None else whitening.n_components)
    )
    if not consistent:
        raise DamagedIndexError(f"{folder} is a damaged vlad index: its files disagree")
    source = record.get("source")
    return VectorIndex(
        store,
        names,
        rows,
        n_features,
        whitening=whitening,
        source=source if isinstance(source, dict) else None,
        augmentation=augmentation,
    )


def _member(folder: Path, name: str) -> Path:
    """The path of a file the index folder must hold."""
    return folder_member(folder, name, "vlad index")


def _augmentation(folder: Path, recorded) -> QueryExpansion | None:
    if recorded is None:
        return None
    try:
        return QueryExpansion(recorded["neighbours"], recorded["alpha"])
    except (KeyError, TypeError, ValueError):
        raise DamagedIndexError(
            f"{folder} is a damaged vlad index: augmentation={recorded!r}"
        ) from None


def _checked_vectors(values, name: str, n_features: int | None) -> np.ndarray:
    vectors = as_float_matrix(values, name, dtype=np.float32)
    if n_features is not None and vectors.shape[1] != n_features:
        raise VladError(
            f"{name} have {vectors.shape[1]} dimensions; the index takes {n_features}"
        )
    check_finite(vectors, name)
    return vectors


def _transformed(vectors: np.ndarray, whitening: PCAWhitening | None) -> np.ndarray:
    return vectors if whitening is None else whitening.transform(vectors)
