"""An inverted file of aggregated residuals searched with the aggregated
selective match kernel (ASMK, ASMK*), beside VLAD's :class:`VectorIndex`.

The index keeps, for each visual word, the images holding it and their
aggregated residuals (see :mod:`vlad.search._asmk_kernel`), in flat arrays:
``word_offsets`` (K + 1,), and per entry ``entry_images`` (int32) and
``codes`` (packed sign bits, or float32 unit residuals), word after word. A
query touches only the lists of its own words.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator, Mapping, Sequence

import numpy as np

from vlad.core._codebook import Codebook
from vlad.core._descriptors import DescriptorSets, as_descriptor_sets
from vlad.core._validation import check_finite, check_positive_int
from vlad.errors import VladError
from vlad.images._extractors import check_same_kind
from vlad.images._learned import LearnedOptions
from vlad.images._sift import SiftOptions
from vlad.search._asmk_kernel import (
    aggregate_residuals,
    binary_similarities,
    check_kernel_parameters,
    code_dtype,
    code_width,
    encode_residuals,
    selectivity,
    word_quantizer,
)
from vlad.search._inverted_lists import (
    best_rows,
    concatenated_ranges,
    inverted_lists,
    list_blocks,
)
from vlad.search._results import SearchResults, empty_result, results_from_arrays

__all__ = ["ASMKIndex", "build_asmk_index", "check_same_descriptors"]

NO_DESCRIPTORS = "no descriptors: the query has no visual word, so it matches nothing"
#: Posting-list entries compared at a time in a search (bounds its temporaries).
SEARCH_ENTRIES = 1 << 18
#: Words each query descriptor is assigned to unless told otherwise, by
#: kernel: chosen on the real-view and copy benchmarks (docs/asmk.md), where
#: full residuals ranked better with 3 than with 5, and sign bits worse.
MULTIPLE_ASSIGNMENT = {"ASMK*": 5, "ASMK": 3}


class ASMKIndex:
    """An inverted file of aggregated residuals, searched by ASMK or ASMK*.

    Build one with :func:`build_asmk_index`, read one with
    :func:`vlad.search.load_asmk_index`.

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
    """

    def __init__(
        self,
        codebook: Codebook,
        names: Sequence[str],
        word_offsets: np.ndarray,
        entry_images: np.ndarray,
        codes: np.ndarray,
        *,
        binary: bool = True,
        alpha: float = 3.0,
        threshold: float = 0.0,
        idf: bool = False,
        source: dict | None = None,
    ):
        self.codebook = codebook
        self.names = list(names)
        self.word_offsets = word_offsets
        self.entry_images = entry_images
        self.codes = codes
        self.binary = bool(binary)
        self.alpha = float(alpha)
        self.threshold = float(threshold)
        self.idf = bool(idf)
        self.source = dict(source or {})
        self._quantize = None

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
        return self.word_offsets.shape[0] - 1

    @property
    def n_features(self) -> int:
        """Descriptor dimension F."""
        return self.codebook.n_features

    @property
    def n_entries(self) -> int:
        """(image, word) pairs stored."""
        return self.entry_images.shape[0]

    @property
    def n_empty(self) -> int:
        """Images without descriptors: named, never matched."""
        return self.n_images - int(np.count_nonzero(self._image_words(plain=True)))

    @property
    def bytes_per_entry(self) -> int:
        """Bytes of one entry: its image number and its residual's code."""
        return self.entry_images.itemsize + self.codes.shape[1] * self.codes.itemsize

    @property
    def nbytes(self) -> int:
        """Bytes of the inverted file (offsets, images, codes; not the codebook)."""
        return self.word_offsets.nbytes + self.entry_images.nbytes + self.codes.nbytes

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

        Raises
        ------
        ValueError
            Descriptors of another width or kind than the index's.
        """
        images, words, codes, added = self._entries(descriptor_sets, "descriptor_sets")
        names = _checked_names(
            _parts_names(descriptor_sets) if names is None else names,
            added,
            self.n_images,
        )
        old_words = np.repeat(
            np.arange(self.n_words, dtype=np.int64), np.diff(self.word_offsets)
        )
        self.word_offsets, self.entry_images, self.codes = inverted_lists(
            np.concatenate([old_words, words]),
            np.concatenate([self.entry_images, images + self.n_images]),
            np.concatenate([self.codes, codes]),
            self.n_words,
        )
        self.names.extend(names)

    def search(
        self,
        query_sets,
        k: int = 10,
        *,
        multiple_assignment: int | None = None,
        query_names: Sequence[str] | None = None,
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

        Returns
        -------
        SearchResults
            Scores are the normalised kernel values: 1 for an identical image
            with ``multiple_assignment=1``, less with more (the query then
            holds more words).

        Raises
        ------
        ValueError
            Descriptors of another width or kind, NaN or infinite values,
            ``k`` or ``multiple_assignment`` < 1.
        """
        k = check_positive_int(k, "k")
        if multiple_assignment is None:
            multiple_assignment = self.default_multiple_assignment
        n_nearest = min(
            check_positive_int(multiple_assignment, "multiple_assignment"),
            self.n_words,
        )
        image_words = self._image_words()
        has_words = self._image_words(plain=True) > 0
        stored = int(np.count_nonzero(has_words))
        notes = []
        if k > stored:
            notes.append(
                f"k={k} but the index holds {stored} images with descriptors: "
                f"each query gets at most {stored}"
            )
        record = {
            "k": k,
            "multiple_assignment": n_nearest,
            "index": self.record(),
        }
        parts = _parts(query_sets)
        results = []
        weights = self._word_weights()
        name_array = np.array(self.names, dtype=object)
        for sets in parts:
            sets = self._checked_sets(sets, "query_sets")
            images, words, residuals = aggregate_residuals(
                sets.descriptors,
                sets.offsets,
                self._quantizer()(sets.descriptors, n_nearest),
                self.codebook.centers.astype(np.float32),
            )
            codes = encode_residuals(residuals, self.binary)
            bounds = np.searchsorted(images, np.arange(len(sets) + 1))
            for t, name in enumerate(sets.names):
                first, last = bounds[t], bounds[t + 1]
                if first == last or stored == 0:
                    reason = NO_DESCRIPTORS if first == last else "the index is empty"
                    results.append(empty_result(name, reason))
                    continue
                scores = self._scores(words[first:last], codes[first:last], weights)
                norms = np.sqrt(weights[words[first:last]].sum() * image_words)
                scores = np.divide(
                    scores, norms, out=np.zeros_like(scores), where=norms > 0
                )
                rows = best_rows(scores, has_words, min(k, stored))
                results.extend(
                    results_from_arrays(
                        [name], name_array, scores[None, rows], rows[None, :]
                    )
                )
        if query_names is not None:
            query_names = _checked_names(query_names, len(results), 0)
            for position, name in enumerate(query_names):
                results[position] = _renamed(results[position], name)
        return SearchResults(results, record, notes)

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
        }

    def save(self, path: str | os.PathLike, *, overwrite: bool = False) -> None:
        """Write to a folder, atomically (see :func:`vlad.search.load_asmk_index`).

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
        from vlad.search._asmk_files import save_asmk_index

        save_asmk_index(self, path, overwrite=overwrite)

    def _quantizer(self):
        if self._quantize is None:
            self._quantize = word_quantizer(self.codebook.centers)
        return self._quantize

    def _word_weights(self) -> np.ndarray:
        """Each word's weight: its idf, or 1."""
        if not self.idf:
            return np.ones(self.n_words, np.float64)
        counts = np.diff(self.word_offsets)
        n_images = max(1, int(np.count_nonzero(self._image_words(plain=True))))
        with np.errstate(divide="ignore"):
            weights = np.log(n_images / counts) ** 2
        return np.where(counts > 0, weights, 1.0)

    def _image_words(self, *, plain: bool = False) -> np.ndarray:
        """Each image's self-similarity: its words' weights summed (its number
        of words without idf)."""
        if plain or not self.idf:
            weights = None
        else:
            weights = np.repeat(self._word_weights(), np.diff(self.word_offsets))
        return np.bincount(
            self.entry_images, weights=weights, minlength=self.n_images
        ).astype(np.float64)

    def _scores(self, words, codes, weights) -> np.ndarray:
        """Unnormalised kernel of one query (its words and codes) with every image."""
        scores = np.zeros(self.n_images, np.float64)
        starts = self.word_offsets[words]
        lengths = self.word_offsets[words + 1] - starts
        for first, last in list_blocks(lengths, SEARCH_ENTRIES):
            counts = lengths[first:last]
            entries = concatenated_ranges(starts[first:last], counts)
            owners = np.repeat(np.arange(first, last), counts)
            if self.binary:
                similarities = binary_similarities(
                    self.codes[entries], codes[owners], self.n_features
                )
            else:
                # Word by word: each list is a contiguous block of rows, so a
                # matrix-vector product reads it in place (no gathered copy).
                similarities = np.concatenate(
                    [
                        self.codes[start : start + count] @ codes[position]
                        for position, start, count in zip(
                            range(first, last), starts[first:last], counts, strict=True
                        )
                    ]
                )
            kernel = selectivity(similarities, self.alpha, self.threshold)
            scores += np.bincount(
                self.entry_images[entries],
                weights=kernel * weights[words[owners]],
                minlength=self.n_images,
            )
        return scores

    def _entries(self, descriptor_sets, what: str):
        """Entries (images, words, codes) of new images, and how many images."""
        centers = self.codebook.centers.astype(np.float32)
        blocks, n_images = [], 0
        for sets in _parts(descriptor_sets):
            sets = self._checked_sets(sets, what)
            labels = self._quantizer()(sets.descriptors, 1)
            images, words, residuals = aggregate_residuals(
                sets.descriptors, sets.offsets, labels, centers
            )
            blocks.append(
                (images + n_images, words, encode_residuals(residuals, self.binary))
            )
            n_images += len(sets)
        images, words, codes = (
            np.concatenate(part) for part in zip(*blocks, strict=True)
        )
        return images, words, codes, n_images

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


