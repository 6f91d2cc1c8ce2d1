"""Posting lists in flat arrays: entries sorted by word, read a block of
lists at a time, and the best rows of a score array."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

__all__ = ["best_rows", "concatenated_ranges", "inverted_lists", "list_blocks"]


def inverted_lists(
    words: np.ndarray, images: np.ndarray, codes: np.ndarray, n_words: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Entries sorted by word, stably (images stay in order within a word):
    ``(word_offsets (n_words + 1,) int64, images int32, codes)``."""
    order = np.argsort(words, kind="stable")
    offsets = np.zeros(n_words + 1, np.int64)
    np.cumsum(np.bincount(words, minlength=n_words), out=offsets[1:])
    return offsets, images[order].astype(np.int32), np.ascontiguousarray(codes[order])


def list_blocks(lengths: np.ndarray, budget: int) -> Iterator[tuple[int, int]]:
    """Runs ``[first, last)`` of ``lengths`` summing to at most ``budget`` each
    (a longer single length is a run of its own)."""
    ends = np.cumsum(lengths)
    first = 0
    while first < lengths.shape[0]:
        base = ends[first - 1] if first else 0
        last = int(np.searchsorted(ends, base + budget, side="right"))
        last = max(last, first + 1)
        yield first, last
        first = last


def concatenated_ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The concatenation of ``arange(start, start + length)`` for each pair.

    Examples
    --------
    >>> import numpy as np
    >>> from vlad.asmk._inverted_lists import concatenated_ranges
    >>> concatenated_ranges(np.array([5, 0, 9]), np.array([2, 0, 3])).tolist()
    [5, 6, 9, 10, 11]
    """
    total = int(lengths.sum())
    shifts = starts - np.concatenate([[0], np.cumsum(lengths)[:-1]])
    return np.repeat(shifts, lengths) + np.arange(total)


def best_rows(scores: np.ndarray, candidates: np.ndarray, k: int) -> np.ndarray:
    """The ``k`` best rows among ``candidates`` (a mask) by score, best first,
    ties to the lower row; ``k`` at most the number of candidates."""
    values = np.where(candidates, scores, -np.inf)
    if k < values.shape[0]:
        kth = values[np.argpartition(-values, k - 1)[:k]].min()
        chosen = np.flatnonzero((values >= kth) & candidates)
    else:
        chosen = np.flatnonzero(candidates)
    return chosen[np.lexsort((chosen, -values[chosen]))[:k]]
