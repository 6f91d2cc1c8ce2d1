"""An inverted file of aggregated residuals searched with the aggregated
selective match kernel (ASMK, ASMK*), beside VLAD's :class:`VectorIndex`.

The index keeps, for each visual word, the images holding it and their
aggregated residuals (see :mod:`vlad.asmk._kernel`), in segments of
flat arrays (:mod:`vlad.asmk._segments`): per segment
``word_offsets`` (K + 1,), and per entry ``entry_images`` (int32) and
``codes`` (packed sign bits, or float32 unit residuals), word after word.
Adding images adds a segment; :meth:`ASMKIndex.merge` makes one of them all.
A query reads only the lists of its own words. The words' idf weights and the
images' self-similarities are computed once per state of the index (and
stored with a saved one), not per query.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

from vlad.asmk._descriptors import check_same_descriptors
from vlad.asmk._kernel import (
    check_settings,
    code_dtype,
    code_width,
)
from vlad.asmk._parts import new_segment
from vlad.asmk._quantizer import WordQuantizer
from vlad.asmk._scoring import search_queries
from vlad.asmk._segments import (
    ASMKSegment,
    check_segments,
    merge_segments,
)
from vlad.asmk._weights import IndexWeights, index_weights
from vlad.core._codebook import Codebook
from vlad.core._descriptors import DescriptorSets
from vlad.core._parameters import (
    ALPHA,
    BINARY,
    IDF,
    N_JOBS,
    QUANTIZER,
    QUANTIZER_PARAMETERS,
    STOP_FRACTION,
    THRESHOLD,
    K,
)
from vlad.core._validation import check_finite
from vlad.errors import VladError
from vlad.search._results import SearchResults

__all__ = ["ASMKIndex"]

#: Words each query descriptor is assigned to unless told otherwise, by
#: kernel: chosen on the real-view and copy benchmarks (docs/asmk.md), where
#: full residuals ranked better with 3 than with 5, and sign bits worse.
MULTIPLE_ASSIGNMENT = {"ASMK*": 5, "ASMK": 3}


class ASMKIndex:
    """An inverted file of aggregated residuals, searched by ASMK or ASMK*.

    Build one with :func:`build_asmk_index`, read one with
    :func:`vlad.asmk.load_asmk_index`. The arguments here make an index of
    one segment; :meth:`add` appends segments.

    Parameters
    ----------
    codebook : Codebook
        The visual words (one vocabulary, Euclidean).
    names : sequence of str
        Every image's name, with descriptors or not.
    word_offsets : ndarray of int64 of shape (n_words + 1,)
        Word ``w``'s entries are ``word_offsets[w]:word_offsets[w + 1]``.
    entry_images : ndarray of int32 of shape (n_entries,)
        The image (position in ``names``) of each entry, increasing within a
        word.
    codes : ndarray of shape (n_entries, ceil(F / 8)) uint8 or (n_entries, F)
        float32
        Each entry's aggregated residual: packed sign bits (``binary``) or
        L2-normalised.
    binary : bool, default=True
        ASMK* (sign bits, Hamming similarity) or ASMK (inner product).
    alpha : float, default=3.0
        Selectivity exponent.
    threshold : float, default=0.0
        Similarities below it count 0.
    idf : bool, default=False
        Weigh each word by ``log(n / n_w) ** 2`` (``n`` images with words,
        ``n_w`` of them holding the word; 1 for a word none holds).
    source : dict, optional
        How the index was made (codebook fingerprint, descriptor record).
    quantizer : str, default="Flat"
        How descriptors find their nearest words: ``"Flat"`` compares them
        with every word (exact); a faiss ``index_factory`` string such as
        ``"HNSW32"`` or ``"IVF1024,Flat"`` searches an index over the words
        (approximate, several times faster with tens of thousands of words;
        needs faiss). Built when first needed, and kept with a saved index.
    quantizer_parameters : str, optional
        faiss search parameters of that index (``"efSearch=64"``,
        ``"nprobe=32"``); settable later, as :attr:`quantizer_parameters`.

    Attributes
    ----------
    segments : tuple of ASMKSegment
        The inverted file's segments, one after the other: one per build or
        :meth:`add`, one after :meth:`merge`.
    """

    def __init__(
        self,
        codebook: Codebook,
        names: Sequence[str],
        word_offsets: np.ndarray,
        entry_images: np.ndarray,
        codes: np.ndarray,
        *,
        binary: bool = BINARY.default,
        alpha: float = ALPHA.default,
        threshold: float = THRESHOLD.default,
        idf: bool = IDF.default,
        source: dict | None = None,
        quantizer: str = QUANTIZER.default,
        quantizer_parameters: str | None = QUANTIZER_PARAMETERS.default,
    ):
        self.codebook = codebook
        self.names = list(names)
        self.binary = bool(binary)
        self.alpha = float(alpha)
        self.threshold = float(threshold)
        self.idf = bool(idf)
        self.source = dict(source or {})
        self.quantizer = quantizer
        self._quantizer_parameters = quantizer_parameters
        self._quantize: WordQuantizer | None = None
        self._set_segments(
            [ASMKSegment(0, len(self.names), word_offsets, entry_images, codes)]
        )

    @classmethod
    def from_segments(
        cls,
        codebook: Codebook,
        names: Sequence[str],
        segments: Sequence[ASMKSegment],
        *,
        binary: bool = BINARY.default,
        alpha: float = ALPHA.default,
        threshold: float = THRESHOLD.default,
        idf: bool = IDF.default,
        source: dict | None = None,
        quantizer: str = QUANTIZER.default,
        quantizer_parameters: str | None = QUANTIZER_PARAMETERS.default,
    ) -> ASMKIndex:
        """An index of posting lists made elsewhere, segment after segment.

        Segments made by other indexes of the same codebook and settings
        (each index's :attr:`segments`, renumbered to follow each other)
        make one index without being copied: as faiss's
        ``HStackInvertedLists`` stacks inverted lists.

        Parameters
        ----------
        codebook : Codebook
        names : sequence of str
            Every image's name, in the segments' order.
        segments : sequence of ASMKSegment
            The first starting at image 0, each one where the previous one
            stops; of the codebook's words and of codes of the kernel's kind.
        binary, alpha, threshold, idf, source, quantizer, quantizer_parameters
            As :class:`ASMKIndex`.

        Raises
        ------
        ValueError
            Segments that do not follow each other, of other words or
            codes, or names of another number of images.

        docs/asmk.md (Segments: adding images and merging) has an example.
        """
        names = list(names)
        binary, alpha, threshold, idf, quantizer, quantizer_parameters = check_settings(
            binary, alpha, threshold, idf, quantizer, quantizer_parameters
        )
        check_segments(
            segments,
            codebook.n_clusters,
            code_width(codebook.n_features, binary),
            code_dtype(binary),
            len(names),
        )
        return cls._from_segments(
            codebook,
            names,
            segments,
            binary=binary,
            alpha=alpha,
            threshold=threshold,
            idf=idf,
            source=source,
            quantizer=quantizer,
            quantizer_parameters=quantizer_parameters,
        )

    @classmethod
    def _from_segments(
        cls,
        codebook: Codebook,
        names: Sequence[str],
        segments: Sequence[ASMKSegment],
        *,
        self_similarities: np.ndarray | None = None,
        word_quantizer: WordQuantizer | None = None,
        **settings,
    ) -> ASMKIndex:
        """An index of ``segments`` (consecutive, covering ``names``); the
        images' self-similarities with idf weights, and the quantizer, when
        already known."""
        first = segments[0]
        index = cls(
            codebook,
            names,
            first.word_offsets,
            first.entry_images,
            first.codes,
            **settings,
        )
        index._set_segments(segments, self_similarities)
        index._quantize = word_quantizer
        return index

    def _set_segments(
        self,
        segments: Sequence[ASMKSegment],
        self_similarities: np.ndarray | None = None,
    ) -> None:
        self.segments = tuple(segments)
        self._statistics = None
        self._known_self_similarities = self_similarities

    @property
    def n_images(self) -> int:
        """Images named in the index, with descriptors or not."""
        return len(self.names)

    @property
    def kernel(self) -> str:
        """``"ASMK*"`` (sign bits) or ``"ASMK"`` (full residuals)."""
        return "ASMK*" if self.binary else "ASMK"

    @property
    def default_multiple_assignment(self) -> int:
        """Words each query descriptor is assigned to when :meth:`search` is
        not told: 5 for ASMK*, 3 for ASMK."""
        return MULTIPLE_ASSIGNMENT[self.kernel]

    @property
    def n_words(self) -> int:
        """Visual words K."""
        return self.codebook.n_clusters

    @property
    def n_features(self) -> int:
        """Descriptor dimension F."""
        return self.codebook.n_features

    @property
    def n_entries(self) -> int:
        """(image, word) pairs stored."""
        return sum(segment.n_entries for segment in self.segments)

    @property
    def n_segments(self) -> int:
        """Segments of the inverted file: one per :meth:`add`, one after
        :meth:`merge`."""
        return len(self.segments)

    @property
    def n_empty(self) -> int:
        """Images without descriptors: named, never matched."""
        return self.n_images - self._statistics_now().stored

    @property
    def word_offsets(self) -> np.ndarray:
        """The single segment's word offsets (see :attr:`segments`)."""
        return self._single_segment().word_offsets

    @property
    def entry_images(self) -> np.ndarray:
        """The single segment's entries' images (see :attr:`segments`)."""
        return self._single_segment().entry_images

    @property
    def codes(self) -> np.ndarray:
        """The single segment's entries' codes (see :attr:`segments`)."""
        return self._single_segment().codes

    @property
    def bytes_per_entry(self) -> int:
        """Bytes of one entry: its image number and its residual's code."""
        codes = self.segments[0].codes
        return 4 + codes.shape[1] * codes.itemsize

    @property
    def nbytes(self) -> int:
        """Bytes of the inverted file (each segment's offsets, images, codes
        and entries per image; not the codebook)."""
        return sum(segment.nbytes for segment in self.segments)

    def __len__(self) -> int:
        return self.n_images

    def __repr__(self) -> str:
        kind = self.kernel
        return (
            f"ASMKIndex(n_images={self.n_images}, n_words={self.n_words}, "
            f"n_entries={self.n_entries}, kernel={kind!r}, alpha={self.alpha:g}, "
            f"threshold={self.threshold:g}, bytes_per_entry={self.bytes_per_entry})"
        )

    def add(self, descriptor_sets, names: Sequence[str] | None = None) -> None:
        """Append images, given by their descriptors (as :func:`build_asmk_index`).

        Parameters
        ----------
        descriptor_sets : DescriptorSets, ShardedDescriptorSets or list of arrays
            The new images' descriptors.
        names : sequence of str, optional
            Default the sets' names.

        Notes
        -----
        The new images make a segment of their own: what is stored already is
        neither copied nor sorted again. Each segment costs ``8 (K + 1)``
        bytes of word offsets and a look-up per query word: add images in
        batches, or :meth:`merge` the segments.

        Raises
        ------
        ValueError
            Descriptors of another width or kind than the index's.
        """
        segment, names = new_segment(self, descriptor_sets, names)
        self.names.extend(names)
        # A segment of no images holds nothing (the one of an empty index).
        kept = [part for part in (*self.segments, segment) if part.n_images > 0]
        self._set_segments(kept or [segment])

    def merge(self) -> None:
        """Make one segment of all of them (the same lists, in the same order).

        The search gives the same results before and after; with one segment
        it reads each query word's list at one place instead of one per
        segment. An index saved in a folder is merged in place by
        :func:`vlad.asmk.merge_asmk_index`.
        """
        if len(self.segments) > 1:
            statistics, known = self._statistics, self._known_self_similarities
            self._set_segments([merge_segments(self.segments)], known)
            self._statistics = statistics  # the same images, the same words

    def search(
        self,
        query_sets,
        k: int = K.default,
        *,
        multiple_assignment: int | None = None,
        query_names: Sequence[str] | None = None,
        n_jobs: int | None = N_JOBS.default,
        stop_fraction: float = STOP_FRACTION.default,
    ) -> SearchResults:
        """The ``k`` best images of each query.

        Parameters
        ----------
        query_sets : DescriptorSets, ShardedDescriptorSets or list of arrays
            The queries' descriptors, of the index's kind.
        k : int, default=10
            Images per query; at most as many as the index holds with
            descriptors (ties go to the image added first).
        multiple_assignment : int, optional
            Words each query descriptor is assigned to: its nearest ones (all
            of them when the codebook has fewer). Default
            :attr:`default_multiple_assignment`: 5 for ASMK*, 3 for ASMK.
        query_names : sequence of str, optional
            Default the sets' names.
        n_jobs : int or None, default=None
            Queries ranked at once, each on a thread (None or -1: every core);
            the results do not depend on it.
        stop_fraction : float, default=0.0
            A stop list: the queries leave out the index's commonest words,
            which together hold at most this fraction of its entries (the
            lists a query reads the most of, and the words idf weighs the
            least). In [0, 1); 0 leaves out none. On a large collection it
            cuts the entries a query reads at little cost in quality, and
            sometimes a gain (docs/asmk.md: 0.3 read 39% fewer entries of
            100,000 images); on a small one it costs some quality.

        Returns
        -------
        SearchResults
            Scores are the normalised kernel values: 1 for an identical image
            with ``multiple_assignment=1``, less with more (the query then
            holds more words). The record names the stop list's size
            (``stop_words``).

        Raises
        ------
        ValueError
            Descriptors of another width or kind, NaN or infinite values,
            ``k`` or ``multiple_assignment`` < 1, ``stop_fraction`` outside
            [0, 1).
        """
        return search_queries(
            self,
            query_sets,
            k,
            multiple_assignment,
            query_names,
            n_jobs,
            stop_fraction,
        )

    def record(self) -> dict:
        """JSON description of the index."""
        return {
            "n_images": self.n_images,
            "n_words": self.n_words,
            "n_features": self.n_features,
            "n_entries": self.n_entries,
            "binary": self.binary,
            "alpha": self.alpha,
            "threshold": self.threshold,
            "idf": self.idf,
            "bytes_per_entry": self.bytes_per_entry,
            "quantizer": self.quantizer,
            "quantizer_parameters": self.quantizer_parameters,
        }

    def save(self, path: str | os.PathLike, *, overwrite: bool = False) -> None:
        """Write to a folder, atomically (see :func:`vlad.asmk.load_asmk_index`).

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
        from vlad.asmk._files import save_asmk_index

        save_asmk_index(self, path, overwrite=overwrite)

    @property
    def quantizer_parameters(self) -> str | None:
        """faiss search parameters of the index over the words (None: its
        defaults, or ``"Flat"``'s exact search, which has none)."""
        return self._quantizer_parameters

    @quantizer_parameters.setter
    def quantizer_parameters(self, parameters: str | None) -> None:
        if self._quantize is not None and parameters is not None:
            self._quantize.set_parameters(parameters)
        elif self._quantize is not None:
            self._quantize = None  # built again with the index's defaults
        self._quantizer_parameters = parameters

    def _quantizer(self) -> WordQuantizer:
        if self._quantize is None:
            self._quantize = WordQuantizer(
                self.codebook.centers, self.quantizer, self._quantizer_parameters
            )
        return self._quantize

    def _single_segment(self) -> ASMKSegment:
        if len(self.segments) > 1:
            raise VladError(
                f"the index has {len(self.segments)} segments: merge() them into "
                "one, or read each of index.segments"
            )
        return self.segments[0]

    def _statistics_now(self) -> IndexWeights:
        """The words' weights and the images' self-similarities, computed once
        per state of the index."""
        if self._statistics is None:
            self._statistics = index_weights(
                self.segments, self.n_words, self.idf, self._known_self_similarities
            )
        return self._statistics

    def _checked_sets(self, sets: DescriptorSets, what: str) -> DescriptorSets:
        if sets.n_features != self.n_features:
            raise VladError(
                f"{what} have {sets.n_features} values each; the index's "
                f"descriptors have {self.n_features}"
            )
        check_same_descriptors(
            self.source.get("descriptor") or self.codebook.metadata.get("descriptor"),
            sets.metadata,
            what,
        )
        check_finite(sets.descriptors, what)
        return sets
