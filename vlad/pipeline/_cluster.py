"""Folders of shards made on a Dask cluster: one task per shard.

Each task takes the paths of its shard's images, reads and encodes them on one
worker thread and writes the shard itself (atomically, under the name its key
gives), returning only the shard's small record (names, skipped and empty
images): no vector passes through the scheduler. The workers load the codebook
from its path once per process. A task whose worker dies, or that fails, is run
again by Dask and rewrites the same two files; the manifest is written by the
client once every shard is, so no row is lost or written twice. Any kind of
shard is made so (:class:`vlad.pipeline._shard_runs.ShardKind`): vectors,
whose workers read the codebook themselves, and descriptors.

Any cluster works: a :class:`distributed.LocalCluster` of worker processes on
this machine (:func:`dask_client` with no address) or an existing scheduler
(``tcp://host:8786``, as started by dask-jobqueue on SLURM or PBS,
dask-kubernetes, or ``dask scheduler`` and ``dask worker`` by hand). Images,
codebook and folder must be on a file system every worker sees under the same
paths. Needs dask.distributed (the ``dask`` extra).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vlad._extras import install_command
from vlad.core._codebook import Codebook
from vlad.core._parallel import resolve_n_jobs
from vlad.core._parameters import N_JOBS
from vlad.core._pool import Progress
from vlad.errors import VladError, VladTypeError
from vlad.formats._shards import write_shard
from vlad.images._decoder_messages import (
    capture_decoder_messages,
    capturing_decoder_messages,
)
from vlad.images._files import ImageFile

if TYPE_CHECKING:
    from vlad.pipeline._shard_runs import ShardKind, ShardRun

__all__ = [
    "TASK_RETRIES",
    "dask_client",
    "make_shard",
    "make_shards_on_cluster",
    "require_client",
    "require_distributed",
    "worker_codebook",
]

#: Times a task that raised is run again (a worker that dies is handled by the
#: scheduler's own ``distributed.scheduler.allowed-failures``, 3 by default).
TASK_RETRIES = 2
_INSTALL = install_command("dask")
_TRIM_SETTING = "distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_"
# Codebooks loaded in this process, by (path, fingerprint): a worker process
# reads each codebook once, whatever the number of tasks it runs.
_CODEBOOKS: dict[tuple[str, str], Codebook] = {}
_CODEBOOKS_LOCK = threading.Lock()
_MAX_CODEBOOKS = 4


def require_distributed() -> Any:
    """The ``distributed`` module, or a one-line ImportError saying how to
    install it."""
    try:
        import distributed
    except ImportError:
        raise ImportError(
            f"running on a Dask cluster requires dask.distributed; install it "
            f"with: {_INSTALL}"
        ) from None
    return distributed


@contextlib.contextmanager
def dask_client(
    scheduler: str | None = None, n_workers: int | None = None
) -> Iterator[Any]:
    """A Dask client: of an existing cluster, or of a local one made here.

    Parameters
    ----------
    scheduler : str, optional
        The scheduler's address (``tcp://host:8786``). Without it, a
        ``LocalCluster`` of ``n_workers`` processes of one thread each is
        started, and closed on exit.
    n_workers : int, optional
        Worker processes of the local cluster (None or -1: one per core).
        They start without Dask's ``MALLOC_TRIM_THRESHOLD_``, under which
        glibc maps and unmaps every large array afresh.

    Yields
    ------
    distributed.Client

    Raises
    ------
    ImportError
        Without dask.distributed (the ``dask`` extra).
    ValueError
        Both ``scheduler`` and ``n_workers``, or a bad ``n_workers``.
    OSError
        The scheduler cannot be reached.
    """
    distributed = require_distributed()
    if scheduler is not None:
        if n_workers is not None:
            raise VladError(
                f"n_workers sets the workers of a local cluster; got {n_workers!r} "
                f"with the scheduler {scheduler!r}, whose cluster has its own"
            )
        with distributed.Client(scheduler, timeout="30s") as client:
            yield client
        return
    # Named as given: the rule is n_jobs's.
    n_workers = resolve_n_jobs(
        dataclasses.replace(N_JOBS, name="n_workers").check(n_workers)
    )
    import dask.config

    # Dask sets MALLOC_TRIM_THRESHOLD_ for its workers, which also turns off
    # glibc's adaptive mmap threshold: every image and descriptor array is
    # then mapped and unmapped afresh, and encoding took 2.5 times as long.
    with dask.config.set({_TRIM_SETTING: None}):
        cluster = distributed.LocalCluster(
            n_workers=n_workers,
            threads_per_worker=1,
            processes=True,
            dashboard_address=":0",
        )
    with cluster, distributed.Client(cluster) as client:
        yield client


def make_shards_on_cluster(
    run: ShardRun, client: Any, *, progress: Progress | None = None
) -> None:
    """Make the shards ``run`` still lacks on ``client``'s cluster, one task
    each, and fill in their records (``run.shards``).

    Parameters
    ----------
    run : ShardRun
        As :func:`vlad.pipeline._shard_runs.plan_shard_run` gives it; its kind
        says what the workers are sent (:meth:`ShardKind.for_cluster`).
    client : distributed.Client
    progress : callable, optional
        Called as ``progress(n_done, n_total)`` with items as shards finish.

    Raises
    ------
    TypeError
        ``client`` is not a ``distributed.Client``.
    RuntimeError
        A shard's task killed every worker it ran on.
    ValueError, OSError
        As a task raised them (after :data:`TASK_RETRIES` more tries).
    """
    distributed = require_client(client)
    todo = run.todo
    if not todo:
        return
    kind, resources = run.kind.for_cluster(client)
    n_done = run.n_items - sum(len(run.groups[index]) for index in todo)
    folder = os.path.abspath(run.sink.folder)
    run_id = hashlib.sha256(folder.encode(errors="surrogateescape")).hexdigest()[:8]
    futures = {}
    for index in todo:
        # The workers may run elsewhere: the paths they are given are absolute.
        images = [
            ImageFile(Path(os.path.abspath(image.path)), image.name)
            for image in run.groups[index]
        ]
        key = run.keys[index]
        future = client.submit(
            make_shard,
            folder,
            index,
            key,
            images,
            kind,
            *resources,
            capture=capturing_decoder_messages(),
            key=f"vlad-shard-{index:05d}-{key[:16]}-{run_id}",
            retries=TASK_RETRIES,
        )
        futures[future] = index
    try:
        for future in distributed.as_completed(futures):
            index = futures[future]
            try:
                run.shards[index] = future.result()
            except distributed.KilledWorker:
                raise RuntimeError(
                    f"shard {index} of {folder} killed every Dask worker that ran "
                    "it (out of memory?); the shards written are kept for "
                    "resume=True (--resume)"
                ) from None
            n_done += len(run.groups[index])
            if progress is not None:
                progress(n_done, run.n_items)
    finally:
        client.cancel(list(futures))


def require_client(client: Any) -> Any:
    """The ``distributed`` module, once ``client`` is checked to be one of
    its clients.

    Raises
    ------
    ImportError
        Without dask.distributed (the ``dask`` extra).
    TypeError
        ``client`` is not a ``distributed.Client``.
    """
    distributed = require_distributed()
    if not isinstance(client, distributed.Client):
        raise VladTypeError(
            f"client must be a dask.distributed.Client; got {type(client).__name__}"
        )
    return distributed


def make_shard(
    folder: str,
    index: int,
    key: str,
    images: list[ImageFile],
    kind: ShardKind,
    *resources: Any,
    capture: bool = False,
) -> dict:
    """The task: make the shard of ``images`` on this thread, write it as
    shard ``index`` of ``folder`` and return its record.

    Parameters
    ----------
    folder : str
        The folder of shards (absolute).
    index : int
    key : str
        The shard's key (see :func:`vlad.formats._shards.shard_key`).
    images : list of ImageFile
        The shard's images, with absolute paths.
    kind : ShardKind
        As :meth:`ShardKind.for_cluster` sends it, with its ``resources``.
    capture : bool, default=False
        Decode inside :func:`vlad.images.capture_decoder_messages`, as the
        run's caller did (a worker on another machine does not inherit it).

    Returns
    -------
    dict
        The shard's record, as written beside its arrays.
    """
    kind = kind.on_worker(*resources)
    with capture_decoder_messages() if capture else contextlib.nullcontext():
        shard = kind.make(kind.stream(images, 1, None), len(images), key, 1)
    write_shard(folder, index, shard.array, shard.record, extras=shard.extras)
    return shard.record


def worker_codebook(path: str, fingerprint: str) -> Codebook:
    """The codebook at ``path``, loaded once per process and checked to be the
    one of ``fingerprint``.

    Raises
    ------
    ValueError
        The file holds another codebook (it differs between machines, or was
        replaced during the run), or none.
    """
    with _CODEBOOKS_LOCK:
        cached = _CODEBOOKS.get((path, fingerprint))
    if cached is not None:
        return cached
    codebook = Codebook.load(path)
    if codebook.fingerprint != fingerprint:
        raise VladError(
            f"codebook: {path} holds the codebook {codebook.fingerprint} on this "
            f"worker, not {fingerprint}; give every worker the same file"
        )
    with _CODEBOOKS_LOCK:
        while len(_CODEBOOKS) >= _MAX_CODEBOOKS:
            del _CODEBOOKS[next(iter(_CODEBOOKS))]
        _CODEBOOKS[path, fingerprint] = codebook
    return codebook
