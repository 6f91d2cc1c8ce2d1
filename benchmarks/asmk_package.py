"""The ``asmk`` package (Tolias and Jeníček's Python ASMK, 0.1.1) as a peer
of :class:`vlad.asmk.ASMKIndex`: its inverted file filled with the entries of
a vlad index, its queries run end to end as its users run them, and the
agreement of the two rankings.

The package's inverted file (``asmk.inverted_file.IVF``, without idf) holds
exactly the entries (word, image, sign bits) of the vlad index, the codes
repacked as the package packs them (:func:`package_codes`), so that the
databases are the same whatever the descriptors they came from. A query is
the package's own: its ``Codebook`` over the same centres (faiss's exact
``IndexFlatL2``), the query descriptors assigned to their
``multiple_assignment`` nearest words, aggregated and binarised by its
``ASMKKernel.aggregate_image``, and its ``IVF.search`` with its
``ASMKKernel.similarity`` (the index's ``alpha`` and ``threshold``), called as
``asmk.asmk_method.ASMKMethod.accumulate_scores`` calls them.

The package is imported where it is used: ``pip install asmk`` (it builds
its Cython extension ``asmk.hamming``; faiss is needed beside it).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

import vlad
from vlad.asmk import ASMKIndex

__all__ = [
    "package_codebook",
    "package_codes",
    "package_inverted_file",
    "package_search",
    "ranking_agreement",
]


def package_codes(codes: np.ndarray) -> np.ndarray:
    """vlad's ASMK* codes as the ``asmk`` package packs the same sign bits.

    Parameters
    ----------
    codes : ndarray of uint8 of shape (n_entries, ceil(F / 8))
        ``np.packbits(residuals > 0, axis=1)``: the first dimension in the
        highest bit of the first byte.

    Returns
    -------
    ndarray of uint32 of shape (n_entries, ceil(F / 32))
        ``asmk.hamming.binarize_and_pack_2D``'s packing: the first dimension
        of each run of 32 in the highest bit of its word (the bytes read four
        at a time, big-endian), the bits past ``F`` zero.
    """
    codes = np.asarray(codes, np.uint8)
    padded = np.zeros((codes.shape[0], -(-codes.shape[1] // 4) * 4), np.uint8)
    padded[:, : codes.shape[1]] = codes
    return padded.view(">u4").astype(np.uint32)


def _check_peer(index: ASMKIndex) -> None:
    if not index.binary or index.idf:
        raise ValueError(
            f"the asmk package's peer takes an ASMK* index without idf; got "
            f"binary={index.binary}, idf={index.idf}"
        )


def package_inverted_file(index: ASMKIndex):
    """The ``asmk`` package's inverted file holding the entries of ``index``.

    Parameters
    ----------
    index : ASMKIndex
        ASMK* without idf (the library's defaults); its segments are read in
        turn (memory-mapped ones a segment at a time).

    Returns
    -------
    asmk.inverted_file.IVF
        Filled by ``IVF.add`` one segment at a time, each entry with its word
        and its image's number in ``index``.

    Raises
    ------
    ValueError
        ``index`` is ASMK (full residuals) or weighs words by idf.
    """
    _check_peer(index)
    from asmk.inverted_file import IVF

    inverted_file = IVF.initialize_empty(codebook_size=index.n_words, use_idf=False)
    for segment in index.segments:
        if segment.n_entries == 0:
            continue  # the package refuses an empty add
        words = np.repeat(np.arange(segment.n_words), segment.word_counts())
        images = np.asarray(segment.entry_images, np.int64)  # add shifts them in place
        inverted_file.add(package_codes(segment.codes), words, images)
    return inverted_file


def package_codebook(codebook: vlad.Codebook):
    """The ``asmk`` package's codebook over the centres of ``codebook``
    (faiss's exact ``IndexFlatL2``, its CPU index)."""
    from asmk.codebook import Codebook
    from asmk.index import FaissL2Index

    words = Codebook(FaissL2Index(), size=codebook.n_clusters)
    words.index(np.ascontiguousarray(codebook.centers, np.float32))
    return words


def package_search(
    codebook,
    inverted_file,
    query_sets: vlad.DescriptorSets,
    *,
    k: int,
    multiple_assignment: int,
    alpha: float,
    threshold: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Each query ranked by the ``asmk`` package, as its
    ``ASMKMethod.query_ivf`` ranks one.

    Parameters
    ----------
    codebook : asmk.codebook.Codebook
        Of :func:`package_codebook`.
    inverted_file : asmk.inverted_file.IVF
        Of :func:`package_inverted_file`.
    query_sets : DescriptorSets
        The queries, each with at least one descriptor.
    k : int
        Images per query (``topk``).
    multiple_assignment : int
        Words each query descriptor is assigned to.
    alpha, threshold : float
        The selectivity's exponent and threshold.

    Returns
    -------
    rows : ndarray of int64 of shape (n_queries, min(k, n_images))
        The images' numbers in the index, best first.
    scores : ndarray of float64 of the same shape
        Their scores.

    Raises
    ------
    ValueError
        A query without descriptors (the package skips it).
    """
    from asmk.asmk_method import ASMKMethod
    from asmk.kernel import ASMKKernel

    counts = np.diff(query_sets.offsets)
    if counts.size and counts.min() == 0:
        raise ValueError(
            f"query {int(np.argmin(counts))} has no descriptors; the asmk package "
            "searches only queries with descriptors"
        )
    params = {
        "quantize": {"multiple_assignment": multiple_assignment},
        "aggregate": {},
        "search": {"topk": k},
        "similarity": {"alpha": alpha, "similarity_threshold": threshold},
    }
    _, rows, scores = ASMKMethod.accumulate_scores(
        codebook,
        ASMKKernel(codebook, binary=True),
        inverted_file,
        np.ascontiguousarray(query_sets.descriptors, np.float32),
        np.repeat(np.arange(counts.size), counts),
        params=params,
    )
    return np.asarray(rows, np.int64), np.asarray(scores, np.float64)


def ranking_agreement(
    ours: Sequence[tuple[Sequence[str], Sequence[float]]],
    theirs: Sequence[tuple[Sequence[str], Sequence[float]]],
    top: int = 10,
) -> dict:
    """How far two searches of the same queries agree on their first images.

    Parameters
    ----------
    ours, theirs : sequence of (names, scores)
        Each query's ranked image names and their scores, best first, in the
        same order of queries.
    top : int, default=10
        Images compared per query.

    Returns
    -------
    dict
        ``n_queries``; ``same_order``: queries whose first ``top`` images are
        the same in the same order; ``same_images``: the same images in any
        order; ``mean_overlap``: the mean share of ``theirs``' first ``top``
        in ``ours``'; ``max_score_difference``: the largest difference
        between the two scores of an image both rank in their first ``top``.
    """
    if len(ours) != len(theirs):
        raise ValueError(f"{len(ours)} rankings against {len(theirs)}")
    same_order = same_images = 0
    overlap, difference = [], 0.0
    for (names, scores), (other_names, other_scores) in zip(ours, theirs, strict=True):
        first = dict(zip(list(names)[:top], scores[:top], strict=True))
        other = dict(zip(list(other_names)[:top], other_scores[:top], strict=True))
        same_order += list(first) == list(other)
        same_images += set(first) == set(other)
        shared = set(first) & set(other)
        overlap.append(len(shared) / max(1, len(other)))
        for name in shared:
            difference = max(difference, abs(float(first[name]) - float(other[name])))
    return {
        "top": top,
        "n_queries": len(ours),
        "same_order": same_order,
        "same_images": same_images,
        "mean_overlap": float(np.mean(overlap)) if overlap else 1.0,
        "max_score_difference": difference,
    }
