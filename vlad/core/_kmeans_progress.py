"""Progress of k-means, as ``progress(n_done, n_total)`` calls: iterations
(mini-batch steps) done of the most the back-end runs.

scikit-learn's ``KMeans`` and ``MiniBatchKMeans`` report their iterations
only by printing them (``verbose=1``): :func:`printed_iterations` reads those
lines from standard output while a fit runs, passes any other output
through, and calls ``progress`` instead. The fit itself is the same: verbose
output only adds the objective's value to each iteration's report.
"""

from __future__ import annotations

import contextlib
import io
import re
import sys
from collections.abc import Iterator
from typing import TextIO

from vlad.core._pool import Progress

__all__ = ["finish_progress", "part_progress", "printed_iterations"]

#: scikit-learn's line after each Lloyd iteration (numbered from 0).
_ITERATION = re.compile(r"Iteration (\d+), inertia ")
#: scikit-learn's line after each mini-batch step (numbered from 1).
_STEP = re.compile(r"Minibatch step (\d+)/(\d+):")
#: scikit-learn's other verbose lines: initialisation, convergence, centres
#: moved.
_OTHER = re.compile(
    r"Initialization complete|Init \d+/\d+ with|Inertia for init|Converged|"
    r"\[MiniBatchKMeans\]"
)


def part_progress(
    progress: Progress | None, index: int, n_parts: int
) -> Progress | None:
    """The progress of part ``index`` of ``n_parts`` runs of equal length (the
    vocabularies of a codebook) as part of one ``progress`` of all of them."""
    if progress is None:
        return None

    def report(n_done: int, n_total: int) -> None:
        progress(index * n_total + n_done, n_parts * n_total)

    return report


def finish_progress(progress: Progress | None, n_total: int) -> None:
    """Tell ``progress`` that a run that may stop early (converged) is done."""
    if progress is not None:
        progress(n_total, n_total)


class _IterationReader(io.TextIOBase):
    """A text stream that turns scikit-learn's verbose lines into progress
    calls and writes every other line to ``passed``."""

    def __init__(self, progress: Progress, n_total: int, passed: TextIO):
        super().__init__()
        self.progress = progress
        self.n_total = n_total
        self.passed = passed
        self.pending = ""

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        lines = (self.pending + text).split("\n")
        self.pending = lines.pop()
        for line in lines:
            self._read(line)
        return len(text)

    def flush(self) -> None:
        self.passed.flush()

    def close_reading(self) -> None:
        """Pass on what is left of an unfinished line."""
        if self.pending:
            self._read(self.pending, end="")
            self.pending = ""

    def _read(self, line: str, end: str = "\n") -> None:
        iteration = _ITERATION.match(line)
        step = _STEP.match(line)
        if iteration:
            self.progress(min(int(iteration.group(1)) + 1, self.n_total), self.n_total)
        elif step:
            self.n_total = int(step.group(2))
            self.progress(int(step.group(1)), self.n_total)
        elif not _OTHER.match(line):
            self.passed.write(line + end)


@contextlib.contextmanager
def printed_iterations(progress: Progress | None, n_total: int) -> Iterator[None]:
    """While the block runs, scikit-learn's verbose lines on ``sys.stdout``
    call ``progress(n_done, n_total)``; other output passes through. The
    block ends with ``progress(n_total, n_total)`` (a fit that converged
    early is done). Nothing changes when ``progress`` is None.
    """
    if progress is None:
        yield
        return
    reader = _IterationReader(progress, n_total, sys.stdout)
    progress(0, n_total)
    try:
        with contextlib.redirect_stdout(reader):
            yield
    finally:
        reader.close_reading()
    finish_progress(progress, reader.n_total)
