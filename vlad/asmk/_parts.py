"""Descriptor sets as ASMK reads them: a part at a time (a folder of
shards shard by shard, hloc's features a few hundred images at a time), with
their record and names; names checked against the images they name; the
entries (image, word, code) they make."""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Iterator

import numpy as np

from vlad.asmk._kernel import aggregate_residuals, encode_residuals
from vlad.asmk._segments import ASMKSegment, segment_from_entries
from vlad.core._descriptors import DescriptorSets, as_descriptor_sets
from vlad.core._validation import checked_names
from vlad.errors import VladError

__all__ = [
    "descriptor_entries",
    "new_segment",
    "descriptor_parts",
    "parts_names",
    "parts_record",
    "renamed",
]


#: Images read at a time from descriptor sets read lazily (hloc's files).
_PART_IMAGES = 256


def _read_lazily(descriptor_sets) -> bool:
    """Whether ``descriptor_sets`` is read from disk a part at a time: a
    folder of shards, or hloc's local features."""
    return not isinstance(descriptor_sets, DescriptorSets) and hasattr(
        descriptor_sets, "between"
    )


def descriptor_parts(descriptor_sets, start: int = 0) -> Iterator[DescriptorSets]:
    """Descriptor sets a part at a time: a folder of shards shard by shard,
    hloc's local features :data:`_PART_IMAGES` images at a time, from the
    image ``start`` on, which must begin a part (those before are not read).

    Raises
    ------
    ValueError
        ``start`` is not where a part begins.
    """
    n_images = len(descriptor_sets)
    if hasattr(descriptor_sets, "n_shards"):
        bounds = [int(bound) for bound in descriptor_sets.starts]
    elif _read_lazily(descriptor_sets):
        bounds = [*range(0, n_images, _PART_IMAGES), n_images]
    else:
        bounds = [0, n_images]
    if start not in bounds:
        raise VladError(f"image {start} does not begin a part of the descriptors")
    return _parts_from(descriptor_sets, bounds, start)


def _parts_from(descriptor_sets, bounds: list[int], start: int):
    for number, (first, stop) in enumerate(itertools.pairwise(bounds)):
        if first < start:
            continue
        if hasattr(descriptor_sets, "n_shards"):
            yield descriptor_sets.shard(number)
        elif _read_lazily(descriptor_sets):
            yield descriptor_sets.between(first, stop)
        else:
            yield as_descriptor_sets(descriptor_sets)


def parts_record(descriptor_sets) -> dict:
    if _read_lazily(descriptor_sets):
        return dict(descriptor_sets.metadata)
    return dict(as_descriptor_sets(descriptor_sets).metadata)


def parts_names(descriptor_sets) -> list[str] | None:
    """The names of descriptor sets; None for bare arrays, which have none."""
    if _read_lazily(descriptor_sets) or isinstance(descriptor_sets, DescriptorSets):
        return list(descriptor_sets.names)
    return None


def renamed(result, name: str):
    return dataclasses.replace(result, query=name)


def descriptor_entries(
    descriptor_sets,
    checked: Callable[[DescriptorSets], DescriptorSets],
    quantize: Callable[[np.ndarray, int], np.ndarray],
    centers: np.ndarray,
    binary: bool,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """The entries of images to index, a part at a time: each descriptor
    assigned to its nearest word, residuals summed per image and word and
    encoded.

    Returns
    -------
    images, words : ndarray of int64 of shape (n_entries,)
        Each entry's image (counted from 0) and word.
    codes : ndarray of shape (n_entries, width)
    n_images : int
        Images read, with descriptors or not.
    """
    centers = np.asarray(centers, np.float32)
    blocks, n_images = [], 0
    for sets in descriptor_parts(descriptor_sets):
        sets = checked(sets)
        images, words, residuals = aggregate_residuals(
            sets.descriptors, sets.offsets, quantize(sets.descriptors, 1), centers
        )
        blocks.append((images + n_images, words, encode_residuals(residuals, binary)))
        n_images += len(sets)
    images, words, codes = (np.concatenate(part) for part in zip(*blocks, strict=True))
    return images, words, codes, n_images


def new_segment(index, descriptor_sets, names) -> tuple[ASMKSegment, list[str]]:
    """The segment of new images for ``index`` (an :class:`ASMKIndex`; they
    are numbered after its images) and their names."""
    images, words, codes, added = descriptor_entries(
        descriptor_sets,
        lambda sets: index._checked_sets(sets, "descriptor_sets"),
        index._quantizer(),
        index.codebook.centers,
        index.binary,
    )
    names = checked_names(
        parts_names(descriptor_sets) if names is None else names,
        added,
        "images",
        index.n_images,
    )
    segment = segment_from_entries(
        images, words, codes, index.n_words, index.n_images, added
    )
    return segment, names
