"""Compiled loop of ASMK* search: the posting lists of a query's words read
once, each entry's Hamming similarity, selectivity and weight added to its
image's score in the same pass.

This module imports numba; import it through
:func:`vlad.backends.numba.asmk_kernels`, which returns None when numba is
missing. Each entry's kernel value is the NumPy path's own (looked up by
Hamming distance), and each image's score is summed in the order of its
entries, as ``np.bincount`` sums them.
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


@numba.njit(nogil=True, cache=True, boundscheck=False)
def add_binary_scores(
    word_offsets, entry_images, codes, first_image, words, query_codes,
    query_weights, kernel_of_distance, scores,
):  # fmt: skip
    """Add the ASMK* kernel of one query's words to ``scores``.

    For each ``words[i]`` and each entry ``e`` of its list,
    ``scores[entry_images[e] - first_image] += query_weights[i] *
    kernel_of_distance[h]``, where ``h`` is the Hamming distance of
    ``codes[e]`` and ``query_codes[i]`` (rows of unsigned integers: packed
    sign bits). A similarity of sign bits takes one of ``F + 1`` values, so
    the selectivity of each (``kernel_of_distance``, float32, computed by the
    NumPy path's own function) is looked up, not computed: no branch on the
    similarity, and the NumPy path's values exactly.
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
            kernel = np.float64(kernel_of_distance[distance])
            scores[entry_images[entry] - first_image] += kernel * weight
