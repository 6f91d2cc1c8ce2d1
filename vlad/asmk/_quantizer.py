"""The nearest visual words of descriptors, exactly or through a faiss index
over the words.

``"Flat"`` compares each descriptor with every word (faiss's
``IndexFlatL2`` when faiss is installed, vlad's blocked search otherwise):
the exact nearest words, at a cost that grows with the vocabulary (about
0.4 CPU ms a descriptor for five words of 65,536 on two cores). Any other
faiss ``index_factory`` string (``"HNSW32"``, ``"IVF1024,Flat"``) builds that
index over the words once, with the Euclidean metric, and finds approximate
nearest words through it: on RootSIFT and 65,536 words ``"HNSW32"`` with
``efSearch=64`` found 99.7% of the five nearest at a quarter of the cost
(docs/asmk.md). Its search parameters (``"efSearch=64"``, ``"nprobe=32"``)
are faiss's ``ParameterSpace`` strings.

The index over the words is kept with a saved ASMK index
(:meth:`WordQuantizer.to_bytes`), so that it is built once.
"""

from __future__ import annotations

import contextlib

import numpy as np

from vlad.asmk._kernel import word_quantizer
from vlad.errors import VladError, VladTypeError
from vlad.search._faiss_store import require_faiss

__all__ = ["EXACT", "WordQuantizer"]

#: The exact quantizer's name, the default.
EXACT = "Flat"


class WordQuantizer:
    """Each descriptor's ``n_nearest`` nearest words, nearest first.

    Parameters
    ----------
    centers : ndarray of shape (n_words, n_features)
        The words.
    factory : str, default="Flat"
        ``"Flat"`` (exact), or a faiss ``index_factory`` string for an
        approximate search over the words.
    parameters : str, optional
        faiss search parameters of that index (``"efSearch=64"``).
    index : faiss.Index, optional
        The index over the words, already built (read from a saved ASMK
        index); built from ``centers`` by default.
    """

    def __init__(
        self,
        centers: np.ndarray,
        factory: str = EXACT,
        parameters: str | None = None,
        index=None,
    ):
        if not isinstance(factory, str) or not factory.strip():
            raise VladError(
                "quantizer must be 'Flat' or a faiss index_factory string; "
                f"got {factory!r}"
            )
        if parameters is not None and not isinstance(parameters, str):
            raise VladTypeError(
                f"quantizer_parameters must be a str or None; got {parameters!r}"
            )
        self.centers = np.ascontiguousarray(centers, dtype=np.float32)
        self.factory = factory
        self.parameters = None
        self._exact = word_quantizer(self.centers)
        self.index = None
        if factory != EXACT:
            self.index = index if index is not None else self._build()
            if parameters:
                self.set_parameters(parameters)
        elif parameters:
            raise VladError(
                f"quantizer_parameters={parameters!r} need an approximate "
                "quantizer ('HNSW32', 'IVF1024,Flat'); 'Flat' has none"
            )

    @property
    def exact(self) -> bool:
        """Whether the nearest words are exact (``"Flat"``)."""
        return self.index is None

    def __call__(self, descriptors: np.ndarray, n_nearest: int) -> np.ndarray:
        """The ``n_nearest`` nearest words of each row, int64 of shape
        ``(n_descriptors, n_nearest)``: exact for ``"Flat"``, else as the index
        finds them (rows it cannot fill, as an inverted file probing too few
        lists may leave, are searched exactly)."""
        if self.index is None or descriptors.shape[0] == 0:
            return self._exact(descriptors, n_nearest)
        rows = np.ascontiguousarray(descriptors, dtype=np.float32)
        _, labels = self.index.search(rows, n_nearest)
        labels = labels.astype(np.int64)
        unfilled = np.flatnonzero((labels < 0).any(axis=1))
        if unfilled.size:
            labels[unfilled] = self._exact(rows[unfilled], n_nearest)
        return labels

    def set_parameters(self, parameters: str) -> None:
        """Apply faiss search parameters to the index over the words."""
        faiss = require_faiss()
        if self.index is None:
            raise VladError(
                f"quantizer_parameters={parameters!r} need an approximate "
                "quantizer ('HNSW32', 'IVF1024,Flat'); 'Flat' has none"
            )
        try:
            faiss.ParameterSpace().set_index_parameters(self.index, parameters)
        except RuntimeError as error:
            raise _one_line(error, f"set {parameters!r} on {self.factory!r}") from None
        self.parameters = parameters

    def to_bytes(self) -> np.ndarray:
        """The index over the words in faiss's own format, uint8."""
        return require_faiss().serialize_index(self.index)

    @classmethod
    def from_bytes(
        cls,
        centers: np.ndarray,
        factory: str,
        parameters: str | None,
        serialized: np.ndarray,
    ) -> WordQuantizer:
        """The quantizer of :meth:`to_bytes`'s output, checked against the
        words it must index."""
        faiss = require_faiss()
        try:
            index = faiss.deserialize_index(np.ascontiguousarray(serialized, np.uint8))
        except RuntimeError as error:
            raise _one_line(error, "read the index over the words") from None
        n_words, n_features = centers.shape
        if (
            index.ntotal != n_words
            or index.d != n_features
            or index.metric_type != faiss.METRIC_L2
        ):
            raise VladError(
                f"the index over the words holds {index.ntotal} words of "
                f"{index.d} values (metric {index.metric_type}), not the "
                f"codebook's {n_words} of {n_features} (Euclidean)"
            )
        return cls(centers, factory, parameters, index=index)

    def _build(self):
        faiss = require_faiss()
        n_words, n_features = self.centers.shape
        try:
            index = faiss.index_factory(n_features, self.factory, faiss.METRIC_L2)
            if not index.is_trained:
                with contextlib.suppress(RuntimeError):  # not an inverted file
                    # Its lists' k-means on the words alone, without faiss's
                    # warning (printed, not raised) below 39 words a list.
                    faiss.extract_index_ivf(index).cp.min_points_per_centroid = 1
                index.train(self.centers)
            index.add(self.centers)
        except RuntimeError as error:
            raise _one_line(
                error, f"index {n_words} words with {self.factory!r}"
            ) from None
        return index


def _one_line(error: RuntimeError, action: str) -> VladError:
    """faiss's C++ exception (a message and a trace over several lines) as
    one line saying what could not be done."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    message = next(
        (line.split("Error: ", 1)[-1] for line in lines if "Error" in line),
        lines[-1] if lines else type(error).__name__,
    )
    return VladError(f"faiss could not {action}: {message}")
