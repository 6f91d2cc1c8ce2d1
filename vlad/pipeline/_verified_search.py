"""The best search vlad makes of local descriptors, in memory: the aggregated
selective match kernel (ASMK), spatial verification of the first results, then
query expansion by the verified images.

It is what ``vlad search INDEX QUERIES --rerank spatial --expand-verified N``
does with an ASMK index folder (:func:`vlad.pipeline.search_index` calls it),
for an index and descriptor sets already in memory: three library calls,
:meth:`vlad.asmk.ASMKIndex.search`, :func:`vlad.verification.rerank_spatially` and
:func:`vlad.verification.expand_verified`, with their settings checked before the
first. On the real-view benchmark (docs/realviews.md) it is the best pipeline
measured: with ALIKED's descriptors and 16,384 words, mAP 77.51 against 71.47
for ASMK alone.
"""

from __future__ import annotations

import functools
import numbers
from collections.abc import Mapping

from vlad.asmk._index import ASMKIndex
from vlad.core._descriptors import DescriptorSets
from vlad.core._parameters import STOP_FRACTION
from vlad.errors import VladError
from vlad.search._results import SearchResults
from vlad.verification._expansion import EXPANDED_IMAGES, expand_verified
from vlad.verification._reranking import check_verification, rerank_spatially

__all__ = ["VERIFICATION_KEYS", "search_verified"]

#: The settings of :func:`vlad.verification.rerank_spatially` that
#: :func:`search_verified`'s ``verification`` may hold.
VERIFICATION_KEYS = (
    "matching",
    "model",
    "ratio",
    "reprojection_threshold",
    "verify_keypoints",
    "preset",
)


def search_verified(
    index: ASMKIndex,
    queries: DescriptorSets,
    database: DescriptorSets,
    k: int | None = None,
    *,
    depth: int | None = None,
    min_inliers: int | None = None,
    expand: int = EXPANDED_IMAGES,
    multiple_assignment: int | None = None,
    stop_fraction: float = STOP_FRACTION.default,
    verification: Mapping[str, object] | None = None,
    n_jobs: int | None = None,
) -> SearchResults:
    """Rank the database for each query by ASMK, verify the first results
    spatially, and search again with the verified images' descriptors.

    Parameters
    ----------
    index : ASMKIndex
        The database's index (:func:`vlad.asmk.build_asmk_index`, or
        :func:`vlad.asmk.load_asmk_index` of a folder).
    queries : DescriptorSets
        The queries' descriptors, with keypoints (``vlad extract`` keeps
        them); their names are the results' queries.
    database : DescriptorSets
        The database images' descriptors with keypoints, named as the
        index's images. A query may be among them (leave-one-out).
    k : int, optional
        Images per query; by default every image of the index.
    depth : int, optional
        Images of each query's ranking verified; by default as suits the
        descriptors (:data:`vlad.verification.VERIFICATION_PRESETS`: 20 for SIFT,
        50 for ALIKED). The query itself, when it is in the database, is
        among them.
    min_inliers : int, optional
        Inliers that verify an image, and make it join the query in the
        second search; by default as suits the descriptors (12).
    expand : int, default=EXPANDED_IMAGES
        Verified images (besides the query) whose descriptors join each
        query's in the second search (:func:`vlad.verification.expand_verified`);
        0 for no second search.
    multiple_assignment : int, optional
        Words each query descriptor is assigned to, in both searches; by
        default the index's (3 for ASMK, 5 for ASMK*).
    stop_fraction : float, default=0.0
        The stop list of both searches (see :meth:`vlad.asmk.ASMKIndex.search`).
    verification : mapping, optional
        More settings of :func:`vlad.verification.rerank_spatially`: any of
        :data:`VERIFICATION_KEYS` (``matching``, ``model``, ``ratio``,
        ``reprojection_threshold``, ``verify_keypoints``, ``preset``); those
        left out suit the descriptors or are its defaults.
    n_jobs : int, optional
        Threads that rank the queries and processes that verify them (None
        or -1: every core); the results do not depend on it.

    Returns
    -------
    SearchResults
        Each query's verified images first (most inliers first), then the
        second search's ranking of the others; each result's ``inliers``
        (-1 where not verified). The record holds ``spatial_verification``
        (the settings used and where each came from) and, with ``expand``,
        ``verified_expansion``.

    Raises
    ------
    ValueError
        A bad setting (before any search), a verification setting not in
        :data:`VERIFICATION_KEYS`, descriptors without keypoints, or a query
        or result image without descriptors of its name.
    TypeError
        ``index`` is not an :class:`~vlad.asmk.ASMKIndex`.

    See Also
    --------
    search_index : the same from an index folder and files, as ``vlad search
        --rerank spatial --expand-verified`` makes it.
    vlad.evaluation.evaluate : scores its :meth:`~SearchResults.rankings`.

    Examples
    --------
    >>> import vlad
    >>> from vlad.pipeline import search_verified
    >>> from vlad.asmk import build_asmk_index
    >>> sets, _ = vlad.extract_images("data", {"max_side": 256}, n_jobs=1)
    >>> index = build_asmk_index(sets, vlad.fit_codebook(sets, 32, n_jobs=1))
    >>> results = search_verified(index, sets, sets, k=3, n_jobs=1)
    >>> results[0].query == results[0].names[0]  # each photo finds itself first
    True
    >>> results.record["spatial_verification"]["depth"]  # SIFT's preset
    20
    >>> results.record["verified_expansion"]
    {'images': 10, 'min_inliers': 12}
    """
    if not isinstance(index, ASMKIndex):
        raise TypeError(
            "index must be an ASMKIndex (vlad.asmk.build_asmk_index or "
            f"load_asmk_index); got {type(index).__name__}"
        )
    settings = dict(verification or {})
    unknown = sorted(set(settings) - set(VERIFICATION_KEYS))
    if unknown:
        raise VladError(
            f"verification may hold {', '.join(VERIFICATION_KEYS)}; got {unknown[0]!r}"
        )
    if (
        isinstance(expand, bool)
        or not isinstance(expand, numbers.Integral)
        or expand < 0
    ):
        raise VladError(f"expand must be an integer >= 0; got {expand!r}")
    check_verification(depth=depth, min_inliers=min_inliers, **settings)
    search = functools.partial(
        index.search,
        multiple_assignment=multiple_assignment,
        stop_fraction=stop_fraction,
        n_jobs=n_jobs,
    )
    results = rerank_spatially(
        search(queries, index.n_images if k is None else k),
        queries,
        database,
        depth=depth,
        min_inliers=min_inliers,
        n_jobs=n_jobs,
        **settings,
    )
    if not expand:
        return results
    return expand_verified(results, queries, database, search, images=int(expand))
