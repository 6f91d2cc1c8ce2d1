"""The library's own errors."""

from __future__ import annotations

__all__ = ["VladError"]


class VladError(ValueError):
    """A value the library cannot use: a bad argument, file or combination of
    settings. The command line shows it in one line, without a traceback."""
