"""ASMK index folders changed in place: images appended as a new segment,
segments merged into one, one writer at a time.

Each change writes its new files beside the index's (a segment folder, the
self-similarities of an idf index), then replaces ``index.json``, which names
the files of the index, atomically: a change that fails or is killed leaves
the index as it was, and what it wrote is removed by the next change. A
change holds an advisory lock on the folder (a second writer is refused);
readers need none.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import re
import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

from vlad.asmk._index import ASMKIndex
from vlad.asmk._parts import new_segment
from vlad.asmk._segment_files import (
    SEGMENT_NAME,
    SEGMENTED_VERSION,
    SELF_SIMILARITIES,
    read_record,
    read_segmented_index,
    record_text,
    segment_entry,
    segment_name,
    settings_of,
    similarities_name,
    write_segment_files,
)
from vlad.asmk._segments import ASMKSegment, merge_segments
from vlad.core._writing import atomic_write
from vlad.errors import VladError
from vlad.formats._folders import remove_stale_folders, replace_folder

__all__ = [
    "append_asmk_index",
    "merge_asmk_index",
    "write_merged_segment",
    "writer_lock",
]

#: A segment folder being written (``.segment-00003.PID.XXXXXXXX.partial``).
_HIDDEN_SEGMENT = re.compile(r"\.(segment-[0-9]{5,})\.")


def append_asmk_index(
    path: str | os.PathLike,
    descriptor_sets,
    *,
    names: Sequence[str] | None = None,
) -> ASMKIndex:
    """Add images to an index folder as a new segment, touching nothing stored.

    The new images' entries are written as a segment of their own, then
    ``index.json`` is replaced (atomically) to name it: an append that fails
    or is killed leaves the index as it was. With idf, the images'
    self-similarities change with every image added, so they are computed
    again from every entry's image number (4 bytes an entry) and written
    beside; without idf, an append costs what it adds. Appends make
    segments, each read on its own by a search: merge them with
    :func:`merge_asmk_index` after many.

    Parameters
    ----------
    path : path-like
        An index folder written by :meth:`vlad.asmk.ASMKIndex.save`
        (format version 1 folders are refused: save them again).
    descriptor_sets : DescriptorSets, ShardedDescriptorSets or list of arrays
        The new images' descriptors, of the index's kind.
    names : sequence of str, optional
        Default the sets' names.

    Returns
    -------
    ASMKIndex
        The index as it now is, memory-mapped.

    Raises
    ------
    ValueError
        Not an index of segments, a damaged one, descriptors of another kind
        or width, another process changing the index at the same time.

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np
    >>> import vlad
    >>> from vlad.asmk import append_asmk_index, build_asmk_index
    >>> rng = np.random.default_rng(0)
    >>> codebook = vlad.Codebook(rng.standard_normal((32, 8)))
    >>> folder = os.path.join(tempfile.mkdtemp(), "index")
    >>> images = [rng.standard_normal((20, 8)) for _ in range(3)]
    >>> build_asmk_index(images[:2], codebook, names=["a", "b"]).save(folder)
    >>> index = append_asmk_index(folder, images[2:], names=["c"])
    >>> index.n_images, index.n_segments
    (3, 2)
    """
    folder = Path(path)
    with writer_lock(folder):
        record, index = _open_for_writing(folder)
        segment, new_names = new_segment(index, descriptor_sets, names)
        if segment.n_images == 0:
            return index
        number = _next_number(record)
        name = segment_name(number)
        with replace_folder(folder / name, overwrite=True) as written:
            checksums = write_segment_files(
                written, segment, new_names, index, index.codebook.fingerprint
            )
        grown = ASMKIndex._from_segments(
            index.codebook,
            [*index.names, *new_names],
            [*index.segments, segment],
            source=index.source,
            **settings_of(index),
        )
        similarities = record.get("self_similarities")
        if index.idf:
            similarities = similarities_name(number)
            with atomic_write(folder / similarities) as handle:
                np.save(handle, grown._statistics_now().self_similarities)
        entries = [*record["segments"], segment_entry(name, segment, checksums)]
        _commit(folder, grown, entries, similarities)
        _remove_unreferenced(folder, entries, similarities)
    return read_segmented_index(folder, read_record(folder), mmap=True)


def merge_asmk_index(path: str | os.PathLike) -> ASMKIndex:
    """Merge the segments of an index folder into one, in place.

    The merged segment is written beside the others (as much disk again as
    the entries take), a run of words at a time, then ``index.json`` names it
    alone and the old segments are removed. Searches give the same results
    before and after, faster with one segment.

    Parameters
    ----------
    path : path-like
        An index folder of format version 2.

    Returns
    -------
    ASMKIndex
        The merged index, memory-mapped.

    Raises
    ------
    ValueError
        Not an index of segments, a damaged one, another process changing it
        at the same time.
    """
    folder = Path(path)
    with writer_lock(folder):
        record, index = _open_for_writing(folder)
        if index.n_segments > 1:
            name = segment_name(_next_number(record))
            merged, checksums = write_merged_segment(
                folder / name, index, overwrite=True
            )
            entries = [segment_entry(name, merged, checksums)]
            similarities = record.get("self_similarities")
            _commit(folder, index, entries, similarities)
            _remove_unreferenced(folder, entries, similarities)
    return read_segmented_index(folder, read_record(folder), mmap=True)


def write_merged_segment(
    place: Path, index: ASMKIndex, *, overwrite: bool = False
) -> tuple[ASMKSegment, dict[str, str]]:
    """One segment of all of ``index``'s, written to the folder ``place``
    (whole or not at all) a run of words at a time, through the files; and
    the checksums of its files (those of the entries taken as they are
    written, not read back)."""
    n_entries = index.n_entries
    width = index.segments[0].codes.shape[1]
    dtype = index.segments[0].codes.dtype
    with replace_folder(place, overwrite=overwrite) as written:
        with (
            _new_array(written / "entry_images.npy", np.int32, (n_entries,)) as images,
            _new_array(written / "codes.npy", dtype, (n_entries, width)) as codes,
        ):
            merged = merge_segments(index.segments, entry_images=images, codes=codes)
        checksums = write_segment_files(
            written,
            merged,
            index.names,
            index,
            index.codebook.fingerprint,
            entry_checksums={
                "entry_images.npy": images.checksum(),
                "codes.npy": codes.checksum(),
            },
        )
    return merged, checksums


def _open_for_writing(folder: Path) -> tuple[dict, ASMKIndex]:
    from vlad.asmk._files import load_asmk_index

    index = load_asmk_index(folder, mmap=True)
    record = read_record(folder)
    if record.get("format_version", 1) < SEGMENTED_VERSION:
        raise VladError(
            f"{folder} is an ASMK index of format version "
            f"{record.get('format_version', 1)}, which cannot take segments: "
            "load it and save it again to a new folder"
        )
    return record, index


@contextlib.contextmanager
def _new_array(path: Path, dtype, shape: tuple[int, ...]) -> Iterator[_RowsInOrder]:
    """An ``.npy`` file of ``shape`` to fill a run of rows at a time, in
    order; flushed to the disk when the block ends."""
    with open(path, "wb") as handle:
        rows = _RowsInOrder(handle, np.dtype(dtype), shape)
        yield rows
        rows.finish()


class _RowsInOrder:
    """An ``.npy`` file being written from start to end: ``rows[start:stop] =
    values``, each run where the previous one stopped. Written through the
    file, not mapped, so that the pages written are the system's to keep or
    drop, not this process's; ``shape`` and ``dtype`` are the file's."""

    def __init__(self, handle, dtype: np.dtype, shape: tuple[int, ...]):
        self._handle, self.dtype, self.shape = handle, dtype, shape
        self._digest = hashlib.sha256()
        header = {
            "descr": np.lib.format.dtype_to_descr(dtype),
            "fortran_order": False,
            "shape": shape,
        }
        written = io.BytesIO()
        np.lib.format.write_array_header_1_0(written, header)
        self._write(written.getvalue())
        self._stop = 0

    def _write(self, data: bytes) -> None:
        self._handle.write(data)
        self._digest.update(data)

    def checksum(self) -> str:
        """``"sha256:HEX"`` of the bytes written, as ``file_checksum`` gives."""
        return "sha256:" + self._digest.hexdigest()

    def __setitem__(self, rows: slice, values: np.ndarray) -> None:
        if rows.start != self._stop:
            raise ValueError(f"rows from {rows.start}, not {self._stop}, written next")
        self._write(np.ascontiguousarray(values, self.dtype).data)
        self._stop = rows.stop

    def finish(self) -> None:
        if self._stop != self.shape[0]:
            raise ValueError(f"{self._stop} rows of {self.shape[0]} written")
        self._handle.flush()
        os.fsync(self._handle.fileno())


def _commit(folder: Path, index: ASMKIndex, entries, similarities) -> None:
    """Replace ``index.json`` (atomically): from now on it names ``entries``."""
    with atomic_write(folder / "index.json") as handle:
        handle.write(record_text(folder, index, entries, similarities).encode())


def _remove_unreferenced(folder: Path, entries, similarities) -> None:
    """Remove the segments and self-similarities that ``index.json`` no
    longer names (replaced ones, or a killed writer's)."""
    kept = {entry["folder"] for entry in entries} | {similarities}
    for path in folder.iterdir():
        if path.name in kept:
            continue
        if path.is_dir() and SEGMENT_NAME.fullmatch(path.name):
            shutil.rmtree(path, ignore_errors=True)
        elif path.is_file() and SELF_SIMILARITIES.fullmatch(path.name):
            with contextlib.suppress(OSError):
                path.unlink()
        elif _HIDDEN_SEGMENT.match(path.name):
            # A segment being written by a process that is gone.
            remove_stale_folders(folder / _HIDDEN_SEGMENT.match(path.name).group(1))


def _next_number(record: dict) -> int:
    """A number after every segment's that index.json names."""
    numbers = [
        int(SEGMENT_NAME.fullmatch(entry["folder"]).group(1))
        for entry in record["segments"]
    ]
    return max(numbers) + 1


@contextlib.contextmanager
def writer_lock(folder: Path, doing: str | None = None) -> Iterator[None]:
    """Hold the index folder's writer lock (an advisory lock on the folder
    itself, which leaves no file behind) for the block; refused in one line
    while another process holds it (saying it is ``doing``: "changing
    FOLDER" by default)."""
    if not folder.is_dir():
        if folder.exists():
            raise VladError(f"{folder} is not a vlad ASMK index: it is not a folder")
        raise FileNotFoundError(f"no such index folder: {folder}")
    try:
        import fcntl
    except ImportError:  # no advisory locks here: one writer at a time is on you
        yield
        return
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            doing = doing or f"changing {folder}"
            raise VladError(
                f"another process is {doing}; try again when it is done"
            ) from None
        yield
    finally:
        os.close(descriptor)
