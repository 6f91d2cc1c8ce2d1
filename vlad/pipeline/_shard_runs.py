"""One engine for runs into a folder of shards, whatever the shards hold.

A run is planned once (:func:`plan_shard_run`: its items fall into shards of
``shard_size``, each shard gets a key, and a resumed run keeps the shards
whose files are whole and of the same key), its shards are made in this
process (:func:`make_shards_here`) or on a Dask cluster
(:func:`vlad.pipeline._cluster.make_shards_on_cluster`), each written
atomically as soon as it is made, and the manifest is written last
(:func:`commit_shard_run`). The shards' bytes do not depend on where they
were made, nor on where a run was interrupted.

What a shard holds and how it is made is the run's :class:`ShardKind`: VLAD
vectors (:mod:`vlad.pipeline._vector_shards`) or descriptors and keypoints
(:mod:`vlad.pipeline._descriptor_shards`). Files are laid out as
:mod:`vlad.formats._shards` says.
"""

from __future__ import annotations

import abc
import dataclasses
import logging
import os
import types
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from vlad.core._pool import Progress
from vlad.formats._shards import ShardWriter, shard_key
from vlad.pipeline._cluster import make_shards_on_cluster

__all__ = [
    "Shard",
    "ShardKind",
    "ShardRun",
    "commit_shard_run",
    "make_shards_here",
    "plan_shard_run",
    "run_shards",
]

logger = logging.getLogger(__name__)


@dataclasses.dataclass
class Shard:
    """One shard, made and not yet written.

    Attributes
    ----------
    array : ndarray of shape (n_rows, n_columns)
        Its main array (vectors or descriptors).
    record : dict
        What is written beside it: ``{"key", "names", ...}``.
    extras : dict of str to ndarray
        Its other arrays, each ``(n_rows, columns)``, by name.
    """

    array: np.ndarray
    record: dict
    extras: dict[str, np.ndarray] = dataclasses.field(default_factory=dict)


class ShardKind(abc.ABC):
    """What the shards of a run hold, and how one is made: the strategy the
    engine runs.

    Attributes
    ----------
    noun : str
        What the shards hold, for messages (``"vector"``, ``"descriptor"``).
    settings : dict
        What every shard of the run shares (hashed into each shard's key).
    n_columns : int
        Columns of a shard's main array.
    extras : dict of str to int
        Columns of each extra array, by name.
    """

    noun: str
    settings: dict
    n_columns: int
    extras: Mapping[str, int] = types.MappingProxyType({})

    def n_rows(self, record: dict) -> int:
        """Rows of a shard's arrays, as its record counts them (one per name)."""
        return len(record["names"])

    @abc.abstractmethod
    def identities(self, items: list) -> list:
        """What of a shard's items is hashed into its key (JSON)."""

    @abc.abstractmethod
    def stream(
        self, items: Sequence, n_jobs: int | None, progress: Progress | None
    ) -> Iterator:
        """What :meth:`make` takes of ``items``, in order, one per item."""

    @abc.abstractmethod
    def make(
        self, results: Iterator, n_items: int, key: str, n_jobs: int | None
    ) -> Shard:
        """The shard of the next ``n_items`` of ``results``, of key ``key``."""

    @abc.abstractmethod
    def manifest(self, run: ShardRun) -> dict:
        """The manifest of ``run``, whose shards are all written."""

    @abc.abstractmethod
    def open(self, folder: str | os.PathLike) -> Any:
        """The complete folder, opened."""

    def for_cluster(self, client: Any) -> tuple[ShardKind, tuple]:
        """What the Dask workers are sent: this kind and the resources
        :meth:`on_worker` takes back (scattered or read there, once per
        worker, rather than sent with every task)."""
        return self, ()

    def on_worker(self, *resources: Any) -> ShardKind:
        """The kind, whole again on a worker, from :meth:`for_cluster`'s."""
        return self


