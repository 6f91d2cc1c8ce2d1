"""An independent reference for ASMK: the kernel evaluated by its definition
with plain loops in float64, random problems, and scores by image."""

from __future__ import annotations

import numpy as np


def _aggregated(descriptors, centers, n):
    """Each word of the ``n`` nearest of a descriptor: its residuals summed."""
    words = {}
    for x in np.asarray(descriptors, np.float64):
        distances = ((centers - x) ** 2).sum(axis=1)
        for word in np.argsort(distances, kind="stable")[:n]:
            words[int(word)] = words.get(int(word), 0.0) + (x - centers[word])
    return words


def stop_words_by_definition(counts, fraction):
    """The stop list of words holding ``counts`` entries each, by a loop:
    words taken from the commonest down (ties to the lower word) while the
    entries taken stay at most ``fraction`` of all."""
    total = sum(counts)
    stopped, taken = set(), 0
    for word in sorted(range(len(counts)), key=lambda w: (-counts[w], w)):
        if total == 0 or taken + counts[word] > fraction * total:
            break
        taken += counts[word]
        stopped.add(word)
    return stopped


def reference_stop_words(database, centers, fraction):
    """The stop list of the database's words (each word's entries: the
    images holding it), by :func:`stop_words_by_definition`."""
    centers = np.asarray(centers, np.float64)
    holding = [0] * len(centers)
    for descriptors in database:
        for word in _aggregated(descriptors, centers, 1):
            holding[word] += 1
    return stop_words_by_definition(holding, fraction)


def reference_scores(
    database, query, centers, n_nearest, binary, alpha, tau, idf=False, stopped=()
):
    """Normalised ASMK of ``query`` with each database image, by its
    definition: a loop over images, words and descriptors, in float64.

    With ``idf``, word ``c`` weighs ``log(n / n_c) ** 2`` for ``n_c`` of the
    ``n`` images with descriptors holding it (1 for a word none holds), in
    the sum and in both self-similarities; an image whose self-similarity is
    0 scores 0. The query's words in ``stopped`` are left out of it (of its
    sum and its self-similarity).
    """
    centers = np.asarray(centers, np.float64)

    def aggregated(descriptors, n):
        return _aggregated(descriptors, centers, n)

    def similarity(a, b):
        if binary:
            hamming = sum((p > 0) != (q > 0) for p, q in zip(a, b, strict=True))
            return 1 - 2 * hamming / len(a)
        norm_a, norm_b = np.linalg.norm(a), np.linalg.norm(b)
        return 0.0 if norm_a == 0 or norm_b == 0 else a @ b / (norm_a * norm_b)

    def sigma(u):
        return np.sign(u) * abs(u) ** alpha if u >= tau else 0.0

    images = [aggregated(descriptors, 1) for descriptors in database]

    def weight(word):
        if not idf:
            return 1.0
        holding = sum(word in words for words in images)
        with_words = sum(bool(words) for words in images)
        return np.log(with_words / holding) ** 2 if holding else 1.0

    ours = {
        word: residual
        for word, residual in aggregated(query, n_nearest).items()
        if word not in stopped
    }
    scores = []
    for theirs in images:
        if not theirs or not ours:
            scores.append(None)
            continue
        total = sum(
            weight(w) * sigma(similarity(ours[w], theirs[w]))
            for w in ours
            if w in theirs
        )
        norm = np.sqrt(sum(map(weight, ours)) * sum(map(weight, theirs)))
        scores.append(total / norm if norm > 0 else 0.0)
    return scores


def random_problem(seed, n_words, lengths, n_features=8):
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((n_words, n_features)).astype(np.float32)
    database = [
        rng.standard_normal((length, n_features)).astype(np.float32)
        for length in lengths
    ]
    return centers, database, rng


def assert_matches_reference(result, expected, tolerance=1e-5):
    """``result`` (one query's) scores each image as ``expected`` (the
    reference's scores by image, None for an image it cannot match)."""
    found = scores_by_row(result, len(expected))
    assert [score is None for score in found] == [s is None for s in expected]
    for score, reference in zip(found, expected, strict=True):
        if reference is not None:
            assert abs(score - reference) <= tolerance, (score, reference)


def scores_by_row(result, n_images):
    scores = [None] * n_images
    for row, score in zip(result.rows, result.scores, strict=True):
        scores[row] = float(score)
    return scores
