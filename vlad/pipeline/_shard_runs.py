"""One engine for runs of rows made a shard at a time, whatever the rows are
and wherever they go.

A run is planned once (:func:`plan_shard_run`: its items fall into shards of
the kind's ``shard_images``, each shard gets a key, and a resumed run keeps
the shards its sink says are finished, whole and of the same key), its
shards are made in this process (:func:`make_shards_here`) or on a Dask
cluster (:func:`vlad.pipeline._cluster.make_shards_on_cluster`), each handed
to the sink as soon as it is made, and the sink commits the run last
(:func:`commit_shard_run`). The rows do not depend on where they were made,
nor on where a run was interrupted.

What a shard holds and how it is made is the run's :class:`ShardKind`: VLAD
vectors (:mod:`vlad.pipeline._vector_kinds`) or descriptors and keypoints
(:mod:`vlad.pipeline._descriptor_shards`). Where its shards go is its sink
(:mod:`vlad.pipeline._sinks`): memory, a file, or a folder of shards laid out
as :mod:`vlad.formats._shards` says.
"""

from __future__ import annotations

import abc
import dataclasses
import logging
import os
import types
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from vlad.core._pool import Progress
from vlad.formats._shards import shard_key
from vlad.pipeline._cluster import make_shards_on_cluster
from vlad.pipeline._sinks import OutputFile, Shard, Sink

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


class ShardKind(abc.ABC):
    """What the shards of a run hold, and how one is made: the strategy the
    engine runs.

    Attributes
    ----------
    noun : str
        What the shards hold, for messages (``"vector"``, ``"descriptor"``).
    shard_images : int
        Items each shard covers.
    settings : dict
        What every shard of the run shares (hashed into each shard's key).
    n_columns : int
        Columns of a shard's main array.
    extras : dict of str to int
        Columns of each extra array, by name.
    files : dict of str to OutputFile
        The files the rows may be written to, by suffix (``".npy"``).
    """

    noun: str
    shard_images: int
    settings: dict
    n_columns: int
    extras: Mapping[str, int] = types.MappingProxyType({})
    files: Mapping[str, OutputFile] = types.MappingProxyType({})

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
        """The rows of a complete folder, opened."""

    @abc.abstractmethod
    def stack(self, shards: list[Shard]) -> Any:
        """The rows of ``shards``, one after the other, in memory (each shard
        is dropped from ``shards`` once copied)."""

    @abc.abstractmethod
    def result(self, run: ShardRun, rows: Any) -> Any:
        """What the run gives: its ``rows`` (stacked, or a folder opened) and
        what became of its items."""

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
    """A run of shards: what it makes and what is left to make.

    Attributes
    ----------
    sink : Sink
        Where its shards go.
    kind : ShardKind
    groups : list of list
        The items of each shard.
    keys : list of str
        Each shard's key.
    shards : list of dict or None
        Each shard's record once written (or kept); None while to be made.
    """

    sink: Sink
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


def plan_shard_run(kind: ShardKind, items: Sequence, sink: Sink) -> ShardRun:
    """A run of ``items`` in shards of ``kind.shard_images`` into ``sink``,
    which keeps the shards an interrupted run finished (whole, of the same
    key)."""
    size = kind.shard_images
    groups = [list(items[start : start + size]) for start in range(0, len(items), size)]
    settings = kind.settings
    keys = [shard_key(settings, kind.identities(group)) for group in groups]
    shards = [sink.finished(kind, index, key) for index, key in enumerate(keys)]
    run = ShardRun(sink, kind, groups, keys, shards)
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
    their items on ``n_jobs`` threads, handing each to the sink as it is made
    and filling in its record (``run.shards``)."""
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
        run.sink.write(index, shard)
        run.shards[index] = shard.record
        del shard


def commit_shard_run(run: ShardRun) -> Any:
    """The result of a run whose shards are all made, committed to its sink
    (a folder's manifest written last, a file written once).

    Raises
    ------
    ValueError
        As the kind's result raises it (no item could be read).
    """
    return run.sink.commit(run)


def run_shards(
    kind: ShardKind,
    items: Sequence,
    sink: Sink,
    *,
    n_jobs: int | None = None,
    progress: Progress | None = None,
    client: Any = None,
) -> Any:
    """Plan, make (here, or on ``client``'s Dask cluster) and commit a run of
    ``items`` into ``sink`` (see :func:`vlad.pipeline._sinks.open_sink`), and
    give its result.

    Raises
    ------
    ValueError
        As the kind's result raises it (no item could be read).
    RuntimeError
        A shard's task killed every Dask worker it ran on.
    """
    run = plan_shard_run(kind, items, sink)
    if client is None:
        make_shards_here(run, n_jobs, progress)
    else:
        make_shards_on_cluster(run, client, progress=progress)
    return commit_shard_run(run)
