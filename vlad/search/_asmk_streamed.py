"""An ASMK index folder built from descriptors larger than memory: a part of
them at a time, written out as a segment whenever the entries held reach a
bound, and the segments merged at the end.

The folder is written whole or not at all (in a hidden folder renamed into
place), and holds the same lists, in the same order, as
:func:`vlad.search.build_asmk_index` followed by
:meth:`~vlad.search.ASMKIndex.save` would write: one segment. With idf the
images' self-similarities are computed once, at the end.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from pathlib import Path

from vlad.core._codebook import Codebook
from vlad.errors import VladError
from vlad.formats._folders import replace_folder
from vlad.search._asmk import ASMKIndex, build_asmk_index
from vlad.search._asmk_parts import descriptor_parts
from vlad.search._asmk_segment_files import (
    read_record,
    read_segment_arrays,
    read_segmented_index,
    segment_entry,
    segment_name,
    write_index_files,
    write_segment_files,
)
from vlad.search._asmk_segments import ASMKSegment, merge_segments
from vlad.search._asmk_updates import write_merged_segment

__all__ = ["SEGMENT_ENTRIES", "write_asmk_index"]

#: Entries held in memory before they are written out as a segment (about
#: 340 MB of ASMK* entries: 12,000 images of 1,400 words).
SEGMENT_ENTRIES = 1 << 24


def write_asmk_index(
    descriptor_sets,
    codebook: Codebook,
    path: str | os.PathLike,
    *,
    names: Sequence[str] | None = None,
    overwrite: bool = False,
    segment_entries: int = SEGMENT_ENTRIES,
    **settings,
) -> ASMKIndex:
    """:func:`vlad.search.build_asmk_index` into the folder ``path``, in
    memory bounded by ``segment_entries`` entries and a part of the
    descriptors (a shard of a folder of shards), not by the collection.

    Parameters
    ----------
    descriptor_sets : DescriptorSets, ShardedDescriptorSets or list of arrays
    codebook : Codebook
    path : path-like
        The index folder, written whole or not at all.
    names : sequence of str, optional
        Default the sets' names.
    overwrite : bool, default=False
        Replace an existing folder.
    segment_entries : int, default=SEGMENT_ENTRIES
        Entries held before they are written as a segment.
    **settings
        ``binary``, ``alpha``, ``threshold``, ``idf``, ``quantizer``,
        ``quantizer_parameters``, as :func:`vlad.search.build_asmk_index`.

    Returns
    -------
    ASMKIndex
        The index written, memory-mapped.

    Raises
    ------
    FileExistsError
        ``path`` exists and ``overwrite`` is False.
    ValueError
        As :func:`vlad.search.build_asmk_index`.
    """
    idf = bool(settings.pop("idf", False))
    if isinstance(names, str):
        raise TypeError(f"names must be a sequence of str, not a str ({names!r})")
    given = None if names is None else [str(name) for name in names]
    if given is not None and len(given) != len(descriptor_sets):
        raise VladError(f"{len(given)} names for {len(descriptor_sets)} images")
    path = Path(path)
    if path.exists() and not overwrite:
        raise FileExistsError(f"{path} exists; pass overwrite to replace it")
    index, written = None, []
    with replace_folder(path, overwrite=overwrite) as folder:
        for part in descriptor_parts(descriptor_sets):
            first = 0 if index is None else index.n_images
            part_names = None if given is None else given[first : first + len(part)]
            if index is None:
                index = build_asmk_index(
                    part, codebook, names=part_names, **settings, idf=False
                )
            else:
                index.add(part, part_names)
            held = index.segments[len(written) :]
            if sum(segment.n_entries for segment in held) >= segment_entries:
                written.append(_write_held(folder, index, written))
        if index is None:  # no part at all: as build_asmk_index makes it
            index = build_asmk_index(descriptor_sets, codebook, names=names, **settings)
        if len(index.segments) > len(written):
            written.append(_write_held(folder, index, written))
        entries = [
            segment_entry(segment_name(number), segment, checksums)
            for number, (segment, checksums) in enumerate(written)
        ]
        if len(written) > 1:
            name = segment_name(len(written))
            merged, checksums = write_merged_segment(folder / name, index)
            merged = read_segment_arrays(folder / name, 0, merged.n_images)
            index._set_segments([merged])
            for entry in entries:
                shutil.rmtree(folder / entry["folder"])
            entries = [segment_entry(name, merged, checksums)]
        index.idf = idf
        index._set_segments(index.segments)  # weights of the kernel written
        write_index_files(folder, index, entries)
    return read_segmented_index(path, read_record(path), mmap=True)


def _write_held(
    folder: Path, index: ASMKIndex, written: list
) -> tuple[ASMKSegment, dict[str, str]]:
    """The segments not yet written, written as one; the index then holds it
    memory-mapped instead of in memory. Returns it and its files' checksums."""
    held = index.segments[len(written) :]
    segment = merge_segments(held) if len(held) > 1 else held[0]
    place = folder / segment_name(len(written))
    place.mkdir()
    checksums = write_segment_files(
        place,
        segment,
        index.names[segment.first_image : segment.stop_image],
        index,
        index.codebook.fingerprint,
    )
    mapped = read_segment_arrays(place, segment.first_image, segment.n_images)
    index._set_segments([*(segment for segment, _ in written), mapped])
    return mapped, checksums
