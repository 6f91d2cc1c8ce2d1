"""Where the rows of a run go: memory, a file, or a folder of shards.

A run (:mod:`vlad.pipeline._shard_runs`) makes its rows a shard at a time and
hands each shard to its sink, which keeps it (:class:`MemorySink`), writes it
to a folder of shards (:class:`FolderSink`: resumable, and written by Dask
workers), or stages it for one file written once every shard is made
(:class:`FileSink`: ``.npy``, ``.h5``, ``.npz``). A file's shards are staged
in memory, or, when the run may be resumed or is made on a Dask cluster, in a
hidden folder of shards beside the file (``.NAME.parts``), removed once the
file is written. What a shard holds, and the file formats of its rows, are the
run's kind's (:class:`vlad.pipeline._shard_runs.ShardKind`).
"""

from __future__ import annotations

import abc
import dataclasses
import os
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from vlad.core._files import read_numpy_file
from vlad.core._writing import REPLACE_HINT, check_writable_folder
from vlad.errors import VladError
from vlad.formats._shards import ShardWriter, extra_name, shard_names

if TYPE_CHECKING:
    from vlad.pipeline._shard_runs import ShardKind, ShardRun

__all__ = [
    "FileSink",
    "FolderSink",
    "MemorySink",
    "OutputFile",
    "Shard",
    "Sink",
    "is_folder_output",
    "open_sink",
    "stack_rows",
    "staging_folder",
]


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


class OutputFile:
    """A kind of file a run's rows may be written to.

    Parameters
    ----------
    paths : callable
        The files one output path stands for (``NAME.npy`` and its names and
        record beside it), in the order they are named in messages.
    write : callable
        ``write(result, path, overwrite=...)`` writes the run's result
        atomically.
    """

    def __init__(
        self,
        paths: Callable[[Path], Sequence[Path]],
        write: Callable[..., None],
    ):
        self.paths = paths
        self.write = write


class Sink(abc.ABC):
    """Where a run's shards go, and what its result is once all are made.

    Attributes
    ----------
    folder : Path or None
        The folder of shards Dask workers write to; None where the shards
        are kept in this process.
    """

    folder: Path | None = None

    def finished(self, kind: ShardKind, index: int, key: str) -> dict | None:
        """The record of shard ``index`` if a run with ``key`` finished it
        (kept for a resumed run); None if it must be made."""
        return None

    @abc.abstractmethod
    def write(self, index: int, shard: Shard) -> None:
        """Keep shard ``index``, made in this process."""

    @abc.abstractmethod
    def commit(self, run: ShardRun) -> Any:
        """The run's result, once all its shards are made (written, for an
        output)."""


class MemorySink(Sink):
    """The rows held in memory: the result of a run without an output."""

    def __init__(self) -> None:
        self.shards: dict[int, Shard] = {}

    def write(self, index: int, shard: Shard) -> None:
        """Hold the shard until :meth:`commit`."""
        self.shards[index] = shard

    def commit(self, run: ShardRun) -> Any:
        """The kind's result of every shard's rows, stacked in order."""
        shards = [self.shards.pop(index) for index in range(len(run.groups))]
        return run.kind.result(run, run.kind.stack(shards))


class FolderSink(Sink):
    """A folder of shards, written as they are made, resumable.

    Parameters
    ----------
    folder : path-like
    noun : str
        What the shards hold, for messages.
    overwrite, resume : bool
        As :class:`vlad.formats._shards.ShardWriter`.
    """

    def __init__(
        self, folder: str | os.PathLike, noun: str, *, overwrite: bool, resume: bool
    ):
        if not Path(folder).parent.is_dir():
            raise FileNotFoundError(f"the folder of {folder} does not exist")
        self.writer = ShardWriter(folder, overwrite=overwrite, resume=resume, kind=noun)
        self.folder = Path(os.path.abspath(folder))

    def finished(self, kind: ShardKind, index: int, key: str) -> dict | None:
        """The shard's record if its files are whole and of ``key``."""
        return self.writer.finished(
            index, key, kind.n_columns, n_rows=kind.n_rows, extras=dict(kind.extras)
        )

    def write(self, index: int, shard: Shard) -> None:
        """Write the shard atomically."""
        self.writer.write(index, shard.array, shard.record, extras=shard.extras)

    def read(self, run: ShardRun, index: int) -> Shard:
        """Shard ``index`` as written (its arrays memory-mapped)."""
        record = run.shards[index]
        main, _ = shard_names(index, record["key"])
        extras = {
            name: read_numpy_file(
                self.folder / extra_name(main, name), "shard", mmap=True
            )
            for name in run.kind.extras
        }
        return Shard(
            read_numpy_file(self.folder / main, "shard", mmap=True), record, extras
        )

    def commit(self, run: ShardRun) -> Any:
        """Write the manifest, last, and the kind's result of the folder."""
        self.writer.commit(run.kind.manifest(run))
        return run.kind.result(run, run.kind.open(self.folder))