def build_asmk_index(
    descriptor_sets,
    codebook: Codebook,
    *,
    names: Sequence[str] | None = None,
    binary: bool = True,
    alpha: float = 3.0,
    threshold: float = 0.0,
    idf: bool = False,
) -> ASMKIndex:
    """Index images' local descriptors for search by ASMK (or ASMK*).

    Each descriptor is assigned to its nearest word; per image and word the
    residuals are summed and kept as sign bits (``binary``) or normalised.

    Parameters
    ----------
    descriptor_sets : DescriptorSets, ShardedDescriptorSets or list of arrays
        The images' descriptors; a folder of shards is read a shard at a time.
    codebook : Codebook
        Visual words fitted on descriptors of the same kind (one vocabulary,
        Euclidean; thousands of words, ``vlad fit --n-clusters 8192 --backend faiss``).
    names : sequence of str, optional
        Default the sets' names.
    binary, alpha, threshold, idf
        As :class:`ASMKIndex`.

    Returns
    -------
    ASMKIndex

    Raises
    ------
    ValueError
        A codebook of several vocabularies or a spherical one, descriptors
        of another width or kind than the codebook's, or bad parameters.

    Examples
    --------
    >>> import numpy as np
    >>> import vlad
    >>> from vlad.search import build_asmk_index
    >>> codebook = vlad.Codebook([[0.0, 0.0], [10.0, 10.0]])
    >>> sets = vlad.DescriptorSets.from_list(
    ...     [[[1.0, -1.0], [9.0, 11.0]], [[1.0, -2.0]], np.zeros((0, 2))],
    ...     names=["a.jpg", "b.jpg", "blank.jpg"],
    ... )
    >>> index = build_asmk_index(sets, codebook)
    >>> index.n_images, index.n_entries, index.n_empty, index.bytes_per_entry
    (3, 3, 1, 5)
    >>> result = index.search(sets, k=5, multiple_assignment=1)[1]
    >>> result.names, result.scores.astype(float).round(3).tolist()
    (('b.jpg', 'a.jpg'), [1.0, 0.707])
    """
    if not isinstance(codebook, Codebook):
        raise TypeError(f"codebook must be a Codebook; got {type(codebook).__name__}")
    if codebook.n_vocabularies > 1 or codebook.metric != "euclidean":
        raise VladError(
            "ASMK takes a codebook of one Euclidean vocabulary; got "
            f"{codebook.n_vocabularies} vocabularies, metric {codebook.metric!r}"
        )
    alpha, threshold = check_kernel_parameters(alpha, threshold)
    descriptor_record = _parts_record(descriptor_sets)
    check_same_kind(descriptor_record, codebook)
    index = ASMKIndex(
        codebook,
        [],
        np.zeros(codebook.n_clusters + 1, np.int64),
        np.zeros(0, np.int32),
        np.zeros((0, code_width(codebook.n_features, binary)), code_dtype(binary)),
        binary=binary,
        alpha=alpha,
        threshold=threshold,
        idf=idf,
        source={
            "codebook": {
                "fingerprint": codebook.fingerprint,
                "n_clusters": codebook.n_clusters,
            },
            "descriptor": descriptor_record,
        },
    )
    index.add(descriptor_sets, names)
    return index


