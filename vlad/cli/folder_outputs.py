"""The options and checks of commands that write a file or a folder of shards
(``vlad extract``, ``vlad encode``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import click

from vlad.cli.reporting import printable

__all__ = ["check_folder_output", "file_or_folder_output", "shard_options"]


def file_or_folder_output(suffix: str, help: str) -> Callable[[Callable], Callable]:
    """``-o/--output``: a file ending in ``suffix``, or a folder of shards (a
    name without a suffix)."""

    def check(ctx, param, value: Path) -> Path:
        if value.suffix and value.suffix.lower() != suffix:
            raise click.BadParameter(
                f"must end in {suffix}, or have no suffix for a folder; "
                f"got {str(value)!r}"
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
    default: int, shard_help: str, resume_help: str
) -> Callable[[Callable], Callable]:
    """``--shard-images`` (default ``default``) and ``--resume``."""

    def decorate(command: Callable) -> Callable:
        command = click.option("--resume", is_flag=True, help=resume_help)(command)
        return click.option(
            "--shard-images",
            type=click.IntRange(min=1),
            default=default,
            show_default=True,
            help=shard_help,
        )(command)

    return decorate


def check_folder_output(output: Path, overwrite: bool, resume: bool) -> None:
    """A one-line error unless a folder of shards may be written at ``output``:
    its parent exists, and it does not unless replaced or resumed."""
    if not output.parent.is_dir():
        raise click.ClickException(
            f"the folder of {printable(str(output))} does not exist"
        )
    if output.exists() and not (overwrite or resume):
        raise click.ClickException(
            f"{printable(str(output))} already exists; pass --overwrite to replace "
            "it or --resume to finish it"
        )