@dataclasses.dataclass
class ShardRun:
    """A run into a folder of shards: what it writes and what is left to make.

    Attributes
    ----------
    writer : ShardWriter
        The folder.
    kind : ShardKind
    groups : list of list
        The items of each shard.
    keys : list of str
        Each shard's key.
    shards : list of dict or None
        Each shard's record once written (or kept); None while to be made.
    """

    writer: ShardWriter
    kind: ShardKind
    groups: list[list]
    keys: list[str]
    shards: list[dict | None]

    @property
    def todo(self) -> list[int]:
        """The indices of the shards still to make."""
        return [index for index, shard in enumerate(self.shards) if shard is None]

    @property
    def n_items(self) -> int:
        """Items of all shards."""
        return sum(len(group) for group in self.groups)


def plan_shard_run(
    kind: ShardKind,
    items: Sequence,
    folder: str | os.PathLike,
    *,
    shard_size: int,
    overwrite: bool,
    resume: bool,
) -> ShardRun:
    """Open ``folder`` for a run of ``items`` in shards of ``shard_size``;
    with ``resume``, keep its finished shards (whole, of the same key).

    Raises
    ------
    FileExistsError, ValueError
        As :class:`vlad.formats._shards.ShardWriter`.
    """
    writer = ShardWriter(folder, overwrite=overwrite, resume=resume, kind=kind.noun)
    groups = [
        list(items[start : start + shard_size])
        for start in range(0, len(items), shard_size)
    ]
    settings = kind.settings
    keys = [shard_key(settings, kind.identities(group)) for group in groups]
    shards = [
        writer.finished(
            index,
            key,
            kind.n_columns,
            n_rows=kind.n_rows,
            extras=dict(kind.extras),
        )
        for index, key in enumerate(keys)
    ]
    run = ShardRun(writer, kind, groups, keys, shards)
    n_kept = len(groups) - len(run.todo)
    if n_kept:
        logger.info(
            "kept %d finished shard%s of %d",
            n_kept,
            "" if n_kept == 1 else "s",
            len(groups),
        )
    return run


def make_shards_here(
    run: ShardRun, n_jobs: int | None, progress: Progress | None = None
) -> None:
    """Make the shards ``run`` still lacks in this process, one stream over
    their items on ``n_jobs`` threads, writing each as it is made and filling
    in its record (``run.shards``)."""
    todo = run.todo
    n_kept = run.n_items - sum(len(run.groups[index]) for index in todo)
    results = run.kind.stream(
        [item for index in todo for item in run.groups[index]],
        n_jobs,
        None
        if progress is None
        else lambda done, total: progress(done + n_kept, run.n_items),
    )
    for index in todo:
        shard = run.kind.make(results, len(run.groups[index]), run.keys[index], n_jobs)
        run.writer.write(index, shard.array, shard.record, extras=shard.extras)
        run.shards[index] = shard.record
        del shard


def commit_shard_run(run: ShardRun) -> Any:
    """Write the manifest of a run whose shards are all written, and open it.

    Raises
    ------
    ValueError
        As the kind's manifest raises it (no item could be read).
    """
    run.writer.commit(run.kind.manifest(run))
    return run.kind.open(run.writer.folder)


def run_shards(
    kind: ShardKind,
    items: Sequence,
    folder: str | os.PathLike,
    *,
    shard_size: int,
    overwrite: bool,
    resume: bool,
    n_jobs: int | None = None,
    progress: Progress | None = None,
    client: Any = None,
) -> Any:
    """Plan, make (here, or on ``client``'s Dask cluster) and commit a run of
    ``items`` into ``folder``, and open it.

    Raises
    ------
    FileExistsError
        The folder exists, without ``overwrite`` or ``resume``.
    ValueError
        As the kind's manifest, or a folder that holds other files.
    RuntimeError
        A shard's task killed every Dask worker it ran on.
    """
    run = plan_shard_run(
        kind,
        items,
        folder,
        shard_size=shard_size,
        overwrite=overwrite,
        resume=resume,
    )
    if client is None:
        make_shards_here(run, n_jobs, progress)
    else:
        make_shards_on_cluster(run, client, progress=progress)
    return commit_shard_run(run)
