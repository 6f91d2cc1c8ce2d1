"""ASMK index folders of format version 2: the inverted file in segments,
each written once, opened without reading its entries.

A folder holds::

    index.json                 format, version 2, kernel settings, source, and
                               the segments in order (folder, first image,
                               images, entries)
    codebook.npz
    segment-00000/             one per build, append or merge
        segment.json           its images, entries, words, codes and codebook
        names.json             its images' names
        word_offsets.npy       int64 (K + 1,)
        entry_images.npy       int32 (entries,), image numbers in the index
        codes.npy              uint8 sign bits or float32 residuals
        image_entries.npy      int32 (images,), words of each image
    self-similarities-00000.npy   with idf only: float64 (images,)
    quantizer.npy              with an approximate quantizer only: its index
                               over the words, in faiss's format (uint8)

``index.json`` is written last, atomically, and names every file that
belongs to the index with its SHA-256 (those of a segment in its entry): a
writer killed before it leaves the index as it was, and what it wrote is
removed by the next writer. Reading checks the record, the segments'
records and the arrays' headers and sizes against each other (a truncated
file, a segment of another codebook, segments that disagree are refused in
one line) and every file's checksum, but for the entries of an index mapped
whose entries take more than :data:`CHECKED_MAPPED_BYTES`: those are mapped
without a read (only the word offsets are read, 8 bytes a word and
segment), their checksums compared when asked (``check_entries=True``).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from vlad._version import __version__
from vlad.asmk._index import ASMKIndex
from vlad.asmk._kernel import check_kernel_parameters, code_dtype, code_width
from vlad.asmk._quantizer import EXACT, WordQuantizer
from vlad.asmk._segments import ASMKSegment
from vlad.core._codebook import Codebook
from vlad.core._files import read_numpy_file
from vlad.errors import DamagedIndexError
from vlad.formats._folders import replace_folder
from vlad.search._index_folders import (
    CHECKSUMS,
    RECORD_NAME,
    check_checksums,
    check_finite_member,
    file_checksum,
    folder_member,
    read_folder_json,
)

__all__ = [
    "CHECKED_MAPPED_BYTES",
    "ENTRY_FILES",
    "QUANTIZER",
    "SEGMENTED_VERSION",
    "SEGMENT_FORMAT",
    "SEGMENT_NAME",
    "SELF_SIMILARITIES",
    "damaged",
    "kernel_settings",
    "member",
    "read_record",
    "read_segment_arrays",
    "read_segment",
    "read_segmented_index",
    "record_text",
    "segment_entry",
    "segment_name",
    "settings_of",
    "similarities_name",
    "write_index_files",
    "write_segment_files",
    "write_segmented_index",
]

#: The format version of folders whose inverted file is in segments.
SEGMENTED_VERSION = 2
SEGMENT_FORMAT = "vlad asmk segment"
KIND = "vlad ASMK index"
SEGMENT_NAME = re.compile(r"segment-([0-9]{5,})\Z")
SELF_SIMILARITIES = re.compile(r"self-similarities-([0-9]{5,})\.npy\Z")
#: The index over the words of an approximate quantizer, in faiss's format.
QUANTIZER = "quantizer.npy"
#: A segment's files of entries, the bulk of an index.
ENTRY_FILES = ("entry_images.npy", "codes.npy")
#: The segment's other files, each checked whenever the index is read.
_SMALL_FILES = ("segment.json", "names.json", "word_offsets.npy", "image_entries.npy")
#: Entries' bytes (all segments) up to which a mapped index's entry files
#: are checksummed when opened (a read of at most this much); a larger
#: mapped index is opened without reading them.
CHECKED_MAPPED_BYTES = 256 << 20


def write_segmented_index(
    index: ASMKIndex, path: str | os.PathLike, *, overwrite: bool = False
) -> None:
    """Write ``index`` to a new folder ``path``, whole or not at all, its
    segments as they are (see :meth:`ASMKIndex.save`)."""
    with replace_folder(path, overwrite=overwrite) as folder:
        entries = []
        for number, segment in enumerate(index.segments):
            name = segment_name(number)
            (folder / name).mkdir()
            checksums = write_segment_files(
                folder / name,
                segment,
                index.names[segment.first_image : segment.stop_image],
                index,
                index.codebook.fingerprint,
            )
            entries.append(segment_entry(name, segment, checksums))
        write_index_files(folder, index, entries)


def write_index_files(folder: Path, index: ASMKIndex, entries: list[dict]) -> None:
    """The files of a new folder besides its segments (named by ``entries``):
    the codebook, the self-similarities of an idf index, the index over the
    words of an approximate quantizer, and ``index.json``, last."""
    index.codebook.save(folder / "codebook.npz")
    similarities = None
    if index.idf:
        number = SEGMENT_NAME.fullmatch(entries[-1]["folder"]).group(1)
        similarities = similarities_name(int(number))
        np.save(folder / similarities, index._statistics_now().self_similarities)
    quantizer = index._quantizer()
    if not quantizer.exact:
        np.save(folder / QUANTIZER, quantizer.to_bytes())
    (folder / RECORD_NAME).write_text(record_text(folder, index, entries, similarities))


def read_segment_arrays(
    place: Path, first_image: int, n_images: int, mmap: bool = True
) -> ASMKSegment:
    """The segment written in the folder ``place`` (by this process: its
    arrays are not checked)."""
    arrays = {
        name: np.load(place / f"{name}.npy", mmap_mode="r" if mmap else None)
        for name in _ARRAY_NAMES
    }
    return _segment_of(first_image, n_images, arrays)


#: A segment's arrays, in ASMKSegment's order.
_ARRAY_NAMES = ("word_offsets", "entry_images", "codes", "image_entries")


def _segment_of(first_image: int, n_images: int, arrays: dict) -> ASMKSegment:
    return ASMKSegment(first_image, n_images, *(arrays[name] for name in _ARRAY_NAMES))


def read_segmented_index(
    folder: Path, record: dict, *, mmap: bool, check_entries: bool | None = None
) -> ASMKIndex:
    """The index of a folder of format version 2 whose ``index.json`` says
    ``record`` (see :func:`vlad.asmk.load_asmk_index`).

    ``check_entries`` (None: unless ``mmap`` and the entries take more than
    :data:`CHECKED_MAPPED_BYTES`) compares the checksums of the segments'
    entry files too, and the residuals' values of full ASMK.

    Raises
    ------
    DamagedIndexError
        One line: a record, a segment or an array that disagrees with the
        others, a truncated array, a segment of another codebook, a file
        whose checksum is not the one recorded.
    """
    settings = _checked_settings(folder, record)
    checksums = record.get(CHECKSUMS)
    if not isinstance(checksums, dict):
        damaged(folder, f"{RECORD_NAME} records no {CHECKSUMS} of its files")
    top_files = ["codebook.npz"]
    if settings["quantizer"] != EXACT:
        top_files.append(QUANTIZER)
    if settings["idf"] and isinstance(record.get("self_similarities"), str):
        top_files.append(record["self_similarities"])
    check_checksums(folder, record, top_files, KIND)
    codebook = Codebook.load(member(folder, "codebook.npz"))
    fingerprint = codebook.fingerprint
    recorded = (record.get("source") or {}).get("codebook") or {}
    if recorded.get("fingerprint", fingerprint) != fingerprint:
        damaged(
            folder,
            f"codebook.npz has fingerprint {fingerprint} but index.json says "
            f"{recorded.get('fingerprint')}",
        )
    entries = record.get("segments")
    if not isinstance(entries, list) or not entries:
        damaged(folder, "index.json lists no segments")
    if check_entries is None:
        check_entries = (
            not mmap
            or _entry_bytes(
                entries, code_width(codebook.n_features, settings["binary"]), settings
            )
            <= CHECKED_MAPPED_BYTES
        )
    segments, names = [], []
    for position, entry in enumerate(entries):
        expected_first = segments[-1].stop_image if segments else 0
        segment, segment_names = read_segment(
            folder, entry, expected_first, codebook, settings["binary"], mmap,
            check_entries,
        )  # fmt: skip
        if position == 0 and entry.get("first_image") != 0:
            damaged(folder, "its first segment does not start at image 0")
        segments.append(segment)
        names.extend(segment_names)
    totals = (len(names), sum(segment.n_entries for segment in segments))
    if totals != (record.get("n_images"), record.get("n_entries")):
        damaged(
            folder,
            f"its segments hold {totals[0]} images and {totals[1]} entries but "
            f"index.json says {record.get('n_images')} and "
            f"{record.get('n_entries')}",
        )
    similarities = None
    if settings["idf"]:
        similarities = _read_similarities(folder, record, len(names), mmap)
    source = record.get("source")
    return ASMKIndex._from_segments(
        codebook,
        names,
        segments,
        self_similarities=similarities,
        word_quantizer=_read_quantizer(folder, settings, codebook),
        source=source if isinstance(source, dict) else None,
        **settings,
    )


def _entry_bytes(entries: list, width: int, settings: dict) -> int:
    """The bytes of the entries the segments ``entries`` of index.json
    record (image numbers and codes)."""
    per_entry = 4 + width * np.dtype(code_dtype(settings["binary"])).itemsize
    counts = [entry.get("n_entries") if isinstance(entry, dict) else 0
              for entry in entries]  # fmt: skip
    return per_entry * sum(count for count in counts if isinstance(count, int))


def _read_quantizer(folder: Path, settings: dict, codebook: Codebook):
    """The index over the words of an approximate quantizer (None for the
    exact one, made when first needed)."""
    if settings["quantizer"] == EXACT:
        return None
    serialized = read_numpy_file(member(folder, QUANTIZER), "vlad ASMK quantizer")
    if serialized.dtype != np.uint8 or serialized.ndim != 1:
        damaged(folder, f"{QUANTIZER} holds {serialized.dtype} of shape "
                 f"{serialized.shape}, not bytes")  # fmt: skip
    try:
        return WordQuantizer.from_bytes(
            codebook.centers,
            settings["quantizer"],
            settings["quantizer_parameters"],
            serialized,
        )
    except ValueError as error:
        damaged(folder, f"{QUANTIZER}: {error}")


def read_record(folder: Path) -> dict:
    return read_folder_json(folder, "index.json", dict, KIND)


def _checked_settings(folder: Path, record: dict) -> dict:
    binary, idf = record.get("binary"), record.get("idf")
    if not isinstance(binary, bool) or not isinstance(idf, bool):
        damaged(folder, "index.json has no binary or idf setting")
    try:
        alpha, threshold = check_kernel_parameters(
            record.get("alpha"), record.get("threshold")
        )
    except (TypeError, ValueError) as error:
        damaged(folder, str(error))
    quantizer = record.get("quantizer", EXACT)
    parameters = record.get("quantizer_parameters")
    if not isinstance(quantizer, str) or not isinstance(parameters, (str, type(None))):
        damaged(folder, "index.json names its quantizer otherwise than by a string")
    return {
        "binary": binary,
        "alpha": alpha,
        "threshold": threshold,
        "idf": idf,
        "quantizer": quantizer,
        "quantizer_parameters": parameters,
    }


def kernel_settings(index: ASMKIndex) -> dict:
    """The settings that make an index's entries what they are (idf aside)."""
    return {
        "binary": index.binary,
        "alpha": index.alpha,
        "threshold": index.threshold,
        "quantizer": index.quantizer,
        "quantizer_parameters": index.quantizer_parameters,
    }


