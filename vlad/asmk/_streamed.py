"""An ASMK index folder built from descriptors larger than memory: a part of
them at a time, written out as a segment whenever the entries held reach a
bound, and the segments merged at the end.

The folder is written whole or not at all (in a hidden folder renamed into
place, ``.NAME.building``, which an interrupted build leaves for the next
to resume: each segment written there is recorded in its
``building.json``), and holds the same lists, in the same order, as
:func:`vlad.asmk.build_asmk_index` followed by
:meth:`~vlad.asmk.ASMKIndex.save` would write: one segment. With idf the
images' self-similarities are computed once, at the end.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Sequence
from pathlib import Path

from vlad.asmk._build import build_asmk_index, empty_index
from vlad.asmk._index import ASMKIndex
from vlad.asmk._parts import descriptor_parts, parts_names, parts_record
from vlad.asmk._segment_files import (
    kernel_settings,
    read_record,
    read_segment,
    read_segment_arrays,
    read_segmented_index,
    segment_entry,
    segment_name,
    write_index_files,
    write_segment_files,
)
from vlad.asmk._segments import ASMKSegment, merge_segments
from vlad.asmk._updates import write_merged_segment, writer_lock
from vlad.core._codebook import Codebook
from vlad.core._validation import checked_names
from vlad.core._writing import atomic_write
from vlad.errors import VladError
from vlad.formats._folders import move_into_place
from vlad.search._index_folders import read_folder_json

__all__ = ["SEGMENT_ENTRIES", "building_folder", "write_asmk_index"]

#: Entries held in memory before they are written out as a segment (about
#: 340 MB of ASMK* entries: 12,000 images of 1,400 words).
SEGMENT_ENTRIES = 1 << 24
#: The record of what a build has written so far, in its folder.
_PROGRESS = "building.json"
_BUILD_FORMAT = "vlad asmk index build"


def write_asmk_index(
    descriptor_sets,
    codebook: Codebook,
    path: str | os.PathLike,
    *,
    names: Sequence[str] | None = None,
    overwrite: bool = False,
    resume: bool = False,
    segment_entries: int = SEGMENT_ENTRIES,
    **settings,
) -> ASMKIndex:
    """:func:`vlad.asmk.build_asmk_index` into the folder ``path``, in
    memory bounded by ``segment_entries`` entries and a part of the
    descriptors (a shard of a folder of shards), not by the collection.

    The index is built in a hidden folder beside ``path``
    (``.NAME.building``), each segment written there as it fills and
    recorded in its ``building.json``, then renamed to ``path``. A build
    interrupted (killed, a power cut) leaves that folder; ``resume=True``
    goes on from its last segment, after checking that the codebook, the
    settings and the names of the images indexed are the same.

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
    resume : bool, default=False
        Go on from what an interrupted build of ``path`` wrote (from the
        start when there is none); without it, that is removed and the build
        starts again.
    segment_entries : int, default=SEGMENT_ENTRIES
        Entries held before they are written as a segment.
    **settings
        ``binary``, ``alpha``, ``threshold``, ``idf``, ``quantizer``,
        ``quantizer_parameters``, as :func:`vlad.asmk.build_asmk_index`.

    Returns
    -------
    ASMKIndex
        The index written, memory-mapped.

    Raises
    ------
    FileExistsError
        ``path`` exists and ``overwrite`` is False.
    ValueError
        As :func:`vlad.asmk.build_asmk_index`; with ``resume``, a build
        begun with another codebook, other settings or other images; another
        process building the same index.
    """
    idf = bool(settings.pop("idf", False))
    given = (
        None if names is None else checked_names(names, len(descriptor_sets), "images")
    )
    path = Path(path)
    if path.exists() and not overwrite:
        raise FileExistsError(f"{path} exists; pass overwrite to replace it")
    path.parent.mkdir(parents=True, exist_ok=True)
    folder = building_folder(path)
    folder.mkdir(exist_ok=True)
    with writer_lock(folder, f"building {path}"):
        if not resume:
            _empty(folder)
        index, written = _resumed(folder, descriptor_sets, codebook, settings, idf)
        done = [] if index is None else index.names
        for part in _parts_after(descriptor_sets, done, given, folder):
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
                _record_progress(folder, index, written, idf)
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
            merged, checksums = write_merged_segment(
                folder / name, index, overwrite=True
            )
            merged = read_segment_arrays(folder / name, 0, merged.n_images)
            index._set_segments([merged])
            for entry in entries:
                shutil.rmtree(folder / entry["folder"])
            entries = [segment_entry(name, merged, checksums)]
        index.idf = idf
        index._set_segments(index.segments)  # weights of the kernel written
        write_index_files(folder, index, entries)
        (folder / _PROGRESS).unlink(missing_ok=True)
        try:
            move_into_place(folder, path, overwrite=overwrite)
        except FileExistsError:  # another process's index took the place
            shutil.rmtree(folder, ignore_errors=True)
            raise
    return read_segmented_index(path, read_record(path), mmap=True)


def building_folder(path: Path) -> Path:
    """The hidden folder in which the index ``path`` is built."""
    return path.parent / f".{path.name}.building"


def _empty(folder: Path) -> None:
    """Remove what an earlier build left in ``folder``."""
    for child in folder.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()


def _record_progress(folder: Path, index: ASMKIndex, written: list, idf: bool):
    """``building.json``: what the build has written so far, replaced
    atomically after each segment."""
    record = {
        "format": _BUILD_FORMAT,
        "codebook": index.codebook.fingerprint,
        "settings": {**kernel_settings(index), "idf": idf},
        "n_images": index.n_images,
        "segments": [
            segment_entry(segment_name(number), segment, checksums)
            for number, (segment, checksums) in enumerate(written)
        ],
    }
    with atomic_write(folder / _PROGRESS) as handle:
        handle.write(json.dumps(record, indent=2).encode())


def _resumed(
    folder: Path, descriptor_sets, codebook: Codebook, settings: dict, idf: bool
):
    """The index of the segments an interrupted build wrote in ``folder``
    (None when there are none), and those segments with their checksums."""
    if not (folder / _PROGRESS).is_file():
        _empty(folder)
        return None, []
    record = read_folder_json(folder, _PROGRESS, dict, "vlad ASMK index build")
    # The settings and source as build_asmk_index checks and records them.
    wanted = empty_index(codebook, parts_record(descriptor_sets), **settings)
    expected = {**kernel_settings(wanted), "idf": idf}
    if record.get("codebook") != codebook.fingerprint:
        raise VladError(
            f"{folder} is a build of the index with another codebook "
            f"({record.get('codebook')}); pass resume=False to start again"
        )
    if record.get("settings") != expected:
        raise VladError(
            f"{folder} is a build of the index with other settings "
            f"({record.get('settings')}); pass resume=False to start again"
        )
    segments, names = [], []
    for entry in record.get("segments") or []:
        first = segments[-1].stop_image if segments else 0
        segment, segment_names = read_segment(
            folder, entry, first, codebook, expected["binary"], True, True
        )
        segments.append(segment)
        names.extend(segment_names)
    if not segments:
        return None, []
    index = ASMKIndex._from_segments(
        codebook,
        names,
        segments,
        **{**kernel_settings(wanted), "idf": False},
        source=wanted.source,
    )
    checksums = [entry["checksums"] for entry in record["segments"]]
    return index, list(zip(segments, checksums, strict=True))


def _parts_after(descriptor_sets, done: list[str], given, folder: Path):
    """The parts of ``descriptor_sets`` after the images ``done`` (by name),
    which must be its first, as a resumed build indexed them; those are not
    read again."""
    names = given if given is not None else parts_names(descriptor_sets)
    if names is None:  # bare arrays: numbered
        names = [str(position) for position in range(len(descriptor_sets))]
    if list(names[: len(done)]) != list(done):
        raise VladError(
            f"{folder} is a build of the index from other descriptors (its "
            f"first {len(done)} images are not these); pass resume=False to "
            "start again"
        )
    try:
        return descriptor_parts(descriptor_sets, len(done))
    except ValueError:
        raise VladError(
            f"{folder} is a build of the index from the descriptors split "
            "otherwise (into other shards); pass resume=False to start again"
        ) from None


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
