"""Approximate and compressed vector storage by faiss.

Needs faiss (the ``faiss`` extra).

An index is described by a faiss ``index_factory`` string, as faiss users
write it (``"IVF1024,PQ32"``, ``"OPQ32,IVF1024,PQ32"``, ``"HNSW32"``,
``"PQ16"``), always with the inner-product metric. Product-quantised indexes
(``PQ``) search by asymmetric distance: the query stays exact and only the
database is compressed (Jégou et al. 2011).

faiss trains 8-bit PQ codes for polysemous search by default, which serves
only Hamming-threshold search (the ``ht`` parameter) and took 4 to 13 times
as long as the rest of training: vlad skips it, as faiss's ``np`` suffix
(``"IVF1024,PQ32np"``) does, unless the search parameters set ``ht``.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from vlad._extras import install_command
from vlad.errors import VladError

__all__ = ["FaissStore", "require_faiss"]

logger = logging.getLogger(__name__)

#: Training vectors per centre below which faiss's k-means warns
#: (``ClusteringParameters.min_points_per_centroid``).
POINTS_PER_CENTRE = 39
_TOO_FEW_POINTS = re.compile(r"Number of training points \((\d+)\).*clusters \((\d+)\)")


def require_faiss():
    """The ``faiss`` module, or an ImportError that says how to install it."""
    try:
        import faiss
    except ImportError:
        raise ImportError(
            "approximate and compressed indexes require faiss; install it with: "
            + install_command("faiss")
        ) from None
    return faiss


def _faiss_error(error: Exception, action: str) -> ValueError:
    """faiss's C++ exceptions carry a multi-line trace: keep its message line."""
    lines = [line for line in str(error).splitlines() if line.strip()]
    message = next(
        (line.split("Error: ", 1)[-1] for line in lines if "Error" in line),
        lines[-1] if lines else type(error).__name__,
    )
    return VladError(f"faiss could not {action}: {message.strip()}")


def _training_error(error: Exception, factory: str, n_vectors: int) -> ValueError:
    """faiss's training error, and which number of lists would train."""
    message = str(_faiss_error(error, f"train {factory!r} on {n_vectors} vectors"))
    too_few = _TOO_FEW_POINTS.search(str(error))
    lists = re.search(r"IVF(\d+)", factory)
    if too_few and lists and int(too_few[2]) == int(lists[1]):
        message += f"; {_lists_that_fit(n_vectors)}, IVF{n_vectors} at most"
    return VladError(message)


def _code_bytes(faiss, index) -> int | None:
    """Bytes of one vector's code in ``index``, or None where faiss has none."""
    index = faiss.downcast_index(index)
    if isinstance(index, faiss.IndexIVF):
        # Not sa_code_size(), which adds the bytes of a list number that an
        # inverted list does not store.
        return int(index.code_size)
    if isinstance(index, faiss.IndexRefine):
        codes = [_code_bytes(faiss, index.base_index)]
        codes.append(_code_bytes(faiss, index.refine_index))
        return None if None in codes else sum(codes)
    # A transform before an index (PCA, OPQ) or a graph over a storage (HNSW).
    for attribute in ("index", "storage"):
        nested = getattr(index, attribute, None)
        if nested is not None:
            return _code_bytes(faiss, nested)
    try:
        return int(index.sa_code_size())
    except RuntimeError:
        return None


