"""The ``vlad`` command group, and how it ends: exit status 0 on success, 1
on an error (one line, no traceback), 2 on a usage error, 130 when
interrupted (Ctrl-C) and 143 when terminated (SIGTERM), in both cases after
removing what it was writing."""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
from collections.abc import Iterator, Mapping

import click

from vlad._version import __version__
from vlad.formats._names import printable

__all__ = [
    "COMMANDS",
    "EXIT_INTERRUPTED",
    "EXIT_TERMINATED",
    "LazyGroup",
    "VladGroup",
    "main",
]

#: Exit statuses of an interrupted (SIGINT, Ctrl-C) and a terminated
#: (SIGTERM) command: 128 plus the signal's number, as shells report them.
EXIT_INTERRUPTED, EXIT_TERMINATED = 130, 143


#: The subcommands, in the order the reference lists them: name -> (the
#: command's ``module:attribute``, its short help). The group lists them with
#: this short help and imports a command's module only to run it or show its
#: own --help (tests check that each short help is the command's own).
COMMANDS = {
    "extract": (
        "vlad.cli._extract:extract",
        "Extract local descriptors of images (.npz or folder).",
    ),
    "fit": ("vlad.cli._fit:fit", "Fit a k-means codebook on images or descriptors."),
    "encode": (
        "vlad.cli._encode:encode",
        "Encode images as VLAD vectors with a codebook.",
    ),
    "info": (
        "vlad.cli._info:info",
        "Show what a file or folder vlad wrote holds.",
    ),
    "index": (
        "vlad.cli._index:index",
        "Index VLAD vectors (or descriptors, by ASMK) for search.",
    ),
    "search": (
        "vlad.cli._search:search",
        "Search an index with query vectors or images.",
    ),
    "evaluate": (
        "vlad.cli._evaluate:evaluate",
        "Score search results against a ground truth.",
    ),
    "show-matches": (
        "vlad.cli._show_matches:show_matches",
        "Draw the inlier matches of two images side by side.",
    ),
}


class LazyGroup(click.Group):
    """A group whose subcommands are imported when one runs or shows its help,
    not to list them (click's "Lazily Loading Subcommands").

    Parameters
    ----------
    lazy_subcommands : mapping, optional
        Name -> (``"module:attribute"`` of the command, its short help).
    """

    def __init__(
        self,
        *args,
        lazy_subcommands: Mapping[str, tuple[str, str]] | None = None,
        **kwargs,
    ):
        super().__init__(*args, **kwargs)
        self.lazy_subcommands = dict(lazy_subcommands or {})

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy_subcommands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in self.lazy_subcommands:
            module, _, attribute = self.lazy_subcommands[cmd_name][0].partition(":")
            self.add_command(
                getattr(importlib.import_module(module), attribute), cmd_name
            )
        return super().get_command(ctx, cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter):
        """The commands with their short help, as click lists them, those not
        yet imported with the short help of ``lazy_subcommands``."""
        commands = []
        for name in self.list_commands(ctx):
            command = self.commands.get(name)
            if command is None:
                command = click.Command(name, short_help=self.lazy_subcommands[name][1])
            if not command.hidden:
                commands.append((name, command))
        if commands:
            limit = formatter.width - 6 - max(len(name) for name, _ in commands)
            rows = [
                (name, command.get_short_help_str(limit)) for name, command in commands
            ]
            with formatter.section("Commands"):
                formatter.write_dl(rows)


class VladGroup(LazyGroup):
    """The command group: a subcommand interrupted by Ctrl-C or SIGTERM
    cleans up (temporary files go, earlier outputs stay) and exits with
    130 or 143, with one line on stderr."""

    def resolve_command(self, ctx: click.Context, args: list[str]):
        name, command, rest = super().resolve_command(ctx, args)
        # A copy: parsing consumes the list. For _what_was_kept.
        ctx.meta["vlad.command"] = (name, command, list(rest))
        return name, command, rest

    def invoke(self, ctx: click.Context):
        from vlad.cli._signals import QuietFinalizers, SignalsAsExceptions, Terminated
        from vlad.images._decoder_messages import capture_decoder_messages

        # The decoders' messages become each image's warning or error: the
        # command, unlike a library call, may point descriptor 2 elsewhere.
        quiet = QuietFinalizers()
        try:
            with (
                SignalsAsExceptions(),
                _python_stderr_apart(),
                capture_decoder_messages(),
            ):
                return super().invoke(ctx)
        except KeyboardInterrupt:
            quiet.start()
            status = EXIT_INTERRUPTED
            said = f"\ninterrupted; {self._what_was_kept(ctx)}"
        except Terminated:
            quiet.start()
            status, said = EXIT_TERMINATED, "terminated"
        # The exception is gone, and with it what the command had made
        # (finalized quietly: what the signal left half-made may fail there).
        quiet.stop()
        click.echo(said, err=True)
        raise click.exceptions.Exit(status)

    def _what_was_kept(self, ctx: click.Context) -> str:
        """What an interrupted subcommand leaves: a folder output its finished
        shards (an ASMK index the segments written), for ``--resume``; any
        other output nothing of itself."""
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
                # vlad index resumes an ASMK index's build, of segments.
                parts = "shards" if "method" not in sub.params else "segments"
                resumable &= sub.params.get("method", "asmk") == "asmk"
        except click.ClickException:
            return kept
        if resumable and output is not None and not output.suffix:
            return (
                f"the finished {parts} of {printable(str(output))} are kept: the "
                "same command with --resume finishes it"
            )
        if resumable and output is not None and sub.params.get("resume"):
            # A file's run with --resume stages its shards beside it.
            staged = output.with_name(f".{output.name}.parts")
            if staged.is_dir():
                return (
                    f"the finished shards of {printable(str(output))} are kept "
                    f"in {printable(str(staged))}: the same command with --resume "
                    "finishes it"
                )
        return kept


@contextlib.contextmanager
def _python_stderr_apart() -> Iterator[None]:
    """Python's own messages go to a copy of descriptor 2 while the block runs.

    Image decoding points descriptor 2 elsewhere for a moment to catch the
    decoders' messages (:mod:`vlad.images._decoder_messages`); the progress
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


@click.group(
    cls=VladGroup,
    lazy_subcommands=COMMANDS,
    context_settings={"help_option_names": ["-h", "--help"]},
)
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
