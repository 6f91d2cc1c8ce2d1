"""What the subcommands share: logging to stderr, progress bars, output checks
and turning library errors into one-line messages."""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import click

from vlad.core._files import check_writable_folder
from vlad.formats._names import printable
from vlad.images._learned import LearnedOptions
from vlad.pipeline._batch import BatchReport

__all__ = [
    "USER_ERRORS",
    "check_outputs",
    "count",
    "library_errors",
    "log_to_stderr",
    "printable",
    "progress_bar",
    "report_skipped",
]

logger = logging.getLogger("vlad.cli")

#: Library errors that are the user's to fix: shown as one line, no traceback.
USER_ERRORS = (ValueError, OSError, ImportError, MemoryError)


class _StderrHandler(logging.Handler):
    """Writes log records to stderr through click (so that tests capture them),
    warnings and errors prefixed by their level."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = printable(self.format(record))
            if record.levelno >= logging.WARNING:
                message = f"{record.levelname.lower()}: {message}"
            if sys.stderr.isatty():
                # Clear a progress bar drawn on this line before writing.
                message = "\r\033[K" + message
            click.echo(message, err=True)
        except Exception:
            self.handleError(record)


@contextlib.contextmanager
def log_to_stderr(verbosity: int) -> Iterator[None]:
    """Show the ``vlad`` loggers' messages on stderr while the block runs.

    Verbosity 0 shows information (the summary of a run) and warnings, 1 and
    more adds debugging detail, -1 shows warnings only and -2 errors only.
    """
    logger = logging.getLogger("vlad")
    handler = _StderrHandler()
    previous = logger.level, logger.propagate
    logger.addHandler(handler)
    logger.setLevel(max(logging.DEBUG, logging.INFO - 10 * verbosity))
    logger.propagate = False
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(previous[0])
        logger.propagate = previous[1]


@contextlib.contextmanager
def progress_bar(
    verbosity: int, label: str
) -> Iterator[Callable[[int, int], None] | None]:
    """A ``progress(n_done, n_total)`` callback drawing a bar on stderr.

    Yields None, for no bar, when ``verbosity`` is negative or stderr is not a
    terminal.
    """
    if verbosity < 0 or not sys.stderr.isatty():
        yield None
        return
    with contextlib.ExitStack() as stack:
        bars = []

        def advance(n_done: int, n_total: int) -> None:
            if not bars:
                bar = click.progressbar(
                    length=n_total, label=label, file=sys.stderr, show_pos=True
                )
                bars.append(stack.enter_context(bar))
            bars[0].update(1)

        yield advance


def check_outputs(paths: Iterable[Path], overwrite: bool) -> None:
    """Refuse, before any work, outputs that exist (without ``--overwrite``),
    whose folder does not exist, or in whose folder no file can be created."""
    for path in paths:
        shown = printable(str(path))
        if not path.parent.is_dir():
            raise click.ClickException(f"the folder of {shown} does not exist")
        if path.is_dir():
            raise click.ClickException(f"{shown} is a folder, not a file name")
        if path.exists() and not overwrite:
            raise click.ClickException(
                f"{shown} already exists; pass --overwrite to replace it"
            )
        try:
            check_writable_folder(path.parent)
        except OSError as error:
            raise click.ClickException(printable(str(error))) from None


@contextlib.contextmanager
def library_errors() -> Iterator[None]:
    """Turn the library's errors into one-line click errors (exit status 1)."""
    try:
        yield
    except USER_ERRORS as error:
        raise click.ClickException(_one_line(error)) from None


def _one_line(error: BaseException) -> str:
    """The error's message on one line, printable."""
    message = str(error) or type(error).__name__
    if isinstance(error, MemoryError):
        message = f"out of memory ({message})"
    return printable(" ".join(message.split()))


def report_skipped(
    report: BatchReport, *, vectors: bool = False, descriptor: dict | None = None
) -> None:
    """Log in one line each how many images (and folders) were skipped and how
    many had no descriptors, with their first names; ``vectors`` when the
    command made VLAD vectors (zero for images without descriptors).
    ``descriptor``, the descriptors' record, tells whether ``--dense`` would
    describe those (it applies to SIFT, not to learned features)."""
    if report.skipped:
        n_folders = sum(name.endswith("/") for name in report.skipped)
        n_files = len(report.skipped) - n_folders
        counts = [(n_files, "file"), (n_folders, "folder")]
        parts = [count(n, noun) for n, noun in counts if n]
        logger.info(
            "skipped %s that could not be read: %s",
            " and ".join(parts),
            _first_names(report.skipped),
        )
    if report.empty:
        learned = LearnedOptions.from_record(dict(descriptor or {})) is not None
        logger.warning(
            "%s no keypoints, so no descriptors%s: %s%s",
            count(len(report.empty), "image")
            + (" has" if len(report.empty) == 1 else " have"),
            " and a zero VLAD vector" if vectors else "",
            _first_names(report.empty),
            "" if learned else "; --dense describes every image",
        )


def _first_names(names: Iterable[str], shown: int = 3) -> str:
    """``"a.jpg, b.jpg, c.jpg"``, or the first ``shown`` and ``"+N more"``."""
    names = list(names)
    listed = ", ".join(printable(name) for name in names[:shown])
    return listed + (f", +{len(names) - shown} more" if len(names) > shown else "")


def count(n: int, noun: str, plural: str | None = None) -> str:
    """``"1 image"``, ``"3 images"`` (``plural`` where it is not ``noun + "s"``)."""
    return f"{n} {noun}" if n == 1 else f"{n} {plural or noun + 's'}"
