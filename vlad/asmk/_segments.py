"""Posting lists stored in segments: each a run of consecutive images with
its own inverted file, searched together and merged by an explicit step.

A segment holds the entries of images ``first_image`` to ``first_image +
n_images - 1``, sorted by word: ``word_offsets`` (K + 1,) int64,
``entry_images`` (int32, the images' numbers in the whole index, increasing
within a word), ``codes`` (one row per entry) and ``image_entries`` (int32,
the number of entries, that is of words, of each of its images). An index is
its segments one after the other, as faiss stacks inverted lists
(``HStackInvertedLists``): word ``w``'s list is the concatenation of its
lists in the segments, in order. Adding images adds a segment, without
touching the others; :func:`merge_segments` makes one segment of several,
entries in the same order.

The arrays may be memory-mapped: nothing here reads more of them than the
lists asked for.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np

from vlad.asmk._inverted_lists import (
    concatenated_ranges,
    inverted_lists,
    list_blocks,
)
from vlad.errors import VladError

__all__ = [
    "ASMKSegment",
    "MERGE_ENTRIES",
    "check_segments",
    "merge_segments",
    "segment_from_entries",
    "segment_lists",
    "total_word_counts",
]

#: Entries copied at a time when segments are merged (bounds the temporaries).
MERGE_ENTRIES = 1 << 20


class ASMKSegment:
    """The posting lists of a run of consecutive images.

    Parameters
    ----------
    first_image : int
        The number of its first image in the index.
    n_images : int
        Its images, with entries or not.
    word_offsets : ndarray of int64 of shape (n_words + 1,)
        Word ``w``'s entries are ``word_offsets[w]:word_offsets[w + 1]``.
    entry_images : ndarray of int32 of shape (n_entries,)
        Each entry's image number in the index, in
        ``[first_image, first_image + n_images)``, increasing within a word.
    codes : ndarray of shape (n_entries, width)
        Each entry's code.
    image_entries : ndarray of int32 of shape (n_images,), optional
        Entries of each image; counted from ``entry_images`` when first
        needed if not given.
    """

    def __init__(
        self,
        first_image: int,
        n_images: int,
        word_offsets: np.ndarray,
        entry_images: np.ndarray,
        codes: np.ndarray,
        image_entries: np.ndarray | None = None,
    ):
        self.first_image = int(first_image)
        self.n_images = int(n_images)
        self.word_offsets = word_offsets
        self.entry_images = entry_images
        self.codes = codes
        self._image_entries = image_entries

    @property
    def n_words(self) -> int:
        """Words K of the lists."""
        return self.word_offsets.shape[0] - 1

    @property
    def n_entries(self) -> int:
        """(image, word) pairs held."""
        return self.entry_images.shape[0]

    @property
    def stop_image(self) -> int:
        """One past the number of its last image."""
        return self.first_image + self.n_images

    @property
    def image_entries(self) -> np.ndarray:
        """Entries (words) of each of its images, int32 of shape (n_images,)."""
        if self._image_entries is None:
            counts = np.zeros(self.n_images, np.int64)
            for start in range(0, self.n_entries, MERGE_ENTRIES):
                block = self.entry_images[start : start + MERGE_ENTRIES]
                counts += np.bincount(
                    np.asarray(block, np.int64) - self.first_image,
                    minlength=self.n_images,
                )
            self._image_entries = counts.astype(np.int32)
        return self._image_entries

    @property
    def nbytes(self) -> int:
        """Bytes of its arrays."""
        return (
            self.word_offsets.nbytes
            + self.entry_images.nbytes
            + self.codes.nbytes
            + 4 * self.n_images
        )

    def word_counts(self) -> np.ndarray:
        """Entries of each word, int64 of shape (n_words,): its images that
        hold the word."""
        return np.diff(self.word_offsets)


def segment_from_entries(
    images: np.ndarray,
    words: np.ndarray,
    codes: np.ndarray,
    n_words: int,
    first_image: int,
    n_images: int,
) -> ASMKSegment:
    """A segment of ``n_images`` new images from their entries.

    Parameters
    ----------
    images : ndarray of int of shape (n_entries,)
        Each entry's image, counted from 0 in the segment.
    words : ndarray of int of shape (n_entries,)
    codes : ndarray of shape (n_entries, width)
    n_words : int
    first_image : int
        The number in the index of the segment's image 0.
    n_images : int
        Images of the segment, with entries or not.
    """
    offsets, entry_images, sorted_codes = inverted_lists(
        words, np.asarray(images, np.int64) + first_image, codes, n_words
    )
    counts = np.bincount(np.asarray(images, np.int64), minlength=n_images)
    return ASMKSegment(
        first_image,
        n_images,
        offsets,
        entry_images,
        sorted_codes,
        counts.astype(np.int32),
    )


def total_word_counts(segments: Sequence[ASMKSegment], n_words: int) -> np.ndarray:
    """Images holding each word over all segments, int64 of shape (n_words,)."""
    counts = np.zeros(n_words, np.int64)
    for segment in segments:
        counts += segment.word_counts()
    return counts


def segment_lists(
    segment: ASMKSegment, words: np.ndarray, budget: int
) -> Iterator[tuple[int, int, np.ndarray, np.ndarray, np.ndarray]]:
    """The entries of a segment's lists of ``words``, a block of lists at a
    time (about ``budget`` entries; a longer list is a block of its own).

    Yields ``(first, last, starts, lengths, entries)`` for the lists of
    ``words[first:last]`` that hold entries in the segment: where each
    starts and how long it is, and the positions of their entries, list
    after list. Blocks of empty lists are skipped.
    """
    starts = segment.word_offsets[words]
    lengths = segment.word_offsets[words + 1] - starts
    for first, last in list_blocks(lengths, budget):
        counts = lengths[first:last]
        if not counts.any():
            continue
        begins = starts[first:last]
        yield first, last, begins, counts, concatenated_ranges(begins, counts)


def merge_segments(
    segments: Sequence[ASMKSegment],
    *,
    entry_images: np.ndarray | None = None,
    codes: np.ndarray | None = None,
    max_entries: int = MERGE_ENTRIES,
) -> ASMKSegment:
    """One segment holding the entries of consecutive ``segments``.

    Word ``w``'s list is the concatenation of its lists in the segments, in
    their order, so that images stay in increasing order within a word.
    The entries are copied a run of words at a time (about ``max_entries``
    of them), so the temporaries stay small and the outputs, when given
    (memory-mapped files), are written from start to end.

    Parameters
    ----------
    segments : sequence of ASMKSegment
        At least one; one after the other (each one's ``first_image`` is the
        previous one's ``stop_image``), all of the same words and codes.
    entry_images, codes : ndarray, optional
        Where to write the merged entries (int32 of shape (n_entries,), and
        the codes' dtype of shape (n_entries, width)); new arrays by default.
    max_entries : int, default=MERGE_ENTRIES
    """
    n_words = segments[0].n_words
    counts = [segment.word_counts() for segment in segments]
    total = np.sum(counts, axis=0)
    offsets = np.zeros(n_words + 1, np.int64)
    np.cumsum(total, out=offsets[1:])
    n_entries = int(offsets[-1])
    width, dtype = segments[0].codes.shape[1], segments[0].codes.dtype
    if entry_images is None:
        entry_images = np.empty(n_entries, np.int32)
    if codes is None:
        codes = np.empty((n_entries, width), dtype)
    for first_word, last_word in list_blocks(total, max_entries):
        start, stop = offsets[first_word], offsets[last_word]
        if start == stop:
            continue
        # Where each segment's part of each word of the run goes in the run.
        placed = offsets[first_word:last_word] - start
        images_run = np.empty(stop - start, np.int32)
        codes_run = np.empty((stop - start, width), dtype)
        for segment, count in zip(segments, counts, strict=True):
            lengths = count[first_word:last_word]
            begin = segment.word_offsets[first_word]
            end = segment.word_offsets[last_word]
            if end == begin:
                continue
            targets = concatenated_ranges(placed, lengths)
            images_run[targets] = segment.entry_images[begin:end]
            codes_run[targets] = segment.codes[begin:end]
            placed = placed + lengths
        entry_images[start:stop] = images_run
        codes[start:stop] = codes_run
    image_entries = np.concatenate([segment.image_entries for segment in segments])
    return ASMKSegment(
        segments[0].first_image,
        sum(segment.n_images for segment in segments),
        offsets,
        entry_images,
        codes,
        image_entries,
    )


def check_segments(
    segments: Sequence[ASMKSegment], n_words: int, width: int, dtype, n_images: int
) -> None:
    """Raise ``ValueError`` unless ``segments`` follow each other from image 0
    to ``n_images``, each of ``n_words`` lists of codes of ``width`` values of
    ``dtype``, its offsets covering its entries (reads the offsets, not the
    entries).
    """
    if not segments or not all(isinstance(s, ASMKSegment) for s in segments):
        raise VladError("segments must be a non-empty sequence of ASMKSegment")
    stop = 0
    for position, segment in enumerate(segments):
        offsets = np.asarray(segment.word_offsets)
        problem = None
        if segment.first_image != stop:
            problem = f"starts at image {segment.first_image}, not {stop}"
        elif offsets.dtype != np.int64 or offsets.shape != (n_words + 1,):
            problem = f"has {offsets.dtype} offsets of shape {offsets.shape}"
        elif (
            offsets[0] != 0
            or offsets[-1] != segment.n_entries
            or np.any(np.diff(offsets) < 0)
        ):
            problem = "has word offsets that do not cover its entries"
        elif segment.entry_images.dtype != np.int32 or segment.entry_images.ndim != 1:
            problem = f"has {segment.entry_images.dtype} image numbers"
        elif segment.codes.dtype != dtype or segment.codes.shape != (
            segment.n_entries,
            width,
        ):
            problem = f"has {segment.codes.dtype} codes of shape {segment.codes.shape}"
        elif segment._image_entries is not None and (
            segment._image_entries.shape != (segment.n_images,)
        ):
            problem = f"counts the entries of {segment._image_entries.shape} images"
        if problem:
            raise VladError(
                f"the segments disagree: segment {position} {problem} (expected "
                f"{n_words} words, codes of {width} {np.dtype(dtype)}, each "
                "segment starting where the previous one stops)"
            )
        stop = segment.stop_image
    if stop != n_images:
        raise VladError(f"{n_images} names for the {stop} images of the segments")
