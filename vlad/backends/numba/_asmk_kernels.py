"""Compiled loop of ASMK* search: the posting lists of a query's words read
once, each entry's Hamming similarity, selectivity and weight added to its
image's score in the same pass.

This module imports numba; import it through
:func:`vlad.backends.numba.asmk_kernels`, which says how to install numba
when it is missing. The arithmetic is that of
:func:`vlad.search._asmk_kernel.binary_similarities` and
:func:`~vlad.search._asmk_kernel.selectivity` (the similarity rounded to
float32, its power taken in float32), and each image's score is summed in
the order of its entries, as ``np.bincount`` sums them.
"""

import numba
import numpy as np
from numba.extending import intrinsic

__all__ = ["add_binary_scores"]


@intrinsic
def _population_count(typing_context, value):
    """Set bits of an unsigned integer (LLVM's ``ctpop``: one instruction on
    CPUs that have it)."""

    def generate(context, builder, signature, arguments):
        return builder.ctpop(arguments[0])

    return value(value), generate


@numba.njit(nogil=True, cache=True, inline="always")
def _selectivity(similarity, alpha, integer_alpha, threshold):
    """``sign(u) |u| ** alpha`` for ``u >= threshold``, else 0, in float32."""
    if not similarity >= threshold:
        return np.float32(0.0)
    magnitude = abs(similarity)
    if integer_alpha > 0:
        powered = magnitude
        for _ in range(integer_alpha - 1):
            powered = powered * magnitude
    else:
        powered = magnitude**alpha
    return -powered if similarity < 0 else powered


@numba.njit(nogil=True, cache=True, boundscheck=False)
def add_binary_scores(
    word_offsets, entry_images, codes, first_image, words, query_codes,
    query_weights, n_features, alpha, integer_alpha, threshold, scores,
):  # fmt: skip
    """Add the ASMK* kernel of one query's words to ``scores``.

    For each ``words[i]`` and each entry ``e`` of its list,
    ``scores[entry_images[e] - first_image] += query_weights[i] *
    sigma(1 - 2 h / n_features)``, where ``h`` is the Hamming distance of
    ``codes[e]`` and ``query_codes[i]`` (rows of unsigned integers: packed
    sign bits) and ``sigma`` the selectivity (``integer_alpha`` > 0 for a
    whole ``alpha`` from 1 to 8, multiplied out as the NumPy path does).
    ``alpha`` and ``threshold`` are float32.
    """
    n_parts = codes.shape[1]
    for i in range(words.shape[0]):
        start = word_offsets[words[i]]
        stop = word_offsets[words[i] + 1]
        weight = query_weights[i]
        for entry in range(start, stop):
            distance = 0
            for part in range(n_parts):
                distance += _population_count(codes[entry, part] ^ query_codes[i, part])
            similarity = np.float32(1.0 - 2.0 * distance / n_features)
            kernel = _selectivity(similarity, alpha, integer_alpha, threshold)
            scores[entry_images[entry] - first_image] += np.float64(kernel) * weight
