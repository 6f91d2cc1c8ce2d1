"""Command-line options of the benchmarks taken from vlad's specification of
its parameters (:class:`vlad.core.Parameter`: ``vlad.core.POWER``, the
descriptor options of ``vlad.images.DESCRIPTOR_PARAMETERS``), so that an
option means, defaults to and refuses what the library's does, in the
library's words."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

import vlad.images
from vlad.core import Parameter

__all__ = ["descriptor_parameter", "spec_argument"]


def descriptor_parameter(name: str) -> Parameter:
    """The specification of the descriptor option ``name`` (``max_side``...).

    Raises
    ------
    KeyError
        No descriptor option of that name.
    """
    for parameter in vlad.images.DESCRIPTOR_PARAMETERS:
        if parameter.name == name:
            return parameter
    raise KeyError(f"no descriptor option {name!r}")


def spec_argument(
    parser: argparse.ArgumentParser, parameter: Parameter, *flags: str, **attributes
) -> argparse.Action:
    """``parser.add_argument`` for ``parameter``: its type (values checked by
    :meth:`Parameter.check`, refused with its message), default and help.

    ``flags`` default to ``--NAME`` (``--max-side`` for ``max_side``);
    ``attributes`` replace what the specification gives.

    Examples
    --------
    >>> import argparse
    >>> from vlad.core import POWER
    >>> parser = argparse.ArgumentParser()
    >>> _ = spec_argument(parser, POWER)
    >>> parser.parse_args([]).power, parser.parse_args(["--power", "0.5"]).power
    (1.0, 0.5)
    """
    flags = flags or ("--" + parameter.name.replace("_", "-"),)
    settings: dict[str, Any] = {
        "default": parameter.default,
        "help": f"{parameter.help} (default: {parameter.default})",
    }
    if parameter.kind is bool:
        settings["action"] = argparse.BooleanOptionalAction
    else:
        settings["type"] = checked(parameter)
        if parameter.choices:
            settings["choices"] = parameter.choices
    return parser.add_argument(*flags, **{**settings, **attributes})


def checked(parameter: Parameter) -> Callable[[str], Any]:
    """An argparse ``type`` that reads ``parameter``'s kind and checks it."""

    def read(text: str) -> Any:
        try:
            return parameter.check(parameter.kind(text))
        except (TypeError, ValueError) as error:
            message = str(error)
            if not isinstance(error, vlad.VladError):  # the text is no number
                expected = parameter.expectation
                message = f"{parameter.name} must be {expected}; got {text!r}"
            raise argparse.ArgumentTypeError(message) from None

    read.__name__ = parameter.name
    return read