def settings_of(index: ASMKIndex) -> dict:
    """The keywords of ``ASMKIndex._from_segments`` that carry ``index``'s
    settings to an index of other segments."""
    return {
        **kernel_settings(index),
        "idf": index.idf,
        "word_quantizer": index._quantizer(),
    }


def read_segment(
    folder: Path,
    entry,
    first_image: int,
    codebook: Codebook,
    binary: bool,
    mmap: bool,
    check_entries: bool,
) -> tuple[ASMKSegment, list[str]]:
    """One segment, checked against its entry in index.json (the checksums
    of its files: of its entries' files with ``check_entries`` only), its own
    record, the codebook and the segment before it."""
    name = entry.get("folder") if isinstance(entry, dict) else None
    if not isinstance(name, str) or SEGMENT_NAME.fullmatch(name) is None:
        damaged(folder, f"index.json lists a segment {entry!r}")
    place = folder / name
    if not place.is_dir():
        damaged(folder, f"no {name}")
    recorded = entry.get(CHECKSUMS)
    if not isinstance(recorded, dict):
        damaged(folder, f"{RECORD_NAME} records no {CHECKSUMS} of {name}")
    checked = _SMALL_FILES + (ENTRY_FILES if check_entries else ())
    try:
        check_checksums(place, {CHECKSUMS: recorded}, checked, "vlad ASMK segment")
    except DamagedIndexError:
        # A segment of another index is better told by what it is.
        try:
            own = read_folder_json(place, "segment.json", dict, "vlad ASMK segment")
        except DamagedIndexError:
            own = {}
        if "codebook" in own:
            _check_segment_record(folder, place, own, codebook)
        raise
    own = read_folder_json(place, "segment.json", dict, "vlad ASMK segment")
    _check_segment_record(folder, place, own, codebook)
    width = code_width(codebook.n_features, binary)
    expected = {
        "first_image": first_image,
        "n_images": entry.get("n_images"),
        "n_entries": entry.get("n_entries"),
        "n_words": codebook.n_clusters,
        "binary": binary,
        "code_width": width,
    }
    disagreeing = [key for key, value in expected.items() if own.get(key) != value]
    if entry.get("first_image") != first_image:
        disagreeing.insert(0, "first_image")
    if disagreeing:
        key = disagreeing[0]
        raise DamagedIndexError(
            f"{folder} is a damaged {KIND}: its segments disagree ({name} has "
            f"{key}={own.get(key)!r}, index.json and the segments before it "
            f"{key}={expected[key]!r})"
        )
    n_images, n_entries = expected["n_images"], expected["n_entries"]
    if not all(
        isinstance(value, int) and value >= 0 for value in (n_images, n_entries)
    ):
        damaged(folder, f"index.json lists {name} with {n_images!r} images")
    shapes = {
        "word_offsets": (np.int64, (codebook.n_clusters + 1,)),
        "entry_images": (np.int32, (n_entries,)),
        "codes": (code_dtype(binary), (n_entries, width)),
        "image_entries": (np.int32, (n_images,)),
    }
    arrays = {}
    for array_name, (dtype, shape) in shapes.items():
        array = read_numpy_file(
            folder_member(place, f"{array_name}.npy", "vlad ASMK segment"),
            "vlad ASMK segment file",
            mmap=mmap,
        )
        if array.dtype != dtype or array.shape != shape:
            damaged(
                folder,
                f"{name}/{array_name}.npy holds {array.dtype} of shape "
                f"{array.shape}, not {np.dtype(dtype)} of shape {shape}",
            )
        arrays[array_name] = array
    offsets = np.asarray(arrays["word_offsets"])
    if offsets[0] != 0 or offsets[-1] != n_entries or np.any(np.diff(offsets) < 0):
        damaged(folder, f"{name}/word_offsets.npy does not cover its entries")
    if check_entries and not binary:
        check_finite_member(arrays["codes"], place / "codes.npy", KIND)
    names = read_folder_json(place, "names.json", list, "vlad ASMK segment")
    if not all(isinstance(image, str) for image in names):
        damaged(folder, f"{name}/names.json holds names that are not strings")
    if len(names) != n_images:
        damaged(
            folder,
            f"{name}/names.json names {len(names)} images; the segment holds "
            f"{n_images}",
        )
    return _segment_of(first_image, n_images, arrays), names


