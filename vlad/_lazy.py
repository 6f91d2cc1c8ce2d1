"""Public names of a sub-package, imported from its private modules on first
use, so that importing one module of vlad (the ``vlad`` command does) does not
import every module beside it."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

__all__ = ["attach", "attach_declared", "declared_exports"]


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


def declared_exports(source: str, package: str) -> dict[str, str]:
    r"""The names that the ``if TYPE_CHECKING:`` block of ``source`` (the text
    of ``package``'s ``__init__``) imports, each with its module: a
    sub-package's one list of its public names, which type checkers read
    too. A sub-module imported by name (``from vlad import datasets``) maps
    to itself.

    Examples
    --------
    >>> text = "if TYPE_CHECKING:\n    from vlad.errors import VladError as E\n"
    >>> declared_exports(text, "vlad")
    {'E': 'vlad.errors'}
    """
    exports = {}
    for node in ast.parse(source).body:
        if not (
            isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING"
        ):
            continue
        for statement in node.body:
            if not isinstance(statement, ast.ImportFrom):
                raise ValueError(f"{package}: only 'from ... import' in TYPE_CHECKING")
            for alias in statement.names:
                name = alias.asname or alias.name
                module = statement.module
                if module == package:  # a sub-module, found by attach
                    module = f"{package}.{name}"
                exports[name] = module
    return exports


def attach_declared(
    package: str, init_file: str, defined: Sequence[str] = ()
) -> tuple[Callable[[str], object], Callable[[], list[str]], list[str]]:
    """:func:`attach` with the public names that the ``if TYPE_CHECKING:``
    block of ``init_file`` imports (:func:`declared_exports`): each name
    written once, in that block.

    Parameters
    ----------
    package : str
        The package's ``__name__``.
    init_file : str
        Its ``__file__``.
    defined : sequence of str, default=()
        Public names the ``__init__`` defines itself.

    Returns
    -------
    getattr, dir : callable
        As :func:`attach`.
    all : list of str
        The package's ``__all__``: the declared and defined names, sorted.
    """
    exports = declared_exports(Path(init_file).read_text(encoding="utf-8"), package)
    modules = {
        name: module
        for name, module in exports.items()
        if module != f"{package}.{name}"
    }
    getattr_, dir_ = attach(package, modules)
    return getattr_, dir_, sorted([*exports, *defined])
