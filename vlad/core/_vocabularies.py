"""Several vocabularies in one codebook, their vectors concatenated.

Codebooks fitted with different seeds (or on different samples) quantise the
same descriptors differently; the VLAD vectors of several, concatenated and
then PCA-whitened together (:func:`vlad.search.fit_whitening`), retrieve
better than one vocabulary's vector of the same final dimension (Jégou & Chum
2012). A :class:`vlad.Codebook` holds them stacked, with ``vocabulary_sizes``
saying where each ends, so that one codebook file serves every command.

References
----------
.. [1] H. Jégou, O. Chum. "Negative evidences and co-occurrences in image
   retrieval: the benefit of PCA and whitening". ECCV 2012.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from vlad.core._codebook import DEFAULT_N_CLUSTERS, Codebook, fit_codebook
from vlad.core._descriptors import DescriptorSets
from vlad.core._kmeans_progress import part_progress
from vlad.core._validation import check_positive_int, check_seed
from vlad.errors import VladError, VladTypeError

__all__ = [
    "concatenate_vectors",
    "fit_vocabularies",
    "split_vocabularies",
    "stack_vocabularies",
]


def stack_vocabularies(codebooks: Sequence[Codebook]) -> Codebook:
    """One codebook holding the vocabularies of several.

    Parameters
    ----------
    codebooks : sequence of Codebook
        Codebooks of the same descriptor dimension, fitted on descriptors of
        the same kind; a codebook that holds several vocabularies adds all of
        them.

    Returns
    -------
    Codebook
        Centres stacked in order, ``vocabulary_sizes`` the codebooks'
        numbers of centres; ``metadata["descriptor"]`` is the first
        codebook's, ``metadata["vocabularies"]`` the rest of each vocabulary's
        record (seed, sample size, ...). Centres are float64 if any codebook's
        are, float32 otherwise.

    Raises
    ------
    ValueError
        No codebooks, different descriptor dimensions, or different descriptor
        records.
    TypeError
        Something other than a Codebook among them.

    See Also
    --------
    split_vocabularies : The other way.
    fit_vocabularies : Fit several vocabularies at once.

    Examples
    --------
    >>> import vlad
    >>> sets = vlad.datasets.make_descriptor_sets(10, 50, 8, seed=0)
    >>> first = vlad.fit_codebook(sets, 4, seed=0)
    >>> second = vlad.fit_codebook(sets, 6, seed=1)
    >>> codebook = vlad.stack_vocabularies([first, second])
    >>> codebook.n_clusters, codebook.vocabulary_sizes
    (10, (4, 6))
    >>> vlad.split_vocabularies(codebook)[1].fingerprint == second.fingerprint
    True
    """
    if isinstance(codebooks, Codebook) or not isinstance(codebooks, Sequence):
        raise VladTypeError(
            f"codebooks must be a sequence of Codebook; got {type(codebooks).__name__}"
        )
    if not codebooks:
        raise VladError("codebooks must hold at least one codebook; got none")
    for index, codebook in enumerate(codebooks):
        if not isinstance(codebook, Codebook):
            raise VladTypeError(
                f"codebooks[{index}] must be a Codebook; got {type(codebook).__name__}"
            )
        if codebook.n_features != codebooks[0].n_features:
            raise VladError(
                f"codebooks[{index}] has {codebook.n_features} features but "
                f"codebooks[0] has {codebooks[0].n_features}; vocabularies must "
                "quantise descriptors of one dimension"
            )
        if _descriptor(codebook) != _descriptor(codebooks[0]):
            raise VladError(
                f"codebooks[{index}] was fitted on other descriptors "
                f"({_descriptor(codebook)}) than codebooks[0] "
                f"({_descriptor(codebooks[0])})"
            )
    vocabularies = [
        part for codebook in codebooks for part in split_vocabularies(codebook)
    ]
    records = [
        {key: value for key, value in part.metadata.items() if key != "descriptor"}
        for part in vocabularies
    ]
    centers = np.concatenate([part.centers for part in vocabularies])
    return Codebook(
        centers,
        {"descriptor": _descriptor(codebooks[0]), "vocabularies": records},
        vocabulary_sizes=[part.n_clusters for part in vocabularies],
    )


def split_vocabularies(codebook: Codebook) -> list[Codebook]:
    """The vocabularies of a codebook, one codebook each.

    Parameters
    ----------
    codebook : Codebook

    Returns
    -------
    list of Codebook
        ``[codebook]`` itself for a codebook of one vocabulary; otherwise one
        codebook per vocabulary with a copy of its centres, the codebook's
        descriptor record and its own record from ``metadata["vocabularies"]``,
        so that its fingerprint is that of the codebook it came from.

    See Also
    --------
    stack_vocabularies : The other way.
    """
    if not isinstance(codebook, Codebook):
        raise VladTypeError(
            f"codebook must be a Codebook; got {type(codebook).__name__}"
        )
    if codebook.n_vocabularies == 1:
        return [codebook]
    records = codebook.metadata.get("vocabularies")
    if not isinstance(records, list) or len(records) != codebook.n_vocabularies:
        records = [{}] * codebook.n_vocabularies
    bounds = np.cumsum((0, *codebook.vocabulary_sizes))
    return [
        Codebook(
            codebook.centers[start:stop].copy(),
            {
                **(record if isinstance(record, dict) else {}),
                "descriptor": _descriptor(codebook),
            },
        )
        for start, stop, record in zip(bounds[:-1], bounds[1:], records, strict=True)
    ]


def fit_vocabularies(
    descriptors: ArrayLike | DescriptorSets | Sequence[ArrayLike],
    n_clusters: int = DEFAULT_N_CLUSTERS,
    n_vocabularies: int = 2,
    *,
    seed: int | None = 0,
    **fit_options,
) -> Codebook:
    """Fit several vocabularies, with seeds ``seed``, ``seed + 1``, ...

    Parameters
    ----------
    descriptors, n_clusters
        As in :func:`vlad.fit_codebook`.
    n_vocabularies : int, default=2
        Number of vocabularies, each of ``n_clusters`` centres.
    seed : int or None, default=0
        Vocabulary ``i`` is ``fit_codebook(..., seed=seed + i)``: its own
        sample and its own k-means start. None: each unseeded.
    **fit_options
        Other keyword arguments of :func:`vlad.fit_codebook` (``sample``,
        ``algorithm``, ``max_iter``); its ``progress`` counts the iterations of
        every vocabulary, one after the other.

    Returns
    -------
    Codebook
        ``n_vocabularies * n_clusters`` centres in ``n_vocabularies``
        vocabularies (see :func:`stack_vocabularies`); with one vocabulary,
        the codebook of :func:`vlad.fit_codebook` itself.

    Examples
    --------
    >>> import vlad
    >>> sets = vlad.datasets.make_descriptor_sets(10, 50, 8, seed=0)
    >>> codebook = vlad.fit_vocabularies(sets, 4, 3, seed=0)
    >>> codebook.centers.shape, codebook.n_vocabularies
    ((12, 8), 3)
    >>> [record["seed"] for record in codebook.metadata["vocabularies"]]
    [0, 1, 2]
    >>> vlad.encode(sets, codebook).shape
    (10, 96)
    """
    n_vocabularies = check_positive_int(n_vocabularies, "n_vocabularies")
    seed = check_seed(seed)
    progress = fit_options.pop("progress", None)
    codebooks = [
        fit_codebook(
            descriptors,
            n_clusters,
            seed=None if seed is None else seed + index,
            progress=part_progress(progress, index, n_vocabularies),
            **fit_options,
        )
        for index in range(n_vocabularies)
    ]
    return codebooks[0] if n_vocabularies == 1 else stack_vocabularies(codebooks)


def concatenate_vectors(parts: Sequence[np.ndarray], *, l2: bool) -> np.ndarray:
    """Each vocabulary's vectors side by side, scaled to unit norm with ``l2``.

    Parameters
    ----------
    parts : sequence of ndarray of shape (n_images, n_dimensions_v)
        One vocabulary's vectors each, already normalised on their own.
    l2 : bool
        Scale every non-zero row of the result to unit Euclidean norm.

    Returns
    -------
    ndarray of shape (n_images, sum of n_dimensions_v)
        In the parts' dtype; all-zero rows (images without descriptors) stay
        zero.
    """
    vectors = np.concatenate(parts, axis=1)
    if l2:
        norms = np.sqrt(np.einsum("td,td->t", vectors, vectors, dtype=np.float64))
        nonzero = norms > 0
        vectors[nonzero] /= norms[nonzero, None].astype(vectors.dtype)
    return vectors


def _descriptor(codebook: Codebook) -> dict:
    """The codebook's record of its descriptors ({} when it has none)."""
    return codebook.metadata.get("descriptor") or {}
