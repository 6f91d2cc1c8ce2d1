"""One query's unnormalised ASMK scores from the posting lists of its words.

For each word of the query and each entry of that word's list (in every
segment), the similarity of the entry's code to the query's code goes
through the selectivity function, is multiplied by the word's weight and is
added to the entry's image's score. ASMK* (sign bits) runs in one compiled
pass over the lists when numba is installed
(:mod:`vlad.backends.numba._asmk_kernels`), and in NumPy blocks of
:data:`SEARCH_ENTRIES` entries otherwise; full residuals (ASMK) take a
matrix-vector product per list. Lists a query does not name are never read,
nor, with a stop list (``stop_fraction``), those of the index's commonest
words, left out of the queries before they are ranked.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np

from vlad.asmk._inverted_lists import best_rows
from vlad.asmk._kernel import (
    aggregate_residuals,
    binary_similarities,
    encode_residuals,
    hamming_similarities,
    selectivity,
)
from vlad.asmk._parts import descriptor_parts, renamed
from vlad.asmk._segments import ASMKSegment, segment_lists
from vlad.asmk._weights import IndexWeights, stop_words_of
from vlad.backends.numba import asmk_kernels, read_only
from vlad.core._parallel import resolve_n_jobs, run_ranges
from vlad.core._parameters import MULTIPLE_ASSIGNMENT, STOP_FRACTION, K
from vlad.core._validation import checked_names
from vlad.search._results import SearchResults, empty_result, results_from_arrays

__all__ = [
    "NO_DESCRIPTORS",
    "ONLY_STOP_WORDS",
    "QUERY_DESCRIPTORS",
    "SEARCH_ENTRIES",
    "empty_reason",
    "query_scores",
    "query_words",
    "ranked_images",
    "search_queries",
    "stop_record",
    "without_stop_words",
    "words_per_descriptor",
]

NO_DESCRIPTORS = "no descriptors: the query has no visual word, so it matches nothing"
ONLY_STOP_WORDS = (
    "only stop words: every word of the query is one of the index's commonest "
    "(stop_fraction), so it matches nothing"
)

#: Posting-list entries compared at a time by the NumPy path (bounds its
#: temporaries).
SEARCH_ENTRIES = 1 << 18


def query_scores(
    segments: Sequence[ASMKSegment],
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
    segments : sequence of ASMKSegment
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


def ranked_images(
    segments: Sequence[ASMKSegment],
    words: np.ndarray,
    codes: np.ndarray,
    statistics: IndexWeights,
    k: int,
    **kernel,
) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` best images of one query (its distinct words and codes) and
    their normalised scores, best first (ties to the lower image number);
    ``kernel`` as :func:`query_scores`'s keywords."""
    weights = statistics.weights
    similarities = statistics.self_similarities
    scores = query_scores(
        segments, similarities.shape[0], words, codes, weights, **kernel
    )
    norms = np.sqrt(weights[words].sum() * similarities)
    scores = np.divide(scores, norms, out=np.zeros_like(scores), where=norms > 0)
    rows = best_rows(scores, statistics.has_words, k)
    return rows, scores[rows]


def _compiled_binary(
    kernels, segment, words, codes, query_weights, scores, alpha, threshold,
    n_features,
):  # fmt: skip
    """ASMK* of one segment in numba's single pass; the codes read as rows of
    64-bit unsigned integers (or of bytes, for a width not a multiple of 8),
    each entry's kernel looked up by its Hamming distance."""
    width = segment.codes.shape[1]
    # 64-bit words where the width allows (SIFT's 16 bytes, ALIKED's 16),
    # bytes otherwise: two compiled kernels in all.
    unsigned = np.uint64 if width % 8 == 0 else np.uint8
    # Every distance the codes' bytes can give (padding bits included, which
    # are 0 in codes vlad writes), through the NumPy path's own functions.
    similarities = hamming_similarities(np.arange(8 * width + 1), n_features)
    kernels.add_binary_scores(
        *map(
            read_only,
            (
                np.ascontiguousarray(segment.word_offsets),
                np.ascontiguousarray(segment.entry_images),
                np.ascontiguousarray(segment.codes).view(unsigned),
            ),
        ),
        segment.first_image,
        *map(
            read_only,
            (
                np.ascontiguousarray(words, np.int64),
                np.ascontiguousarray(codes).view(unsigned),
                np.ascontiguousarray(query_weights, np.float64),
                selectivity(similarities, alpha, threshold).astype(np.float32),
            ),
        ),
        scores,
    )


def search_queries(
    index,
    query_sets,
    k: int,
    multiple_assignment: int | None,
    query_names,
    n_jobs: int | None = None,
    stop_fraction: float = STOP_FRACTION.default,
) -> SearchResults:
    """:meth:`vlad.asmk.ASMKIndex.search` of ``index``."""
    n_threads = resolve_n_jobs(n_jobs)
    k = K.check(k)
    n_nearest = words_per_descriptor(index, multiple_assignment)
    stop_fraction = STOP_FRACTION.check(stop_fraction)
    stopped = stop_words_of(index.segments, index.n_words, stop_fraction)
    statistics = index._statistics_now()
    stored = statistics.stored
    notes = []
    if k > stored:
        notes.append(
            f"k={k} but the index holds {stored} images with descriptors: "
            f"each query gets at most {stored}"
        )
    record = {
        "k": k,
        "multiple_assignment": n_nearest,
        **stop_record(stop_fraction, stopped),
        "index": index.record(),
    }
    results = []
    name_array = np.array(index.names, dtype=object)
    for part in query_words(index, query_sets, n_nearest):
        part, reasons = without_stop_words(part, stopped)
        results.extend(
            _ranked_part(index, *part, reasons, statistics, k, name_array, n_threads)
        )
    if query_names is not None:
        query_names = checked_names(query_names, len(results), "images")
        for position, name in enumerate(query_names):
            results[position] = renamed(results[position], name)
    return SearchResults(results, record, notes)