def check_same_descriptors(expected: Mapping | None, given: Mapping | None, what: str):
    """Raise ``ValueError`` if two descriptor records differ in kind (another
    extractor, SIFT made another way: RootSIFT or plain, dense or detected,
    or learned features of another network or other weights), when both
    say."""
    expected, given = expected or {}, given or {}
    extractors = expected.get("extractor"), given.get("extractor")
    if None not in extractors and extractors[0] != extractors[1]:
        raise VladError(
            f"the index holds {extractors[0]!r} descriptors but {what} are "
            f"{extractors[1]!r} descriptors; describe them as the index's were"
        )
    ours, theirs = (
        LearnedOptions.from_record(dict(expected)),
        LearnedOptions.from_record(dict(given)),
    )
    if ours is not None and theirs is not None:
        shas = ours.weights_sha256, theirs.weights_sha256
        if ours.model != theirs.model or (None not in shas and shas[0] != shas[1]):
            raise VladError(
                f"the index holds descriptors of {ours.model} with weights of "
                f"SHA-256 {shas[0]} but {what} are of {theirs.model} with weights "
                f"of SHA-256 {shas[1]}; describe them as the index's were"
            )
    ours, theirs = SiftOptions.from_record(expected), SiftOptions.from_record(given)
    if ours is not None and theirs is not None and ours.kind != theirs.kind:
        raise VladError(
            f"the index holds {ours.kind} but {what} are {theirs.kind}; describe "
            f"them as the index's were (root_sift={ours.root_sift}, "
            f"dense={ours.dense})"
        )


