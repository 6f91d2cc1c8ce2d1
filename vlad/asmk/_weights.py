"""The words' weights and the images' self-similarities of an ASMK index,
computed once per state of the index instead of once per query.

Without idf every word weighs 1 and an image's self-similarity is its number
of words (the entries of :attr:`ASMKSegment.image_entries`). With idf, word
``w`` weighs ``log(n / n_w) ** 2`` (``n`` images with words, ``n_w`` of them
holding ``w``; 1 for a word none holds), and an image's self-similarity is
the sum of its words' weights: it depends on every image, so it changes when
images are added, and a saved index keeps it beside its segments.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from vlad.asmk._inverted_lists import list_blocks
from vlad.asmk._segments import (
    MERGE_ENTRIES,
    ASMKSegment,
    total_word_counts,
)

__all__ = [
    "IndexWeights",
    "idf_self_similarities",
    "index_weights",
    "stop_words",
    "stop_words_of",
    "word_weights",
]


@dataclasses.dataclass(frozen=True, eq=False)
class IndexWeights:
    """What a search needs besides the lists.

    Attributes
    ----------
    weights : ndarray of float64 of shape (n_words,)
        Each word's weight.
    self_similarities : ndarray of float64 of shape (n_images,)
        Each image's self-similarity: its words' weights summed.
    has_words : ndarray of bool of shape (n_images,)
        Images with at least one word (the others are never matched).
    stored : int
        Their number.
    """

    weights: np.ndarray
    self_similarities: np.ndarray
    has_words: np.ndarray
    stored: int


def word_weights(
    segments: Sequence[ASMKSegment], n_words: int, n_images: int
) -> np.ndarray:
    """idf weights ``log(n_images / n_w) ** 2`` of each word (1 for a word no
    image holds), float64 of shape (n_words,)."""
    counts = total_word_counts(segments, n_words)
    with np.errstate(divide="ignore"):
        weights = np.log(max(1, n_images) / counts) ** 2
    return np.where(counts > 0, weights, 1.0)


def stop_words(counts: np.ndarray, fraction: float) -> np.ndarray:
    """The commonest words that together hold at most ``fraction`` of the
    entries (a stop list), bool of shape (n_words,).

    Parameters
    ----------
    counts : ndarray of int of shape (n_words,)
        Each word's entries (the images holding it).
    fraction : float
        In [0, 1): 0 stops no word.

    Notes
    -----
    Words are taken from the commonest down (ties to the lower word number)
    while the entries taken stay at most ``fraction`` of all of them: the
    words are those a query reads the most entries of, and the ones idf
    weighs the least.
    """
    counts = np.asarray(counts, np.int64)
    stopped = np.zeros(counts.shape[0], bool)
    total = int(counts.sum())
    if total == 0 or fraction <= 0:
        return stopped
    order = np.argsort(-counts, kind="stable")
    taken = np.cumsum(counts[order])
    stopped[order[: np.searchsorted(taken, fraction * total, side="right")]] = True
    return stopped


def stop_words_of(
    segments: Sequence[ASMKSegment], n_words: int, fraction: float
) -> np.ndarray:
    """:func:`stop_words` of the lists of ``segments`` (each word's entries
    over all of them); no list is counted for ``fraction=0``."""
    if fraction <= 0:
        return np.zeros(n_words, bool)
    return stop_words(total_word_counts(segments, n_words), fraction)


def idf_self_similarities(
    segments: Sequence[ASMKSegment], weights: np.ndarray, n_images: int
) -> np.ndarray:
    """Each image's words' weights summed, float64 of shape (n_images,).

    Reads every entry's image number (4 bytes an entry), a run of lists at a
    time.
    """
    sums = np.zeros(n_images, np.float64)
    for segment in segments:
        counts = segment.word_counts()
        part = sums[segment.first_image : segment.stop_image]
        for first, last in list_blocks(counts, MERGE_ENTRIES):
            begin, end = segment.word_offsets[first], segment.word_offsets[last]
            if begin == end:
                continue
            images = np.asarray(segment.entry_images[begin:end], np.int64)
            part += np.bincount(
                images - segment.first_image,
                weights=np.repeat(weights[first:last], counts[first:last]),
                minlength=segment.n_images,
            )
    return sums


def index_weights(
    segments: Sequence[ASMKSegment],
    n_words: int,
    idf: bool,
    self_similarities: np.ndarray | None = None,
) -> IndexWeights:
    """The weights of an index of ``segments``.

    Parameters
    ----------
    segments : sequence of ASMKSegment
    n_words : int
    idf : bool
    self_similarities : ndarray of float64, optional
        With idf: the images' self-similarities when known (read from a saved
        index), instead of reading every entry.
    """
    image_entries = np.concatenate([segment.image_entries for segment in segments])
    has_words = image_entries > 0
    stored = int(np.count_nonzero(has_words))
    if not idf:
        return IndexWeights(
            np.ones(n_words, np.float64),
            image_entries.astype(np.float64),
            has_words,
            stored,
        )
    weights = word_weights(segments, n_words, stored)
    if self_similarities is None:
        self_similarities = idf_self_similarities(
            segments, weights, image_entries.shape[0]
        )
    return IndexWeights(weights, self_similarities, has_words, stored)
