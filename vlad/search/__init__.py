"""Searching VLAD vectors: exact and faiss indexes, PCA-whitening, query
expansion, spatial verification, and ranked results.

:func:`build_index` indexes vectors (optionally whitened by
:func:`fit_whitening` and compressed by faiss), :func:`load_index` reads a
saved one, :meth:`VectorIndex.search` ranks the database for each query and
returns :class:`SearchResults`. :func:`search_exact` is the exact search alone.
:func:`build_asmk_index` indexes local descriptors in an inverted file searched
by the aggregated selective match kernel (ASMK, ASMK*) instead.
"""

from vlad.search.asmk import ASMKIndex, build_asmk_index
from vlad.search.asmk_files import is_asmk_index, load_asmk_index
from vlad.search.exact import search_exact
from vlad.search.expansion import QueryExpansion, augment_database, expand_queries
from vlad.search.index import VectorIndex, build_index, load_index
from vlad.search.results import QueryResult, SearchResults, read_rankings
from vlad.search.whitening import PCAWhitening, fit_whitening

__all__ = [
    "ASMKIndex",
    "PCAWhitening",
    "QueryExpansion",
    "QueryResult",
    "SearchResults",
    "VectorIndex",
    "augment_database",
    "build_asmk_index",
    "build_index",
    "expand_queries",
    "fit_whitening",
    "is_asmk_index",
    "load_asmk_index",
    "load_index",
    "read_rankings",
    "search_exact",
]
