"""Keywords renamed: the old name kept working, with a warning, for one
release."""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import TypeVar

from vlad.errors import ParameterTypeError

__all__ = ["renamed_keyword"]

Function = TypeVar("Function", bound=Callable)


def renamed_keyword(old: str, new: str, since: str) -> Callable[[Function], Function]:
    """A decorator that lets a function take its keyword ``new`` by its
    former name ``old`` too, with a :class:`DeprecationWarning`.

    Parameters
    ----------
    old, new : str
        The former and the present name of the keyword.
    since : str
        The version that renamed it; ``old`` goes in the one after.

    Examples
    --------
    >>> import warnings
    >>> from vlad.core._deprecation import renamed_keyword
    >>> @renamed_keyword("size", "width", since="0.9")
    ... def box(*, width=1):
    ...     return width
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     box(size=3), str(caught[0].message)
    (3, 'size was renamed width in vlad 0.9; size will be removed in the next release')
    >>> box(size=3, width=3)
    Traceback (most recent call last):
    ...
    vlad.errors.ParameterTypeError: size is the former name of width; give width only
    """

    def decorator(function: Function) -> Function:
        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            if old in kwargs:
                if new in kwargs:
                    raise ParameterTypeError(
                        f"{old} is the former name of {new}; give {new} only"
                    )
                warnings.warn(
                    f"{old} was renamed {new} in vlad {since}; {old} will be "
                    "removed in the next release",
                    DeprecationWarning,
                    stacklevel=2,
                )
                kwargs[new] = kwargs.pop(old)
            return function(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorator
