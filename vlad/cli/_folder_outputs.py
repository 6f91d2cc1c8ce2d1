"""The options, checks and messages of commands that write a file or a folder
of shards (``vlad extract``, ``vlad encode``)."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import click

from vlad._extras import install_command
from vlad.cli._reporting import check_outputs, count, printable
from vlad.formats._vectors import vector_file_paths
from vlad.pipeline._cluster import dask_client
from vlad.pipeline._sinks import OutputFile

__all__ = [
    "check_output",
    "dask_options",
    "file_or_folder_output",
    "folder_client",
    "shard_options",
    "written_to",
]

logger = logging.getLogger("vlad.cli")


def file_or_folder_output(
    suffix: str | tuple[str, ...], help: str
) -> Callable[[Callable], Callable]:
    """``-o/--output``: a file ending in ``suffix`` (or one of them), or a
    folder of shards (a name without a suffix)."""
    suffixes = (suffix,) if isinstance(suffix, str) else suffix

    def check(ctx, param, value: Path) -> Path:
        if value.suffix and value.suffix.lower() not in suffixes:
            raise click.BadParameter(
                f"must end in {' or '.join(suffixes)}, or have no suffix for a "
                f"folder; got {str(value)!r}"
            )
        return value

    return click.option(
        "-o",
        "--output",
        required=True,
        type=click.Path(path_type=Path),
        callback=check,
        help=help,
    )


def shard_options(
    default: int,
    shard_help: str,
    resume_help: str,
    check: Callable[[int, str], None] | None = None,
) -> Callable[[Callable], Callable]:
    """``--shard-images`` (default ``default``; ``check(value, name)`` raises
    ValueError for a value the library refuses) and ``--resume``."""

    def checked(ctx, param, value: int) -> int:
        if check is not None:
            try:
                check(value, "--shard-images")
            except ValueError as error:
                raise click.UsageError(str(error)) from None
        return value

    def decorate(command: Callable) -> Callable:
        command = click.option("--resume", is_flag=True, help=resume_help)(command)
        return click.option(
            "--shard-images",
            type=click.IntRange(min=1),
            default=default,
            show_default=True,
            callback=checked,
            help=shard_help,
        )(command)

    return decorate


def check_output(
    output: Path, files: Mapping[str, OutputFile], overwrite: bool, resume: bool
) -> None:
    """A one-line error, before any work, unless ``output`` may be written: a
    folder of shards (a name without a suffix) whose parent exists and that
    does not exist unless replaced or resumed, or a file of ``files`` (by
    suffix) that, with the files beside it, does not exist unless replaced."""
    if output.suffix:
        paths = files[output.suffix.lower()].paths(output)
        if resume and not overwrite and any(path.exists() for path in paths):
            raise click.ClickException(
                f"{printable(str(output))} already exists: the run writing it "
                "finished, and --resume finishes only a file not yet written; "
                "pass --overwrite to replace it"
            )
        check_outputs(paths, overwrite)
        return
    if not output.parent.is_dir():
        raise click.ClickException(
            f"the folder of {printable(str(output))} does not exist"
        )
    if output.exists() and not (overwrite or resume):
        raise click.ClickException(
            f"{printable(str(output))} already exists; pass --overwrite to replace "
            "it or --resume to finish it"
        )


def written_to(output: Path, rows: Any) -> str:
    """Where a run's ``rows`` were written, for its summary line: the output,
    and the files beside it or its shards."""
    suffix = output.suffix.lower()
    if suffix == ".npy":
        return "{}, their names to {} and a report to {}".format(
            *vector_file_paths(output)
        )
    if suffix == ".h5":
        return f"{output}, hloc's global features"
    if not suffix:
        return f"{output}, in {count(rows.n_shards, 'shard')}"
    return str(output)


def dask_options(shared: str) -> Callable[[Callable], Callable]:
    """``--dask`` (as ``use_dask``) and ``--scheduler``; ``shared`` names the
    files every worker must see (``"images and folder"``)."""

    def decorate(command: Callable) -> Callable:
        command = click.option(
            "--scheduler",
            metavar="ADDRESS",
            help="Make the shards on the Dask cluster of this scheduler "
            f"(tcp://host:8786); {shared} must be at the same paths on every "
            "worker.",
        )(command)
        return click.option(
            "--dask",
            "use_dask",
            is_flag=True,
            help="Make the shards on a Dask cluster of -j worker processes on "
            "this machine, one task per shard, each written by its worker (a "
            f"file's, in .NAME.parts beside it; needs: {install_command('dask')}).",
        )(command)

    return decorate


@contextlib.contextmanager
def folder_client(
    use_dask: bool, scheduler: str | None, n_jobs: int | None
) -> Iterator[tuple[Any, int | None]]:
    """The Dask client that ``--dask`` or ``--scheduler`` ask for (None
    without them), and the ``n_jobs`` left to this process; a shard that
    killed its workers becomes a one-line error. Call it inside
    :func:`vlad.cli._reporting.library_errors`."""
    if scheduler and n_jobs is not None:
        raise click.UsageError(
            "-j sets the workers of --dask's local cluster; the cluster of "
            "--scheduler has its own"
        )
    with contextlib.ExitStack() as stack:
        client = None
        if use_dask or scheduler:
            client = stack.enter_context(dask_client(scheduler, n_jobs))
            logger.info("running on the Dask cluster of %s", client.scheduler.address)
            n_jobs = None
        try:
            yield client, n_jobs
        except RuntimeError as error:
            raise click.ClickException(str(error)) from None
