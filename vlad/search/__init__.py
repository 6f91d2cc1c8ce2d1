"""Searching VLAD vectors: exact and faiss indexes, PCA-whitening, query
expansion, and ranked results.

:func:`build_index` indexes vectors (optionally whitened by
:func:`fit_whitening` and compressed by faiss), :func:`load_index` reads a
saved one, :meth:`VectorIndex.search` ranks the database for each query and
returns :class:`SearchResults`, the results type of every index (and of
:mod:`vlad.asmk`'s). :func:`search_exact` is the exact search alone. An index
folder whose files are not those it was written with is refused when read, by
:class:`DamagedIndexError`.

Local descriptors are indexed by the aggregated selective match kernel in
:mod:`vlad.asmk`, and candidates verified by their geometry in
:mod:`vlad.verification`; their names here are deprecated aliases.
"""

import importlib
import warnings
from typing import TYPE_CHECKING

from vlad._lazy import attach_declared

if TYPE_CHECKING:
    from vlad.errors import DamagedIndexError
    from vlad.search._exact import search_exact
    from vlad.search._expansion import QueryExpansion, augment_database, expand_queries
    from vlad.search._index import VectorIndex, build_index, load_index
    from vlad.search._results import QueryResult, SearchResults, read_rankings
    from vlad.search._streamed_index import index_shards
    from vlad.search._whitening import PCAWhitening, fit_whitening

_getattr, __dir__, __all__ = attach_declared(__name__, __file__)

#: Names that moved to a sub-package of their own, kept here one release as
#: deprecated aliases (each access warns).
_MOVED = {
    **dict.fromkeys(
        (
            "ASMKIndex",
            "ASMKSegment",
            "append_asmk_index",
            "build_asmk_index",
            "is_asmk_index",
            "load_asmk_index",
            "merge_asmk_index",
            "write_asmk_index",
        ),
        "vlad.asmk",
    ),
    **dict.fromkeys(
        (
            "VERIFICATION_PRESETS",
            "VerificationPreset",
            "VerificationSettings",
            "expand_verified",
            "inlier_matches",
            "rerank_spatially",
            "spatial_rerank",
            "verification_preset",
        ),
        "vlad.verification",
    ),
}


def __getattr__(name: str) -> object:
    if name in _MOVED:
        warnings.warn(
            f"vlad.search.{name} is deprecated: use {_MOVED[name]}.{name}",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(importlib.import_module(_MOVED[name]), name)
    return _getattr(name)
