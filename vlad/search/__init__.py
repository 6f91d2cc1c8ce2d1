"""Searching VLAD vectors: exact and faiss indexes, PCA-whitening, query
expansion, spatial verification (with settings that suit each kind of
descriptors), and ranked results.

:func:`build_index` indexes vectors (optionally whitened by
:func:`fit_whitening` and compressed by faiss), :func:`load_index` reads a
saved one, :meth:`VectorIndex.search` ranks the database for each query and
returns :class:`SearchResults`. :func:`search_exact` is the exact search alone.
:func:`build_asmk_index` indexes local descriptors in an inverted file searched
by the aggregated selective match kernel (ASMK, ASMK*) instead;
:func:`append_asmk_index` adds images to a saved one as a new segment and
:func:`merge_asmk_index` merges its segments. :func:`rerank_spatially`
verifies results spatially (its settings checked early by
:func:`check_verification`) and :func:`expand_verified` searches again with
the verified images (:func:`vlad.pipeline.search_verified` makes ASMK, both
and the second search in one call). An index
folder whose files are not those it was written with is refused when read, by
:class:`DamagedIndexError`.
"""

from typing import TYPE_CHECKING

from vlad._lazy import attach

if TYPE_CHECKING:
    from vlad.errors import DamagedIndexError
    from vlad.search._asmk import ASMKIndex, build_asmk_index
    from vlad.search._asmk_files import is_asmk_index, load_asmk_index
    from vlad.search._asmk_segments import ASMKSegment
    from vlad.search._asmk_streamed import write_asmk_index
    from vlad.search._asmk_updates import append_asmk_index, merge_asmk_index
    from vlad.search._exact import search_exact
    from vlad.search._expansion import QueryExpansion, augment_database, expand_queries
    from vlad.search._index import VectorIndex, build_index, load_index
    from vlad.search._reranking import check_verification, rerank_spatially
    from vlad.search._results import QueryResult, SearchResults, read_rankings
    from vlad.search._spatial import inlier_matches, spatial_rerank
    from vlad.search._streamed_index import index_shards
    from vlad.search._verification_presets import (
        VERIFICATION_PRESETS,
        VerificationPreset,
        VerificationSettings,
        verification_preset,
    )
    from vlad.search._verified_expansion import expand_verified
    from vlad.search._whitening import PCAWhitening, fit_whitening

__getattr__, __dir__ = attach(
    __name__,
    {
        "ASMKIndex": "vlad.search._asmk",
        "ASMKSegment": "vlad.search._asmk_segments",
        "DamagedIndexError": "vlad.errors",
        "VERIFICATION_PRESETS": "vlad.search._verification_presets",
        "VerificationPreset": "vlad.search._verification_presets",
        "VerificationSettings": "vlad.search._verification_presets",
        "PCAWhitening": "vlad.search._whitening",
        "QueryExpansion": "vlad.search._expansion",
        "QueryResult": "vlad.search._results",
        "SearchResults": "vlad.search._results",
        "VectorIndex": "vlad.search._index",
        "append_asmk_index": "vlad.search._asmk_updates",
        "augment_database": "vlad.search._expansion",
        "build_asmk_index": "vlad.search._asmk",
        "build_index": "vlad.search._index",
        "check_verification": "vlad.search._reranking",
        "expand_queries": "vlad.search._expansion",
        "expand_verified": "vlad.search._verified_expansion",
        "fit_whitening": "vlad.search._whitening",
        "index_shards": "vlad.search._streamed_index",
        "inlier_matches": "vlad.search._spatial",
        "is_asmk_index": "vlad.search._asmk_files",
        "load_asmk_index": "vlad.search._asmk_files",
        "load_index": "vlad.search._index",
        "merge_asmk_index": "vlad.search._asmk_updates",
        "read_rankings": "vlad.search._results",
        "rerank_spatially": "vlad.search._reranking",
        "search_exact": "vlad.search._exact",
        "spatial_rerank": "vlad.search._spatial",
        "verification_preset": "vlad.search._verification_presets",
        "write_asmk_index": "vlad.search._asmk_streamed",
    },
)
__all__ = [
    "ASMKIndex",
    "ASMKSegment",
    "DamagedIndexError",
    "VERIFICATION_PRESETS",
    "PCAWhitening",
    "QueryExpansion",
    "QueryResult",
    "SearchResults",
    "VectorIndex",
    "VerificationPreset",
    "VerificationSettings",
    "append_asmk_index",
    "augment_database",
    "build_asmk_index",
    "build_index",
    "check_verification",
    "expand_queries",
    "expand_verified",
    "fit_whitening",
    "index_shards",
    "inlier_matches",
    "is_asmk_index",
    "load_asmk_index",
    "load_index",
    "merge_asmk_index",
    "read_rankings",
    "rerank_spatially",
    "search_exact",
    "spatial_rerank",
    "verification_preset",
    "write_asmk_index",
]