def _check_segment_record(
    folder: Path, place: Path, own: dict, codebook: Codebook
) -> None:
    """Refuse the segment ``place`` if its record ``own`` says it is none, or
    a segment of another codebook."""
    if own.get("format") != SEGMENT_FORMAT:
        damaged(folder, f"{place.name}/segment.json does not say it is a segment")
    fingerprint = (own.get("codebook") or {}).get("fingerprint")
    if fingerprint != codebook.fingerprint:
        raise DamagedIndexError(
            f"{place} is a segment of another codebook (fingerprint "
            f"{fingerprint}; the index's is {codebook.fingerprint})"
        )


def _read_similarities(folder: Path, record: dict, n_images: int, mmap: bool):
    name = record.get("self_similarities")
    if not isinstance(name, str) or SELF_SIMILARITIES.fullmatch(name) is None:
        damaged(folder, "index.json names no self-similarities for its idf")
    array = read_numpy_file(
        member(folder, name), "vlad ASMK self-similarities file", mmap=mmap
    )
    if array.dtype != np.float64 or array.shape != (n_images,):
        damaged(
            folder,
            f"{name} holds {array.dtype} of shape {array.shape}, not float64 "
            f"of shape ({n_images},)",
        )
    return array


def write_segment_files(
    place: Path,
    segment: ASMKSegment,
    names: Sequence[str],
    index: ASMKIndex,
    fingerprint: str,
    *,
    entry_checksums: dict[str, str] | None = None,
) -> dict[str, str]:
    """A segment's files in the (new, empty) folder ``place``; with
    ``entry_checksums``, its entries' files are there already, of these
    checksums. Returns the checksum of each file by name, for the segment's
    entry in index.json."""
    arrays = {
        "word_offsets": segment.word_offsets,
        "image_entries": segment.image_entries,
    }
    if entry_checksums is None:
        arrays["entry_images"] = segment.entry_images
        arrays["codes"] = segment.codes
    for array_name, array in arrays.items():
        np.save(place / f"{array_name}.npy", np.ascontiguousarray(array))
    (place / "names.json").write_text(json.dumps(list(names)))
    record = {
        "format": SEGMENT_FORMAT,
        "vlad_version": __version__,
        "first_image": segment.first_image,
        "n_images": segment.n_images,
        "n_entries": segment.n_entries,
        "n_words": segment.n_words,
        "binary": index.binary,
        "code_width": int(segment.codes.shape[1]),
        "codebook": {"fingerprint": fingerprint},
    }
    (place / "segment.json").write_text(json.dumps(record, indent=2) + "\n")
    checked = _SMALL_FILES + (ENTRY_FILES if entry_checksums is None else ())
    return {
        **{name: file_checksum(place / name) for name in checked},
        **(entry_checksums or {}),
    }


