"""Public names of a sub-package, imported from its private modules on first
use, so that importing one module of vlad (the ``vlad`` command does) does not
import every module beside it."""

from __future__ import annotations

import importlib
import importlib.util
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
        The package's ``__getattr__``: imports a public name's module, or a
        public sub-module or sub-package of that name (``vlad.search``), on
        first use, keeps the value in the package and returns it; any other
        name is an ``AttributeError``.
    dir : callable
        The package's ``__dir__``: its globals, its public names and its
        ``__all__``.

    Examples
    --------
    >>> getattr_, dir_ = attach("vlad", {"VladError": "vlad.errors"})
    >>> getattr_("VladError").__name__, "VladError" in dir_()
    ('VladError', True)
    """

    def __getattr__(name: str) -> object:
        if name in exports:
            value = getattr(importlib.import_module(exports[name]), name)
        elif not name.startswith("_") and importlib.util.find_spec(f"{package}.{name}"):
            value = importlib.import_module(f"{package}.{name}")
        else:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        module = sys.modules[package]
        return sorted(
            set(vars(module)) | set(exports) | set(getattr(module, "__all__", ()))
        )

    return __getattr__, __dir__
