"""Local descriptors indexed by the aggregated selective match kernel (ASMK,
and ASMK* of sign bits): an inverted file in segments, memory-mapped from its
folder, searched by the lists of a query's words only.

:func:`build_asmk_index` indexes descriptor sets against a codebook and
returns an :class:`ASMKIndex`, whose :meth:`~ASMKIndex.search` returns
:class:`vlad.search.SearchResults`; :func:`write_asmk_index` builds one into a
folder in bounded memory (resumable), :func:`load_asmk_index` opens a saved
one (mapped, without reading its entries), :func:`append_asmk_index` adds
images to it as a new segment and :func:`merge_asmk_index` merges its
segments. :class:`ASMKSegment` is the posting lists of a run of images, from
which :meth:`ASMKIndex.from_segments` stacks indexes built apart.
"""

from typing import TYPE_CHECKING

from vlad._lazy import attach_declared

if TYPE_CHECKING:
    from vlad.asmk._build import build_asmk_index
    from vlad.asmk._files import is_asmk_index, load_asmk_index
    from vlad.asmk._index import ASMKIndex
    from vlad.asmk._segments import ASMKSegment
    from vlad.asmk._streamed import write_asmk_index
    from vlad.asmk._updates import append_asmk_index, merge_asmk_index

__getattr__, __dir__, __all__ = attach_declared(__name__, __file__)
