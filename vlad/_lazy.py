"""Public names of a sub-package, imported from its private modules on first
use, so that importing one module of vlad (the ``vlad`` command does) does not
import every module beside it."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping

__all__ = ["attach"]


def attach(
    package: str, exports: Mapping[str, str]
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package``.

    Parameters
    ----------
    package : str
        The package's ``__name__``.
    exports : mapping of str to str
        Each public name and the module (absolute) that defines it.

    Returns
    -------
    getattr : callable
        The package's ``__getattr__``: imports a public name's module on first
        use, keeps the value in the package and returns it; any other name is
        an ``AttributeError``.
    dir : callable
        The package's ``__dir__``: its globals and its public names.

    Examples
    --------
    >>> getattr_, dir_ = attach("vlad", {"VladError": "vlad.errors"})
    >>> getattr_("VladError").__name__, "VladError" in dir_()
    ('VladError', True)
    """

    def __getattr__(name: str) -> object:
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(exports[name]), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(exports))

    return __getattr__, __dir__
