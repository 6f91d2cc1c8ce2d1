"""Whole runs over files, as the ``vlad`` commands make them: a codebook fitted
and written (:func:`write_codebook`, :func:`write_adapted_codebook`), an index
folder written (:func:`write_index`) and an index searched
(:func:`search_index`)."""

from vlad.pipeline.codebook_fit import write_adapted_codebook, write_codebook
from vlad.pipeline.index_build import write_index
from vlad.pipeline.search_run import SearchRun, search_index

__all__ = [
    "SearchRun",
    "search_index",
    "write_adapted_codebook",
    "write_codebook",
    "write_index",
]
