"""Descriptor sets as ASMK reads them: a part at a time (a folder of
shards shard by shard, hloc's features a few hundred images at a time), with
their record and names; names checked against the images they name."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

from vlad.core._descriptors import DescriptorSets, as_descriptor_sets
from vlad.errors import VladError

__all__ = [
    "checked_names",
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


def descriptor_parts(descriptor_sets) -> Iterator[DescriptorSets]:
    """Descriptor sets a part at a time: a folder of shards shard by shard,
    hloc's local features :data:`_PART_IMAGES` images at a time."""
    if hasattr(descriptor_sets, "n_shards"):
        for shard in range(descriptor_sets.n_shards):
            yield descriptor_sets.shard(shard)
    elif _read_lazily(descriptor_sets):
        for start in range(0, len(descriptor_sets), _PART_IMAGES):
            yield descriptor_sets.between(start, start + _PART_IMAGES)
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


def checked_names(names, count: int, first: int) -> list[str]:
    if names is None:
        return [str(first + position) for position in range(count)]
    if isinstance(names, str):
        raise TypeError(f"names must be a sequence of str, not a str ({names!r})")
    names = [str(name) for name in names]
    if len(names) != count:
        raise VladError(f"{len(names)} names for {count} images")
    return names


def renamed(result, name: str):
    return dataclasses.replace(result, query=name)
