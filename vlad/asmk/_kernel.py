"""The aggregated selective match kernel (ASMK, and ASMK* on sign bits).

Each descriptor is assigned to its nearest visual word (several on the query
side); per image and word, the residuals ``x - c`` of the descriptors there
are summed into one *aggregated residual*, kept L2-normalised (ASMK) or as
its sign bits (ASMK*). Two images are compared word by word: the similarity
``u`` of their aggregated residuals of a word they share (inner product, or
``1 - 2 h / F`` for a Hamming distance ``h`` of ``F`` bits) goes through the
selectivity function

    sigma(u) = sign(u) |u| ** alpha   where u >= threshold, else 0

and the image similarity is the sum over shared words, divided by the square
root of both images' self-similarities (their number of words).

References
----------
Tolias, Avrithis and Jégou, "To aggregate or not to aggregate: selective match
kernels for image search", ICCV 2013.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np

from vlad.core._nearest import nearest_valid
from vlad.core._parameters import (
    ALPHA,
    BINARY,
    IDF,
    QUANTIZER,
    QUANTIZER_PARAMETERS,
    THRESHOLD,
)

__all__ = [
    "aggregate_residuals",
    "binary_similarities",
    "check_kernel_parameters",
    "check_settings",
    "code_dtype",
    "code_width",
    "encode_residuals",
    "hamming_similarities",
    "popcount",
    "selectivity",
    "word_quantizer",
]

#: Distance-matrix bytes per block when faiss is not installed.
_ASSIGN_CHUNK_BYTES = 64 << 20
#: (descriptor, word) pairs aggregated at a time: bounds the residual temporary.
AGGREGATE_PAIRS = 1 << 16

_BIT_COUNTS = np.array([bin(value).count("1") for value in range(256)], np.uint8)


def word_quantizer(centers: np.ndarray) -> Callable[[np.ndarray, int], np.ndarray]:
    """A function ``(descriptors, n_nearest) -> labels`` giving each
    descriptor's ``n_nearest`` nearest centres, nearest first, as an int64
    array of shape ``(n_descriptors, n_nearest)``.

    It searches a faiss ``IndexFlatL2`` when faiss is installed (much faster
    for vocabularies of thousands of words), and vlad's own blocked search
    (:func:`vlad.assign_nearest`) otherwise; both find the nearest centres,
    and may order exact ties differently.
    """
    centers = np.ascontiguousarray(centers, dtype=np.float32)
    try:
        import faiss
    except ImportError:

        def nearest(descriptors: np.ndarray, n_nearest: int) -> np.ndarray:
            if descriptors.shape[0] == 0:
                return np.zeros((0, n_nearest), np.int64)
            rows = np.ascontiguousarray(descriptors, dtype=np.float32)
            labels, _ = nearest_valid(rows, centers, n_nearest, _ASSIGN_CHUNK_BYTES)
            return labels.astype(np.int64)

        return nearest
    index = faiss.IndexFlatL2(centers.shape[1])
    index.add(centers)

    def nearest(descriptors: np.ndarray, n_nearest: int) -> np.ndarray:
        if descriptors.shape[0] == 0:
            return np.zeros((0, n_nearest), np.int64)
        _, labels = index.search(
            np.ascontiguousarray(descriptors, dtype=np.float32), n_nearest
        )
        return labels.astype(np.int64)

    return nearest


def aggregate_residuals(
    descriptors: np.ndarray,
    offsets: np.ndarray,
    labels: np.ndarray,
    centers: np.ndarray,
    *,
    max_pairs: int = AGGREGATE_PAIRS,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The summed residuals of each image and each word it holds.

    A descriptor assigned to several words adds its residual to each of
    them. Images are taken a block at a time, so the residual temporary
    holds about ``max_pairs`` rows (or one image's, when larger).

    Parameters
    ----------
    descriptors : ndarray of shape (n_descriptors, n_features)
    offsets : ndarray of int64 of shape (n_images + 1,)
        Image ``t`` owns rows ``offsets[t]:offsets[t + 1]``.
    labels : ndarray of int64 of shape (n_descriptors, n_nearest)
        Each descriptor's words (distinct within a row).
    centers : ndarray of shape (n_words, n_features)

    Returns
    -------
    images : ndarray of int64 of shape (n_pairs,)
        The image (position) of each (image, word) pair, increasing.
    words : ndarray of int64 of shape (n_pairs,)
        Its word, increasing within an image.
    residuals : ndarray of float32 of shape (n_pairs, n_features)
        The sum of the residuals ``x - centers[word]`` of the image's
        descriptors assigned to the word.
    """
    blocks = [
        _aggregate_block(descriptors, offsets, labels, centers, first, last)
        for first, last in _image_blocks(offsets, max_pairs // labels.shape[1] or 1)
    ]
    if not blocks:
        empty = np.zeros(0, np.int64)
        return empty, empty, np.zeros((0, centers.shape[1]), np.float32)
    images, words, residuals = zip(*blocks, strict=True)
    return np.concatenate(images), np.concatenate(words), np.concatenate(residuals)


def _image_blocks(offsets: np.ndarray, max_rows: int) -> Iterator[tuple[int, int]]:
    """Runs of whole images ``[first, last)`` of about ``max_rows`` rows each
    (an image with more is a run of its own); images without rows are skipped
    with their neighbours."""
    n_images = offsets.shape[0] - 1
    first = 0
    while first < n_images:
        limit = offsets[first] + max_rows
        last = int(np.searchsorted(offsets, limit, side="right")) - 1
        last = min(max(last, first + 1), n_images)
        if offsets[last] > offsets[first]:
            yield first, last
        first = last


def _aggregate_block(descriptors, offsets, labels, centers, first, last):
    start, stop = int(offsets[first]), int(offsets[last])
    n_words, n_nearest = centers.shape[0], labels.shape[1]
    image_of_row = np.repeat(
        np.arange(first, last, dtype=np.int64), np.diff(offsets[first : last + 1])
    )
    rows = np.repeat(np.arange(start, stop), n_nearest)
    words = labels[start:stop].ravel()
    keys = image_of_row[rows - start] * n_words + words
    order = np.argsort(keys, kind="stable")
    keys, rows, words = keys[order], rows[order], words[order]
    starts = np.concatenate([[True], keys[1:] != keys[:-1]])
    firsts = np.flatnonzero(starts)
    residuals = descriptors[rows].astype(np.float32) - centers[words]
    # Summing sorted runs with a sparse matrix of ones: np.add.reduceat over
    # rows is many times slower. (Imported here: a command's --help need not
    # load SciPy's sparse matrices.)
    import scipy.sparse

    summer = scipy.sparse.csr_matrix(
        (
            np.ones(keys.shape[0], np.float32),
            np.arange(keys.shape[0]),
            np.append(firsts, keys.shape[0]),
        ),
        shape=(firsts.shape[0], keys.shape[0]),
    )
    sums = np.asarray(summer @ residuals, dtype=np.float32)
    return keys[firsts] // n_words, keys[firsts] % n_words, sums


def encode_residuals(residuals: np.ndarray, binary: bool) -> np.ndarray:
    """What the index keeps of aggregated residuals.

    Binary (ASMK*): the sign bits ``residual > 0``, packed 8 to a byte
    (``np.packbits``, first dimension in the highest bit), ``uint8`` of shape
    ``(n, ceil(F / 8))``. Full (ASMK): the residuals divided by their L2 norm
    (a zero residual stays zero), float32 of shape ``(n, F)``.
    """
    if binary:
        return np.packbits(residuals > 0, axis=1)
    norms = np.linalg.norm(residuals, axis=1, keepdims=True)
    unit = np.divide(residuals, norms, out=np.zeros_like(residuals), where=norms > 0)
    return unit


def popcount(bits: np.ndarray) -> np.ndarray:
    """Set bits of each row of a ``uint8`` array, as int64 of shape (n,)."""
    if hasattr(np, "bitwise_count"):
        if bits.shape[1] % 8 == 0:
            # Eight bytes at a time: one count per 64 bits instead of eight.
            bits = np.ascontiguousarray(bits).view(np.uint64)
        return np.bitwise_count(bits).sum(axis=1, dtype=np.int64)
    return _BIT_COUNTS[bits].sum(axis=1, dtype=np.int64)


def binary_similarities(
    codes: np.ndarray, others: np.ndarray, n_features: int
) -> np.ndarray:
    """``1 - 2 h / n_features`` for the Hamming distance ``h`` of each row of
    ``codes`` to the same row of ``others`` (packed sign bits): 1 for equal
    signs, -1 for opposite ones."""
    return hamming_similarities(popcount(np.bitwise_xor(codes, others)), n_features)


def hamming_similarities(distances: np.ndarray, n_features: int) -> np.ndarray:
    """``1 - 2 h / n_features`` of Hamming distances ``h``, float32."""
    return (1.0 - 2.0 * np.asarray(distances) / n_features).astype(np.float32)


def selectivity(similarities: np.ndarray, alpha: float, threshold: float) -> np.ndarray:
    """``sign(u) |u| ** alpha`` where ``u >= threshold``, 0 elsewhere.

    Examples
    --------
    >>> import numpy as np
    >>> from vlad.asmk._kernel import selectivity
    >>> selectivity(np.array([-0.5, 0.0, 0.5, 1.0]), 3.0, 0.0).tolist()
    [0.0, 0.0, 0.125, 1.0]
    """
    values = np.asarray(similarities, dtype=np.float32)
    magnitudes = np.abs(values)
    if float(alpha).is_integer() and 1 <= alpha <= 8:
        # A product of a few factors is much faster than a float power.
        powered = magnitudes.copy()
        for _ in range(int(alpha) - 1):
            powered *= magnitudes
    else:
        powered = magnitudes ** np.float32(alpha)
    powered *= np.sign(values)
    return np.where(values >= threshold, powered, np.float32(0.0))


def check_kernel_parameters(alpha, threshold) -> tuple[float, float]:
    """``alpha`` (positive, finite) and ``threshold`` (in ``[-1, 1)``) as
    floats, by their specification (:data:`vlad.core._parameters.ALPHA`,
    :data:`~vlad.core._parameters.THRESHOLD`).

    Raises
    ------
    vlad.errors.ParameterTypeError, vlad.errors.ParameterError
        Not numbers, or out of range.
    """
    return ALPHA.check(alpha), THRESHOLD.check(threshold)


def check_settings(
    binary, alpha, threshold, idf, quantizer, quantizer_parameters
) -> tuple[bool, float, float, bool, str, str | None]:
    """An ASMK index's settings, checked by their specification
    (:data:`vlad.core._parameters.ASMK_PARAMETERS`), in the order given.

    Raises
    ------
    vlad.errors.ParameterTypeError, vlad.errors.ParameterError
        A value of the wrong type, or out of range.
    """
    return (
        BINARY.check(binary),
        *check_kernel_parameters(alpha, threshold),
        IDF.check(idf),
        QUANTIZER.check(quantizer),
        QUANTIZER_PARAMETERS.check(quantizer_parameters),
    )


def code_width(n_features: int, binary: bool) -> int:
    """Values of one code: bytes of sign bits, or the residual's dimension."""
    return (n_features + 7) // 8 if binary else n_features


def code_dtype(binary: bool) -> type:
    """The codes' dtype: ``uint8`` sign bits or ``float32`` residuals."""
    return np.uint8 if binary else np.float32
