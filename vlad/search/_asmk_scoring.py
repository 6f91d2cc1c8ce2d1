"""One query's unnormalised ASMK scores from the posting lists of its words.

For each word of the query and each entry of that word's list (in every
segment), the similarity of the entry's code to the query's code goes
through the selectivity function, is multiplied by the word's weight and is
added to the entry's image's score. ASMK* (sign bits) runs in one compiled
pass over the lists when numba is installed
(:mod:`vlad.backends.numba._asmk_kernels`), and in NumPy blocks of
:data:`SEARCH_ENTRIES` entries otherwise; full residuals (ASMK) take a
matrix-vector product per list. Lists a query does not name are never read.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from vlad.backends.numba import asmk_kernels
from vlad.search._asmk_kernel import binary_similarities, selectivity
from vlad.search._asmk_segments import ListSegment, segment_lists

__all__ = ["SEARCH_ENTRIES", "query_scores"]

#: Posting-list entries compared at a time by the NumPy path (bounds its
#: temporaries).
SEARCH_ENTRIES = 1 << 18


def query_scores(
    segments: Sequence[ListSegment],
    n_images: int,
    words: np.ndarray,
    codes: np.ndarray,
    weights: np.ndarray,
    *,
    binary: bool,
    alpha: float,
    threshold: float,
    n_features: int,
) -> np.ndarray:
    """The sum over the query's words of ``weight * sigma(similarity)`` with
    each image holding the word, float64 of shape (n_images,).

    Parameters
    ----------
    segments : sequence of ListSegment
    n_images : int
    words : ndarray of int64 of shape (n_words_of_query,)
        The query's distinct words.
    codes : ndarray of shape (n_words_of_query, width)
        Its code for each of them.
    weights : ndarray of float64 of shape (n_words,)
        Every word's weight (the query's words of weight 0 are skipped: they
        add nothing).
    binary, alpha, threshold, n_features
        The kernel.
    """
    scores = np.zeros(n_images, np.float64)
    kept = weights[words] != 0
    words, codes = words[kept], codes[kept]
    query_weights = weights[words]
    compiled = asmk_kernels() if binary else None
    for segment in segments:
        part = scores[segment.first_image : segment.stop_image]
        if compiled is not None:
            _compiled_binary(compiled, segment, words, codes, query_weights, part,
                             alpha, threshold, n_features)  # fmt: skip
            continue
        for first, last, starts, lengths, entries in segment_lists(
            segment, words, SEARCH_ENTRIES
        ):
            owners = np.repeat(np.arange(first, last), lengths)
            if binary:
                similarities = binary_similarities(
                    segment.codes[entries], codes[owners], n_features
                )
            else:
                # List by list: each is a contiguous block of rows, so a
                # matrix-vector product reads it in place (no gathered copy).
                similarities = np.concatenate(
                    [
                        segment.codes[start : start + length] @ codes[position]
                        for position, start, length in zip(
                            range(first, last), starts, lengths, strict=True
                        )
                    ]
                )
            kernel = selectivity(similarities, alpha, threshold)
            images = np.asarray(segment.entry_images[entries], np.int64)
            part += np.bincount(
                images - segment.first_image,
                weights=kernel * query_weights[owners],
                minlength=segment.n_images,
            )
    return scores


def _compiled_binary(
    kernels, segment, words, codes, query_weights, scores, alpha, threshold,
    n_features,
):  # fmt: skip
    """ASMK* of one segment in numba's single pass; the codes read as rows of
    the widest unsigned integers their width divides into."""
    width = segment.codes.shape[1]
    unsigned = next(
        dtype
        for dtype in (np.uint64, np.uint32, np.uint16, np.uint8)
        if width % np.dtype(dtype).itemsize == 0
    )
    integer_alpha = int(alpha) if float(alpha).is_integer() and 1 <= alpha <= 8 else 0
    kernels.add_binary_scores(
        segment.word_offsets,
        segment.entry_images,
        segment.codes.view(unsigned),
        segment.first_image,
        words,
        np.ascontiguousarray(codes).view(unsigned),
        query_weights,
        n_features,
        np.float32(alpha),
        integer_alpha,
        np.float32(threshold),
        scores,
    )