#: Images read at a time from descriptor sets read lazily (hloc's files).
_PART_IMAGES = 256


def _read_lazily(descriptor_sets) -> bool:
    """Whether ``descriptor_sets`` is read from disk a part at a time: a
    folder of shards, or hloc's local features."""
    return not isinstance(descriptor_sets, DescriptorSets) and hasattr(
        descriptor_sets, "between"
    )


def _parts(descriptor_sets) -> Iterator[DescriptorSets]:
    """Descriptor sets a part at a time: a folder of shards shard by shard,
    hloc's local features :data:`_PART_IMAGES` images at a time."""
    if hasattr(descriptor_sets, "n_shards"):
        for shard in range(descriptor_sets.n_shards):
            yield descriptor_sets.shard(shard)
    elif _read_lazily(descriptor_sets):
        for start in range(0, len(descriptor_sets), _PART_IMAGES):
            yield descriptor_sets.between(start, start + _PART_IMAGES)
    else:
        yield as_descriptor_sets(descriptor_sets)


def _parts_record(descriptor_sets) -> dict:
    if _read_lazily(descriptor_sets):
        return dict(descriptor_sets.metadata)
    return dict(as_descriptor_sets(descriptor_sets).metadata)


def _parts_names(descriptor_sets) -> list[str] | None:
    """The names of descriptor sets; None for bare arrays, which have none."""
    if _read_lazily(descriptor_sets) or isinstance(descriptor_sets, DescriptorSets):
        return list(descriptor_sets.names)
    return None


def _checked_names(names, count: int, first: int) -> list[str]:
    if names is None:
        return [str(first + position) for position in range(count)]
    if isinstance(names, str):
        raise TypeError(f"names must be a sequence of str, not a str ({names!r})")
    names = [str(name) for name in names]
    if len(names) != count:
        raise VladError(f"{len(names)} names for {count} images")
    return names


def _renamed(result, name: str):
    return dataclasses.replace(result, query=name)