def segment_entry(name: str, segment: ASMKSegment, checksums: dict[str, str]) -> dict:
    return {
        "folder": name,
        "first_image": segment.first_image,
        "n_images": segment.n_images,
        "n_entries": segment.n_entries,
        CHECKSUMS: checksums,
    }


def record_text(
    folder: Path, index: ASMKIndex, entries: list[dict], similarities
) -> str:
    """``index.json`` of the folder whose segments are ``entries``: the
    checksums of the files beside them are computed here (the codebook, the
    self-similarities and the index over the words: at most tens of MB)."""
    from vlad.asmk._files import FORMAT

    names = ["codebook.npz", similarities]
    if not index._quantizer().exact:
        names.append(QUANTIZER)
    record = {
        "format": FORMAT,
        "format_version": SEGMENTED_VERSION,
        "vlad_version": __version__,
        **index.record(),
        "segments": entries,
        "self_similarities": similarities,
        "source": index.source,
        CHECKSUMS: {
            name: file_checksum(folder / name) for name in names if name is not None
        },
    }
    return json.dumps(record, indent=2) + "\n"


def segment_name(number: int) -> str:
    return f"segment-{number:05d}"


def similarities_name(number: int) -> str:
    return f"self-similarities-{number:05d}.npy"


def member(folder: Path, name: str) -> Path:
    return folder_member(folder, name, KIND)


def damaged(folder: Path, why: str):
    raise DamagedIndexError(f"{folder} is a damaged {KIND}: {why}")