def _lists_that_fit(n_vectors: int) -> str:
    """The largest ``IVF{2^j}`` whose lists each get faiss's suggested
    number of training vectors (``IVF1`` when none does)."""
    lists = 1 << max(0, (n_vectors // POINTS_PER_CENTRE).bit_length() - 1)
    return f"{n_vectors} vectors fit IVF{lists} ({POINTS_PER_CENTRE} a list)"


def _skip_polysemous_training(faiss, index) -> None:
    """Turn off the polysemous training of the PQ inside ``index``, if any."""
    index = faiss.downcast_index(index)
    if isinstance(index, faiss.IndexPreTransform):
        index = faiss.downcast_index(index.index)
    if isinstance(index, (faiss.IndexIVFPQ, faiss.IndexPQ)):
        index.do_polysemous_training = False


def _kmeans_of(faiss, index, attached: list) -> Iterator[tuple[object, int]]:
    """The ``faiss.ClusteringParameters`` and number of centres of each k-means
    that training ``index`` runs, where faiss lets them be reached: an IVF's
    lists, the codebooks of a product or residual quantiser, and those of the
    product quantiser that an OPQ rotation trains, which it is given (the one
    it would make itself; ``(rotation, quantiser)`` is appended to
    ``attached``, to be taken back after training)."""
    index = faiss.downcast_index(index)
    if isinstance(index, faiss.IndexPreTransform):
        for position in range(index.chain.size()):
            rotation = faiss.downcast_VectorTransform(index.chain.at(position))
            if isinstance(rotation, faiss.OPQMatrix) and rotation.pq is None:
                quantiser = faiss.ProductQuantizer(rotation.d_out, rotation.M, 8)
                rotation.pq = quantiser
                attached.append((rotation, quantiser))
                yield quantiser.cp, quantiser.ksub
        yield from _kmeans_of(faiss, index.index, attached)
        return
    if isinstance(index, faiss.IndexIVF):
        yield index.cp, index.nlist
    quantiser = getattr(index, "pq", None)
    if isinstance(quantiser, faiss.ProductQuantizer):
        yield quantiser.cp, quantiser.ksub
    quantiser = getattr(index, "rq", None)
    if isinstance(quantiser, faiss.ResidualQuantizer):
        yield quantiser.cp, 1 << int(faiss.vector_to_array(quantiser.nbits).max())
    for name in ("storage", "base_index", "refine_index"):
        nested = getattr(index, name, None)
        if isinstance(nested, faiss.Index):
            yield from _kmeans_of(faiss, nested, attached)


@contextlib.contextmanager
def _clustering_warnings_logged(
    faiss, index, factory: str, n_vectors: int
) -> Iterator[None]:
    """Train ``index`` inside: faiss's warnings that a k-means has too few
    training vectors, which its C++ prints on standard error (one per
    clustering: 32 for a ``PQ32``, 50 times as many for an ``OPQ32``), are
    logged as one line instead.

    faiss prints one when a k-means gets fewer than ``min_points_per_centroid``
    vectors a centre, which serves nothing else; it is set to 1 during
    training (fewer is an error, not a warning). Standard error is left
    alone: what faiss prints about a k-means out of reach, and what anything
    else writes, goes there as it always does.
    """
    attached: list = []
    try:
        kmeans = list(_kmeans_of(faiss, index, attached))
        thresholds = [parameters.min_points_per_centroid for parameters, _ in kmeans]
        warned = sorted(
            {
                (centres, centres * threshold)
                for (_, centres), threshold in zip(kmeans, thresholds, strict=True)
                if n_vectors < centres * threshold
            }
        )
        for parameters, _ in kmeans:
            parameters.min_points_per_centroid = 1
        try:
            yield
        finally:
            for (parameters, _), threshold in zip(kmeans, thresholds, strict=True):
                parameters.min_points_per_centroid = threshold
    finally:
        for rotation, _ in attached:
            rotation.pq = None
    if warned:
        suggested = ", ".join(
            f"{needed} for {centres} centres" for centres, needed in warned
        )
        lists = re.search(r"IVF(\d+)", factory)
        advice = ""
        if lists and int(lists[1]) in {centres for centres, _ in warned}:
            advice = f"; {_lists_that_fit(n_vectors)}"
        logger.warning(
            "training %r on %d vectors, fewer than its k-means asks for (faiss "
            "suggests %s); the codes may be coarser%s",
            factory,
            n_vectors,
            suggested,
            advice,
        )


class FaissStore:
    """Vectors kept in a faiss index, searched by inner product.

    Parameters
    ----------
    index : faiss.Index
        A trained index with the inner-product metric.
    factory : str
        The ``index_factory`` string it was built from.
    parameters : str, optional
        Search-time parameters in faiss's ``ParameterSpace`` syntax, such as
        ``"nprobe=16"`` or ``"efSearch=128"``.
    """

    suffix = ".faiss"

    def __init__(self, index, factory: str, parameters: str | None = None):
        self.index = index
        self.factory = factory
        self.parameters = parameters
        if parameters:
            self.set_parameters(parameters)

    @classmethod
    def build(cls, vectors: np.ndarray, factory: str, parameters: str | None = None):
        """Train an index described by ``factory`` on ``vectors`` and add them.

        Raises
        ------
        ImportError
            faiss is not installed.
        ValueError
            An unknown factory string, or too few vectors to train it (an
            ``IVF1024`` index needs at least 1024).
        """
        faiss = require_faiss()
        if not isinstance(factory, str) or not factory.strip():
            raise VladError(
                f"factory must be a faiss index_factory string; got {factory!r}"
            )
        dimension = vectors.shape[1]
        try:
            index = faiss.index_factory(dimension, factory, faiss.METRIC_INNER_PRODUCT)
        except RuntimeError as error:
            raise _faiss_error(
                error, f"build {factory!r} for {dimension} dimensions"
            ) from None
        if "ht=" not in (parameters or ""):
            _skip_polysemous_training(faiss, index)
        if not index.is_trained:
            try:
                with _clustering_warnings_logged(
                    faiss, index, factory, vectors.shape[0]
                ):
                    index.train(vectors)
            except RuntimeError as error:
                raise _training_error(error, factory, vectors.shape[0]) from None
        store = cls(index, factory, parameters)
        store.add(vectors)
        return store

    def set_parameters(self, parameters: str) -> None:
        """Apply search-time parameters (``"nprobe=16"``)."""
        faiss = require_faiss()
        try:
            faiss.ParameterSpace().set_index_parameters(self.index, parameters)
        except RuntimeError as error:
            raise _faiss_error(
                error, f"set {parameters!r} on {self.factory!r}"
            ) from None
        self.parameters = parameters

    def add(self, vectors: np.ndarray) -> None:
        """Append vectors (float32, C order)."""
        self.index.add(np.ascontiguousarray(vectors, dtype=np.float32))

    def __len__(self) -> int:
        return int(self.index.ntotal)

    @property
    def dimension(self) -> int:
        """Dimension of the stored vectors."""
        return int(self.index.d)

    @functools.cached_property
    def bytes_per_vector(self) -> int:
        """Bytes of one vector's code: ``M * nbits / 8`` for ``PQ{M}x{nbits}``,
        one per dimension for ``SQ8``, four for flat storage.

        The code is what compression is measured by; beside it an inverted
        list (``IVF``) keeps an 8-byte id per vector, and a graph (``HNSW``)
        its links. A refined index (``RFlat``) counts both of its codes.
        Found once (every search records it).
        """
        code_bytes = _code_bytes(require_faiss(), self.index)
        return 4 * self.dimension if code_bytes is None else code_bytes

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Best ``k`` by (approximate) inner product; rows may end in -1."""
        scores, rows = self.index.search(np.ascontiguousarray(queries), k)
        return scores, rows.astype(np.int64, copy=False)

    def reconstruct(self, rows: np.ndarray) -> np.ndarray:
        """The stored vectors (decoded, for compressed indexes) of ``rows``."""
        faiss = require_faiss()
        try:
            ivf = faiss.extract_index_ivf(self.index)
        except RuntimeError:
            ivf = None
        if ivf is not None and not ivf.direct_map.type:
            ivf.make_direct_map()
        rows = np.asarray(rows, dtype=np.int64).ravel()
        try:
            vectors = self.index.reconstruct_batch(rows)
        except RuntimeError as error:
            raise _faiss_error(
                error, f"give back vectors of a {self.factory!r} index"
            ) from None
        return vectors.reshape(rows.shape[0], self.dimension)

    def save(self, path: Path) -> None:
        """Write with faiss's own writer (the caller makes it atomic)."""
        require_faiss().write_index(self.index, os.fspath(path))

    @classmethod
    def load(cls, path: Path, factory: str, parameters: str | None) -> FaissStore:
        """Read a file written by :meth:`save`."""
        faiss = require_faiss()
        try:
            index = faiss.read_index(os.fspath(path))
        except RuntimeError as error:
            raise _faiss_error(error, f"read {path}") from None
        if index.metric_type != faiss.METRIC_INNER_PRODUCT:
            raise VladError(
                f"{path} is not a vlad index: its metric is not inner product"
            )
        return cls(index, factory, parameters)
