"""Building an ASMK index of descriptor sets in memory
(:func:`build_asmk_index`), from an index of no image whose settings and
source are checked (:func:`empty_index`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from vlad.asmk._index import ASMKIndex
from vlad.asmk._kernel import check_settings, code_dtype, code_width
from vlad.asmk._parts import parts_record
from vlad.core._codebook import Codebook
from vlad.core._parameters import (
    ALPHA,
    BINARY,
    IDF,
    QUANTIZER,
    QUANTIZER_PARAMETERS,
    THRESHOLD,
)
from vlad.errors import VladError, VladTypeError
from vlad.images._extractors import check_same_kind

__all__ = ["build_asmk_index", "empty_index"]


def build_asmk_index(
    descriptor_sets,
    codebook: Codebook,
    *,
    names: Sequence[str] | None = None,
    binary: bool = BINARY.default,
    alpha: float = ALPHA.default,
    threshold: float = THRESHOLD.default,
    idf: bool = IDF.default,
    quantizer: str = QUANTIZER.default,
    quantizer_parameters: str | None = QUANTIZER_PARAMETERS.default,
) -> ASMKIndex:
    """Index images' local descriptors for search by ASMK (or ASMK*).

    Each descriptor is assigned to its nearest word; per image and word the
    residuals are summed and kept as sign bits (``binary``) or normalised.

    Parameters
    ----------
    descriptor_sets : DescriptorSets, ShardedDescriptorSets or list of arrays
        The images' descriptors; a folder of shards is read a shard at a time.
    codebook : Codebook
        Visual words fitted on descriptors of the same kind (one vocabulary,
        Euclidean; thousands of words, ``vlad fit --n-clusters 8192 --backend faiss``).
    names : sequence of str, optional
        Default the sets' names.
    binary, alpha, threshold, idf, quantizer, quantizer_parameters
        As :class:`ASMKIndex`. An approximate ``quantizer`` assigns the
        images' descriptors too; ``"Flat"`` (exact) gives the same index
        whatever the machine.

    Returns
    -------
    ASMKIndex

    Raises
    ------
    ValueError
        A codebook of several vocabularies or a spherical one, descriptors
        of another width or kind than the codebook's, or bad parameters.

    Examples
    --------
    >>> import numpy as np
    >>> import vlad
    >>> from vlad.asmk import build_asmk_index
    >>> codebook = vlad.Codebook([[0.0, 0.0], [10.0, 10.0]])
    >>> sets = vlad.DescriptorSets.from_list(
    ...     [[[1.0, -1.0], [9.0, 11.0]], [[1.0, -2.0]], np.zeros((0, 2))],
    ...     names=["a.jpg", "b.jpg", "blank.jpg"],
    ... )
    >>> index = build_asmk_index(sets, codebook)
    >>> index.n_images, index.n_entries, index.n_empty, index.bytes_per_entry
    (3, 3, 1, 5)
    >>> result = index.search(sets, k=5, multiple_assignment=1)[1]
    >>> result.names, result.scores.astype(float).round(3).tolist()
    (('b.jpg', 'a.jpg'), [1.0, 0.707])
    """
    index = empty_index(
        codebook,
        parts_record(descriptor_sets),
        binary=binary,
        alpha=alpha,
        threshold=threshold,
        idf=idf,
        quantizer=quantizer,
        quantizer_parameters=quantizer_parameters,
    )
    index._quantizer()  # a bad quantizer refused before any descriptor is read
    index.add(descriptor_sets, names)
    return index


def empty_index(
    codebook: Codebook,
    descriptor_record: dict,
    *,
    binary: bool = BINARY.default,
    alpha: float = ALPHA.default,
    threshold: float = THRESHOLD.default,
    idf: bool = IDF.default,
    quantizer: str = QUANTIZER.default,
    quantizer_parameters: str | None = QUANTIZER_PARAMETERS.default,
) -> ASMKIndex:
    """An index of no image, of ``codebook`` and the settings checked, its
    source recording the codebook and the descriptors' record
    (:func:`build_asmk_index` before it adds any image)."""
    if not isinstance(codebook, Codebook):
        raise VladTypeError(
            f"codebook must be a Codebook; got {type(codebook).__name__}"
        )
    if codebook.n_vocabularies > 1 or codebook.metric != "euclidean":
        raise VladError(
            "ASMK takes a codebook of one Euclidean vocabulary; got "
            f"{codebook.n_vocabularies} vocabularies, metric {codebook.metric!r}"
        )
    binary, alpha, threshold, idf, quantizer, quantizer_parameters = check_settings(
        binary, alpha, threshold, idf, quantizer, quantizer_parameters
    )
    check_same_kind(descriptor_record, codebook)
    return ASMKIndex(
        codebook,
        [],
        np.zeros(codebook.n_clusters + 1, np.int64),
        np.zeros(0, np.int32),
        np.zeros((0, code_width(codebook.n_features, binary)), code_dtype(binary)),
        binary=binary,
        alpha=alpha,
        threshold=threshold,
        idf=idf,
        quantizer=quantizer,
        quantizer_parameters=quantizer_parameters,
        source={
            "codebook": {
                "fingerprint": codebook.fingerprint,
                "n_clusters": codebook.n_clusters,
            },
            "descriptor": descriptor_record,
        },
    )
