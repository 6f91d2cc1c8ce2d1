"""The library's own errors."""

from __future__ import annotations

__all__ = ["DamagedIndexError", "VladError"]


class VladError(ValueError):
    """A value the library cannot use: a bad argument, file or combination of
    settings. The command line shows it in one line, without a traceback."""


class DamagedIndexError(VladError):
    """An index folder whose files are not those its record describes: one
    missing, changed since it was written (another checksum, another
    codebook), of another shape or dtype, or holding NaN or infinite values.
    The message names the file and what is wrong; build the index again."""
