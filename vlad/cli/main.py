"""The ``vlad`` command group, and how it ends: exit status 0 on success, 1
on an error (one line, no traceback), 2 on a usage error, 130 when
interrupted (Ctrl-C) and 143 when terminated (SIGTERM), in both cases after
removing what it was writing."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator

import click

from vlad._version import __version__
from vlad.cli.bench import bench
from vlad.cli.encode import encode
from vlad.cli.evaluate import evaluate
from vlad.cli.extract import extract
from vlad.cli.fit import fit
from vlad.cli.index import index
from vlad.cli.info import info
from vlad.cli.reporting import printable
from vlad.cli.search import search
from vlad.cli.show_matches import show_matches
from vlad.images.decoder_messages import capture_decoder_messages

__all__ = ["EXIT_INTERRUPTED", "EXIT_TERMINATED", "VladGroup", "main"]

#: Exit statuses of an interrupted (SIGINT, Ctrl-C) and a terminated
#: (SIGTERM) command: 128 plus the signal's number, as shells report them.
EXIT_INTERRUPTED, EXIT_TERMINATED = 130, 143


class _Terminated(BaseException):
    """SIGTERM, raised where the main thread is, so that clean-up runs."""


def _raise_terminated(signal_number, frame):
    raise _Terminated


class VladGroup(click.Group):
    """The command group: a subcommand interrupted by Ctrl-C or SIGTERM
    cleans up (temporary files go, earlier outputs stay) and exits with
    130 or 143, with one line on stderr."""

    def resolve_command(self, ctx: click.Context, args: list[str]):
        name, command, rest = super().resolve_command(ctx, args)
        # A copy: parsing consumes the list. For _what_was_kept.
        ctx.meta["vlad.command"] = (name, command, list(rest))
        return name, command, rest

    def invoke(self, ctx: click.Context):
        # The decoders' messages become each image's warning or error: the
        # command, unlike a library call, may point descriptor 2 elsewhere.
        try:
            with (
                _terminate_by_exception(),
                _python_stderr_apart(),
                capture_decoder_messages(),
            ):
                return super().invoke(ctx)
        except KeyboardInterrupt:
            click.echo(f"\ninterrupted; {self._what_was_kept(ctx)}", err=True)
            raise click.exceptions.Exit(EXIT_INTERRUPTED) from None
        except _Terminated:
            click.echo("terminated", err=True)
            raise click.exceptions.Exit(EXIT_TERMINATED) from None

    def _what_was_kept(self, ctx: click.Context) -> str:
        """What an interrupted subcommand leaves: a folder output its finished
        shards, for ``--resume``; any other output nothing of itself."""
        kept = "outputs written before are kept, the one being written was removed"
        if "vlad.command" not in ctx.meta:
            return kept
        name, command, args = ctx.meta["vlad.command"]
        try:
            with command.make_context(
                name, list(args), parent=ctx, resilient_parsing=True
            ) as sub:
                output = sub.params.get("output")
                resumable = "resume" in sub.params
        except click.ClickException:
            return kept
        if resumable and output is not None and not output.suffix:
            return (
                f"the finished shards of {printable(str(output))} are kept: the same "
                "command with --resume finishes it"
            )
        return kept


@contextlib.contextmanager
def _terminate_by_exception() -> Iterator[None]:
    """SIGTERM raises an exception in the main thread while the block runs
    (its default kills the process before any clean-up)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def _python_stderr_apart() -> Iterator[None]:
    """Python's own messages go to a copy of descriptor 2 while the block runs.

    Image decoding points descriptor 2 elsewhere for a moment to catch the
    decoders' messages (:mod:`vlad.images.decoder_messages`); the progress
    bar and the log must not wait for it.
    """
    try:
        descriptor = sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):  # not a real file (tests)
        descriptor = -1
    if descriptor != 2:
        yield
        return
    sys.stderr.flush()
    previous = sys.stderr
    sys.stderr = open(
        os.dup(2),
        "w",
        buffering=1,
        encoding=previous.encoding,
        errors=previous.errors,
    )
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            sys.stderr.close()
        sys.stderr = previous


@click.group(cls=VladGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="vlad")
def main() -> None:
    """VLAD vectors of image folders: SIFT descriptors, codebooks, vectors,
    search and evaluation.

    \b
    Typical use, on the bundled photos:
        vlad fit data --n-clusters 16 -o codebook.npz
        vlad encode data --codebook codebook.npz -o vectors.npy
        vlad index vectors.npy -o index
        vlad search index data/chelsea.jpg -c codebook.npz --top 3

    Run "vlad COMMAND --help" for a command's options.
    """


main.add_command(extract)
main.add_command(fit)
main.add_command(encode)
main.add_command(info)
main.add_command(index)
main.add_command(search)
main.add_command(evaluate)
main.add_command(show_matches)
main.add_command(bench)