class FileSink(Sink):
    """One file of the run's rows, written once every shard is made.

    Parameters
    ----------
    path : Path
    file : OutputFile
    noun : str
        What the shards hold, for messages.
    overwrite : bool
        Replace the file (and the files beside it) if it exists.
    staged : bool
        Stage the shards in :func:`staging_folder` (to resume the run, or
        for Dask workers to write them); else in memory.
    resume : bool
        Keep the staged shards an interrupted run finished.
    """

    def __init__(
        self,
        path: Path,
        file: OutputFile,
        noun: str,
        *,
        overwrite: bool,
        staged: bool,
        resume: bool,
    ):
        self.path = path
        self.file = file
        self.overwrite = overwrite
        for output in file.paths(path):
            if not output.parent.is_dir():
                raise FileNotFoundError(f"the folder of {output} does not exist")
            if output.is_dir():
                raise IsADirectoryError(f"{output} is a folder, not a file name")
            if output.exists() and not overwrite:
                raise FileExistsError(
                    f"{output} exists; {REPLACE_HINT}"
                    + (" (--resume finishes a run stopped before it)" if resume else "")
                )
        check_writable_folder(path.parent)
        self.staging: FolderSink | MemorySink = MemorySink()
        if staged:
            self.staging = FolderSink(
                staging_folder(path), noun, overwrite=True, resume=resume
            )
        elif staging_folder(path).is_dir():
            # Left by a run with resume that this one replaces: checked to
            # hold shards only (and what a killed writer left), removed once
            # the file is written.
            ShardWriter(staging_folder(path), resume=True, kind=noun)
        self.folder = self.staging.folder

    def finished(self, kind: ShardKind, index: int, key: str) -> dict | None:
        """As the staging folder's."""
        return self.staging.finished(kind, index, key)

    def write(self, index: int, shard: Shard) -> None:
        """Stage the shard."""
        self.staging.write(index, shard)

    def commit(self, run: ShardRun) -> Any:
        """The kind's result of the staged shards, written to the file; the
        staging folder is removed once the file is written."""
        if isinstance(self.staging, MemorySink):
            result = self.staging.commit(run)
        else:
            shards = [self.staging.read(run, index) for index in range(len(run.groups))]
            result = run.kind.result(run, run.kind.stack(shards))
        self.file.write(result, self.path, overwrite=self.overwrite)
        shutil.rmtree(staging_folder(self.path), ignore_errors=True)
        return result


def stack_rows(blocks: list, n_columns: int) -> np.ndarray:
    """``blocks`` (arrays of ``n_columns`` columns, or empty) one after the
    other, as one float32 ``(n, n_columns)`` array; each block is dropped from
    ``blocks`` once copied, so that memory holds the rows about once."""
    n_rows = sum(len(block) for block in blocks)
    stacked = np.empty((n_rows, n_columns), np.float32)
    start = 0
    for index in range(len(blocks)):
        block = blocks[index]
        blocks[index] = None
        stacked[start : start + len(block)] = np.reshape(block, (-1, n_columns))
        start += len(block)
    return stacked


def staging_folder(path: Path) -> Path:
    """The hidden folder beside ``path`` where the shards of a resumable (or
    Dask) run into that file are staged: ``.NAME.parts``."""
    return path.with_name(f".{path.name}.parts")


def is_folder_output(output: str | os.PathLike | None) -> bool:
    """Whether ``output`` names a folder of shards (it has no suffix)."""
    return output is not None and not Path(output).suffix


def open_sink(
    kind: ShardKind,
    output: str | os.PathLike | None,
    *,
    overwrite: bool,
    resume: bool,
    client: Any,
) -> Sink:
    """The sink of ``output``: memory (None), a file whose suffix is one of
    the kind's :attr:`ShardKind.files`, or a folder of shards (a name without
    a suffix).

    Raises
    ------
    ValueError
        Another suffix, or ``resume`` or ``client`` without an output.
    FileExistsError, FileNotFoundError
        The output exists without ``overwrite`` (or, for a folder,
        ``resume``), or its folder does not.
    """
    if output is None:
        if resume:
            raise VladError(
                "resume: a run kept in memory leaves nothing to resume; give an "
                "output file or folder"
            )
        if client is not None:
            raise VladError(
                "client: the Dask workers write their shards into the output; "
                "give an output file or folder"
            )
        return MemorySink()
    path = Path(output)
    suffix = path.suffix.lower()
    if is_folder_output(path):
        return FolderSink(path, kind.noun, overwrite=overwrite, resume=resume)
    if suffix not in kind.files:
        raise VladError(
            f"output must end in {' or '.join(kind.files)}, or have no suffix for "
            f"a folder of shards; got {str(path)!r}"
        )
    return FileSink(
        path,
        kind.files[suffix],
        kind.noun,
        overwrite=overwrite,
        staged=resume or client is not None,
        resume=resume,
    )
