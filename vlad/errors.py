"""The library's own errors.

Every error that vlad raises about its user's input is a :class:`VladError`
(a :class:`ValueError`), or a :class:`VladTypeError` (also a
:class:`TypeError`) for a value of the wrong type; a bad parameter is a
:class:`ParameterError`, or a :class:`ParameterTypeError`. The command line
shows these in one line, without a traceback; an error of another class (a
bare :class:`ValueError` from NumPy, say) is a bug and keeps its traceback.
"""

from __future__ import annotations

__all__ = [
    "DamagedIndexError",
    "ParameterError",
    "ParameterTypeError",
    "VladError",
    "VladTypeError",
]


class VladError(ValueError):
    """A value the library cannot use: a bad argument, file or combination of
    settings. The command line shows it in one line, without a traceback."""


class VladTypeError(VladError, TypeError):
    """A value of a type the library cannot use (a string for an array, a
    bool for a count). Both a :class:`VladError` and a :class:`TypeError`, so
    callers that catch either catch it."""


class ParameterError(VladError):
    """A parameter's value outside what its specification allows
    (:class:`vlad.core.Parameter`): ``power must be a number in (0, 1]; got
    2``. Functions, estimators and the command line say the same."""


class ParameterTypeError(ParameterError, VladTypeError):
    """A parameter's value of the wrong type: ``n_jobs must be None, -1 (every
    core) or an integer >= 1; got 1.5``."""


class DamagedIndexError(VladError):
    """An index folder whose files are not those its record describes: one
    missing, changed since it was written (another checksum, another
    codebook), of another shape or dtype, or holding NaN or infinite values.
    The message names the file and what is wrong; build the index again."""
