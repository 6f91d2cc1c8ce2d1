"""What the subcommands share: logging to stderr, progress bars, output checks
and turning library errors into one-line messages."""

from __future__ import annotations

import contextlib
import logging
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path

import click

from vlad.core._files import check_writable_folder
from vlad.errors import VladError
from vlad.formats._names import printable
from vlad.images._learned import LearnedOptions
from vlad.pipeline._batch import BatchReport

__all__ = [
    "DENSE_ADVICE",
    "dense_advice",
    "LISTED_NAMES",
    "PROGRESS_LOG_SECONDS",
    "USER_ERRORS",
    "check_outputs",
    "count",
    "duration",
    "library_errors",
    "log_to_stderr",
    "name_list",
    "printable",
    "progress_bar",
    "report_skipped",
]

logger = logging.getLogger("vlad.cli")

#: Names a warning lists whole; beyond, it names the first ``_FIRST_NAMES``.
LISTED_NAMES = 10
_FIRST_NAMES = 5
#: Seconds between two lines of progress when stderr is not a terminal.
PROGRESS_LOG_SECONDS = 30
#: What describes images without keypoints, for the commands that describe.
DENSE_ADVICE = "--dense describes every image"

#: Errors that are the user's to fix: shown as one line, no traceback. Only
#: vlad's own ValueError and TypeError (VladError and its subclasses) are: a
#: bare ValueError or TypeError, from NumPy, scikit-learn or vlad, is a bug and
#: keeps its traceback.
USER_ERRORS = (VladError, OSError, ImportError, MemoryError)


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
    verbosity: int, label: str, *, lines: bool = False
) -> Iterator[Callable[[int, int], None] | None]:
    """A ``progress(n_done, n_total)`` callback drawing a bar on stderr, with
    the time left; the bar ends when ``n_done`` reaches ``n_total``, so that
    another can follow it.

    When stderr is not a terminal, with ``lines``, a line every
    :data:`PROGRESS_LOG_SECONDS` instead (``"k-means: 12/100 after 1 min 3 s,
    about 7 min 51 s left"``); without, nothing. Yields None, for no
    progress at all, when ``verbosity`` is negative.
    """
    if verbosity < 0:
        yield None
        return
    if not sys.stderr.isatty():
        yield _progress_lines(label, PROGRESS_LOG_SECONDS) if lines else None
        return
    with contextlib.ExitStack() as stack:
        bars: list = []

        def advance(n_done: int, n_total: int) -> None:
            if not bars:
                shown = stack.enter_context(contextlib.ExitStack())
                bar = click.progressbar(
                    length=n_total, label=label, file=sys.stderr, show_pos=True
                )
                bars.append((shown.enter_context(bar), shown))
            bar, shown = bars[0]
            if n_done > bar.pos:
                bar.update(n_done - bar.pos)
            if n_done >= n_total:
                shown.close()

        yield advance


def _progress_lines(label: str, every: float) -> Callable[[int, int], None]:
    """``progress(n_done, n_total)`` logging a line at most every ``every``
    seconds, with the time taken and the time left at this pace."""
    start = time.monotonic()
    last = [start, 0]  # when the last line was logged, and what it said

    def report(n_done: int, n_total: int) -> None:
        now = time.monotonic()
        if n_done <= last[1] or now - last[0] < every:
            return
        last[:] = [now, n_done]
        elapsed = now - start
        logger.info(
            "%s: %d/%d after %s, about %s left",
            label,
            n_done,
            n_total,
            duration(elapsed),
            duration(elapsed / n_done * max(n_total - n_done, 0)),
        )

    return report


def duration(seconds: float) -> str:
    """``"42 s"``, ``"7 min 51 s"``, ``"2 h 5 min"``."""
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60} min"


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
    report: BatchReport,
    *,
    vectors: bool = False,
    queries: bool = False,
    advice: str | None = DENSE_ADVICE,
    listed_in: Path | None = None,
) -> None:
    """Log in one line how many images (and folders) were skipped, and warn
    once about the images without descriptors, in the words of the input
    given: images without keypoints, or a descriptors file that holds images
    without descriptors.

    Parameters
    ----------
    report : BatchReport
    vectors : bool, default=False
        The command made VLAD vectors (zero for images without descriptors).
    queries : bool, default=False
        The images are queries (which find nothing without descriptors).
    advice : str or None, default=DENSE_ADVICE
        What describes images without keypoints, said when they were images
        (not for a descriptors file, which no option changes).
    listed_in : Path, optional
        A file the command wrote whose ``vlad info`` lists every image
        without descriptors; beyond a few names the warning points to it, or
        to the descriptors file read.
    """
    if report.skipped:
        n_folders = sum(name.endswith("/") for name in report.skipped)
        n_files = len(report.skipped) - n_folders
        counts = [(n_files, "file"), (n_folders, "folder")]
        parts = [count(n, noun) for n, noun in counts if n]
        logger.info(
            "skipped %s that could not be read: %s",
            " and ".join(parts),
            name_list(report.skipped),
        )
    if not report.empty:
        return
    n_empty = len(report.empty)
    images = count(n_empty, "query", "queries") if queries else count(n_empty, "image")
    if report.source is not None:
        outcome = ", whose VLAD vectors are zero" if vectors else ""
        logger.warning(
            "%s holds %s without descriptors%s: %s",
            report.source,
            images,
            ", which find nothing" if queries else outcome,
            name_list(report.empty, listed_in or report.source),
        )
        return
    outcome = " and a zero VLAD vector" if vectors else ""
    logger.warning(
        "%s %s no keypoints, so no descriptors%s: %s%s",
        images,
        "has" if n_empty == 1 else "have",
        (", and finds nothing" if n_empty == 1 else ", and find nothing")
        if queries
        else outcome,
        name_list(report.empty, listed_in),
        f"; {advice}" if advice else "",
    )


def dense_advice(descriptor: Mapping | None, advice: str = DENSE_ADVICE) -> str | None:
    """``advice`` (``--dense``) for images without keypoints, or None when the
    descriptors' record names learned features, which ``--dense`` does not
    make."""
    learned = LearnedOptions.from_record(dict(descriptor or {})) is not None
    return None if learned else advice


def name_list(names: Iterable[str], listed_in: Path | None = None) -> str:
    """Every name, printable, up to :data:`LISTED_NAMES` of them (or with
    ``-v``); beyond, the first ones, how many more, and where all are listed:
    ``vlad info FILE`` for a ``listed_in`` file, else ``-v``."""
    names = list(names)
    if len(names) <= LISTED_NAMES or logger.isEnabledFor(logging.DEBUG):
        return ", ".join(printable(name) for name in names)
    shown = ", ".join(printable(name) for name in names[:_FIRST_NAMES])
    where = (
        f"vlad info {printable(str(listed_in))} lists them all"
        if listed_in is not None
        else "-v lists them all"
    )
    return f"{shown} and {len(names) - _FIRST_NAMES} more ({where})"


def count(n: int, noun: str, plural: str | None = None) -> str:
    """``"1 image"``, ``"3 images"`` (``plural`` where it is not ``noun + "s"``)."""
    return f"{n} {noun}" if n == 1 else f"{n} {plural or noun + 's'}"