def stop_record(stop_fraction: float, stopped: np.ndarray) -> dict:
    """What a search's record says of its stop list."""
    return {"stop_fraction": stop_fraction, "stop_words": int(stopped.sum())}


def without_stop_words(part: tuple, stopped: np.ndarray) -> tuple[tuple, list]:
    """A part of :func:`query_words` without the words ``stopped`` selects,
    and why each of its queries matches nothing (None for those that have
    words left)."""
    names, words, codes, bounds = part
    before = np.diff(bounds)
    if stopped.any():
        kept = ~stopped[words]
        bounds = np.concatenate([[0], np.cumsum(kept)])[bounds]
        words, codes = words[kept], codes[kept]
    after = np.diff(bounds)
    reasons = [
        None if left else (ONLY_STOP_WORDS if held else NO_DESCRIPTORS)
        for held, left in zip(before, after, strict=True)
    ]
    return (names, words, codes, bounds), reasons


def words_per_descriptor(index, multiple_assignment: int | None) -> int:
    """The words each query descriptor is assigned to: ``multiple_assignment``
    (the index's default when None), at most the vocabulary's."""
    if multiple_assignment is None:
        multiple_assignment = index.default_multiple_assignment
    return min(
        MULTIPLE_ASSIGNMENT.check(multiple_assignment),
        index.n_words,
    )


def query_words(index, query_sets, n_nearest: int) -> Iterator[tuple]:
    """The queries' words and codes, a part of the query sets at a time
    (at most :data:`QUERY_DESCRIPTORS` descriptors, or one query):
    ``(names, words, codes, bounds)``, query ``t`` of the part holding the
    entries ``bounds[t]:bounds[t + 1]`` (its distinct words, increasing)."""
    centers = index.codebook.centers.astype(np.float32)
    for part in descriptor_parts(query_sets):
        part = index._checked_sets(part, "query_sets")
        yield from _query_words(index, part, n_nearest, centers)


#: Query descriptors assigned to their words and aggregated at a time: their
#: residuals take ``4 F`` bytes for each of their words (160 MiB for SIFT's
#: 128 values and five words), whatever the number of queries.
QUERY_DESCRIPTORS = 1 << 16


def _query_words(index, sets, n_nearest: int, centers) -> Iterator[tuple]:
    offsets = np.asarray(sets.offsets)
    start = 0
    while start < len(sets):
        limit = offsets[start] + QUERY_DESCRIPTORS
        stop = max(start + 1, int(np.searchsorted(offsets, limit, side="right")) - 1)
        yield _words_of(index, sets.between(start, stop), n_nearest, centers)
        start = stop


def _words_of(index, sets, n_nearest: int, centers) -> tuple:
    """:func:`query_words` of one part."""
    images, words, residuals = aggregate_residuals(
        sets.descriptors,
        sets.offsets,
        index._quantizer()(sets.descriptors, n_nearest),
        centers,
    )
    codes = encode_residuals(residuals, index.binary)
    bounds = np.searchsorted(images, np.arange(len(sets) + 1))
    return sets.names, words, codes, bounds


def empty_reason(reason: str | None, stored: int) -> str | None:
    """Why a query matches nothing (``reason``, from
    :func:`without_stop_words`, or an index of no image with words), None
    when it may match."""
    return reason or (None if stored else "the index is empty")


def _ranked_part(
    index, names, words, codes, bounds, reasons, statistics, k, name_array,
    n_threads,
) -> list:  # fmt: skip
    """The results of a part's queries (query ``t`` holds the entries
    ``bounds[t]:bounds[t + 1]`` of ``words`` and ``codes``; ``reasons[t]``
    says why it matches nothing, if so), each ranked on a thread: a query's
    scores are summed in the same order whatever the number of threads."""
    stored = statistics.stored
    ranked: list = [None] * len(names)

    def rank(first_query: int, stop_query: int) -> None:
        for t in range(first_query, stop_query):
            first, last = bounds[t], bounds[t + 1]
            reason = empty_reason(reasons[t], stored)
            if reason is not None:
                ranked[t] = empty_result(names[t], reason)
                continue
            rows, scores = ranked_images(
                index.segments,
                words[first:last],
                codes[first:last],
                statistics,
                min(k, stored),
                binary=index.binary,
                alpha=index.alpha,
                threshold=index.threshold,
                n_features=index.n_features,
            )
            (ranked[t],) = results_from_arrays(
                [names[t]], name_array, scores[None, :], rows[None, :]
            )

    run_ranges(rank, [(t, t + 1) for t in range(len(names))], n_threads)
    return ranked
