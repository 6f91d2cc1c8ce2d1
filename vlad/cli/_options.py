"""Options shared by the subcommands, as decorators."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from pathlib import Path

import click

from vlad.cli._reporting import log_to_stderr
from vlad.core._parameters import (
    ASSIGNMENT,
    GEOMETRY,
    INLIER_THRESHOLD,
    KERNEL_WIDTH,
    MATCHING,
    N_JOBS,
    N_NEAREST,
    RATIO,
    RESIDUAL_NORM,
    VERIFY_KEYPOINTS,
    Parameter,
)
from vlad.errors import ParameterError, VladError
from vlad.images._extractors import FEATURES
from vlad.images._learned import LEARNED_PARAMETERS, LearnedOptions, check_device
from vlad.images._sift import DESCRIPTOR_PARAMETERS, SiftOptions

__all__ = [
    "SpecifiedChoice",
    "SpecifiedFloat",
    "SpecifiedInt",
    "SpecifiedText",
    "deprecated_alias",
    "option_group",
    "assignment_options",
    "descriptor_options",
    "input_argument",
    "jobs_option",
    "output_option",
    "overwrite_option",
    "preset_defaults",
    "spec_option",
    "verbosity_options",
    "verification_options",
]

_DEFAULTS = SiftOptions()
_LEARNED_DEFAULTS = LearnedOptions()
#: The options of learned features that OpenCV's lack, on the command line
#: (``model`` is the library's alone: "model" is verification's geometry).
_LEARNED_ONLY = ("detection_threshold", "batch_size")


class _Specified:
    """A click type that checks a value by its :class:`Parameter`, so that a
    bad value gets the message the library gives: ``Error: Invalid value for
    '--power': power must be a number in (0, 1]; got 2.0``."""

    parameter: Parameter

    def convert(self, value, param, ctx):
        if isinstance(value, str) and self.parameter.kind in (int, float):
            try:
                value = self.parameter.kind(value)
            except ValueError:
                # Text that is no number: refused as the library refuses it.
                pass
        try:
            return self.parameter.check(value)
        except ParameterError:
            self.fail(self.parameter.message(value), param, ctx)

    def _describe_range(self) -> str:
        """The range in ``--help``, with the values allowed outside it:
        ``-1 or x>=1``."""
        specials = [str(value) for value, _ in self.parameter.specials]
        return " or ".join([*specials, super()._describe_range()])


class SpecifiedInt(_Specified, click.IntRange):
    """An integer option checked by its :class:`Parameter`; its range shows in
    ``--help`` as :class:`click.IntRange`'s does."""

    def __init__(self, parameter: Parameter):
        self.parameter = parameter
        super().__init__(**_bounds(parameter))


class SpecifiedFloat(_Specified, click.FloatRange):
    """A number option checked by its :class:`Parameter`."""

    def __init__(self, parameter: Parameter):
        self.parameter = parameter
        super().__init__(**_bounds(parameter))


class SpecifiedChoice(_Specified, click.Choice):
    """A choice option checked by its :class:`Parameter`."""

    def __init__(self, parameter: Parameter):
        self.parameter = parameter
        super().__init__(parameter.choices)


class SpecifiedText(_Specified, click.ParamType):
    """A text option (a faiss string) checked by its :class:`Parameter`."""

    name = "text"

    def __init__(self, parameter: Parameter):
        self.parameter = parameter


def _bounds(parameter: Parameter) -> dict:
    """:class:`click.IntRange`'s or :class:`click.FloatRange`'s bounds."""
    return {
        "min": parameter.low,
        "max": parameter.high,
        "min_open": parameter.low is not None and not parameter.low_closed,
        "max_open": parameter.high is not None and not parameter.high_closed,
    }


def spec_option(parameter: Parameter, *decls: str, **attributes) -> Callable:
    """``click.option`` for ``parameter``: its type, default and help.

    ``decls`` default to ``--NAME`` (``--max-side`` for ``max_side``), or
    ``--NAME/--no-NAME`` for a bool that is not ``is_flag``. ``attributes``
    replace what the specification gives (``default=None`` for "the
    codebook's").
    """
    if not decls:
        flag = "--" + parameter.name.replace("_", "-")
        if parameter.kind is bool and not attributes.get("is_flag"):
            flag = f"{flag}/--no-{flag[2:]}"
        decls = (flag,)
    settings = {"help": parameter.help, "default": parameter.default}
    if parameter.kind is not bool:
        kinds = {int: SpecifiedInt, float: SpecifiedFloat, str: SpecifiedChoice}
        if parameter.kind is str and not parameter.choices:
            kinds[str] = SpecifiedText
        settings["type"] = kinds[parameter.kind](parameter)
    if parameter.default is not None:
        settings["show_default"] = True
    return click.option(*decls, **{**settings, **attributes})


def input_argument(command: Callable) -> Callable:
    """``INPUT...``: image folders and files, or one descriptors file."""
    return click.argument(
        "inputs",
        metavar="INPUT...",
        nargs=-1,
        required=True,
        type=click.Path(exists=True, path_type=Path),
    )(command)


def option_group(
    keyword: str,
    names: Sequence[str],
    options: Sequence[Callable],
    *,
    drop_unset: bool = False,
) -> Callable[[Callable], Callable]:
    """A decorator adding ``options`` to a command, whose values (the
    parameters ``names``) reach the command as one dict, its keyword
    ``keyword``; with ``drop_unset``, only those not None."""

    def decorator(command: Callable) -> Callable:
        @functools.wraps(command)
        def wrapper(*args, **kwargs):
            chosen = {name: kwargs.pop(name) for name in names}
            if drop_unset:
                chosen = {
                    name: value for name, value in chosen.items() if value is not None
                }
            return command(*args, **{keyword: chosen}, **kwargs)

        for option in reversed(options):
            wrapper = option(wrapper)
        return wrapper

    return decorator


def deprecated_alias(
    old: str, new: str, name: str, command_name: str, **attributes
) -> Callable[[Callable], Callable]:
    """A hidden option ``old`` that gives the parameter ``name`` (the option
    ``new``) its value, saying on stderr that ``old`` is deprecated.

    The command receives ``name`` as if ``new`` had been given; giving both is
    a usage error. ``attributes`` are ``click.option``'s (``type``,
    ``multiple``), as ``new``'s.
    """
    alias = f"deprecated_{name}"

    def decorator(command: Callable) -> Callable:
        @functools.wraps(command)
        def wrapper(*args, **kwargs):
            value = kwargs.pop(alias)
            if value is None or value == ():
                return command(*args, **kwargs)
            ctx = click.get_current_context()
            if ctx.get_parameter_source(name) != click.core.ParameterSource.DEFAULT:
                raise click.UsageError(f"{old} and {new} are one option; give {new}")
            click.echo(
                f"{old} is deprecated for vlad {command_name}; use {new}", err=True
            )
            # As if given as new: commands that read ctx.params see it too.
            ctx.set_parameter_source(name, click.core.ParameterSource.COMMANDLINE)
            ctx.params[name] = value
            return command(*args, **{**kwargs, name: value})

        return click.option(old, alias, hidden=True, **attributes)(wrapper)

    return decorator


def assignment_options(command: Callable) -> Callable:
    """``--residual-norm``, ``--assignment``, ``--nearest`` and
    ``--kernel-width``: the encoding variants of :class:`vlad.EncodingOptions`,
    passed to the command as its keyword ``variants`` (a dict of its fields)."""
    return option_group(
        "variants",
        ("residual_norm", "assignment", "n_nearest", "kernel_width"),
        [
            spec_option(RESIDUAL_NORM),
            spec_option(ASSIGNMENT),
            spec_option(N_NEAREST, "--nearest", "n_nearest"),
            spec_option(KERNEL_WIDTH),
        ],
    )(command)


def output_option(suffix: str, help: str) -> Callable[[Callable], Callable]:
    """``-o/--output FILE``, a file name that must end in ``suffix``."""

    def check_suffix(ctx, param, value: Path) -> Path:
        if value.suffix.lower() != suffix:
            raise click.BadParameter(f"must end in {suffix}; got {str(value)!r}")
        return value

    return click.option(
        "-o",
        "--output",
        required=True,
        type=click.Path(dir_okay=False, path_type=Path),
        callback=check_suffix,
        help=help,
    )


overwrite_option = click.option(
    "--overwrite", is_flag=True, help="Replace output files that already exist."
)


jobs_option = spec_option(N_JOBS, "-j", "--jobs", "n_jobs", show_default="all cores")


def verbosity_options(command: Callable) -> Callable:
    """``-v/--verbose`` and ``-q/--quiet``, passed on as one ``verbosity``
    (verbose minus quiet), with the library's messages shown on stderr."""

    @functools.wraps(command)
    def wrapper(*args, verbose: int, quiet: int, **kwargs):
        verbosity = verbose - quiet
        with log_to_stderr(verbosity):
            return command(*args, verbosity=verbosity, **kwargs)

    wrapper = click.option(
        "-q",
        "--quiet",
        count=True,
        help="Show less: no progress bar or summary (-q), no warnings (-qq).",
    )(wrapper)
    return click.option(
        "-v", "--verbose", count=True, help="Show more: one line per image (-v)."
    )(wrapper)


def descriptor_options(
    from_codebook: bool, *, extractor: bool = True
) -> Callable[[Callable], Callable]:
    """The descriptor options, passed on as one ``descriptor_options`` dict holding
    only those given on the command line, and ``--extractor`` as ``extractor``.

    With ``from_codebook``, the help says that options not given are the
    codebook's; otherwise, that they are the library's defaults. Without
    ``extractor``, there is no ``--extractor`` (commands that need keypoints).
    """

    def shown_default(name: str) -> str:
        """How the help shows the default of option ``name``."""
        if from_codebook:
            return "the codebook's"
        if name == "root_sift":
            return "--root-sift for SIFT"
        if name in _LEARNED_ONLY:
            return str(getattr(_LEARNED_DEFAULTS, name))
        value = getattr(_DEFAULTS, name)
        if isinstance(value, bool):
            flag = name.replace("_", "-")
            return f"--{flag}" if value else f"--no-{flag}"
        learned = getattr(_LEARNED_DEFAULTS, name, value)
        if name != "features" and learned != value:
            return f"{value}; {learned} for aliked"
        return str(value)

    extractor_options = [
        click.option(
            "--extractor",
            metavar="MODULE:FUNCTION",
            default=None,
            help="Describe images with this Python callable instead of OpenCV: "
            "imported by name, it takes an RGB uint8 array (H, W, 3) and returns "
            "a float array (L, F)"
            + (" (the codebook's, when fitted with one)." if from_codebook else "."),
        )
    ]
    learned = {parameter.name: parameter for parameter in LEARNED_PARAMETERS}
    parameters = [
        FEATURES if parameter.name == "features" else parameter
        for parameter in DESCRIPTOR_PARAMETERS
    ] + [learned[name] for name in _LEARNED_ONLY]
    options = [
        spec_option(parameter, default=None, show_default=shown_default(parameter.name))
        for parameter in parameters
    ] + [
        click.option(
            "--weights",
            type=click.Path(exists=True, dir_okay=False, path_type=Path),
            default=None,
            help="Learned features: the network's weights, a PyTorch file (read "
            "without running code, its keys checked). Default: the authors' "
            "weights, downloaded once into PyTorch's hub cache"
            + (", the codebook's (their SHA-256 checked)." if from_codebook else "."),
        ),
        click.option(
            "--device",
            metavar="DEVICE",
            default=None,
            callback=_check_device,
            show_default="auto",
            help="Learned features: where the network runs: cpu, cuda, cuda:N, "
            "mps, or auto (CUDA where PyTorch has it, else the CPU).",
        ),
    ]
    return option_group(
        "descriptor_options",
        (*(parameter.name for parameter in parameters), "weights", "device"),
        (extractor_options if extractor else []) + options,
        drop_unset=True,
    )


def _check_device(ctx, param, value: str | None) -> str | None:
    if value is not None:
        try:
            check_device(value)
        except VladError as error:
            raise click.BadParameter(str(error)) from None
    return value


def verification_options(
    *, from_descriptors: bool = False
) -> Callable[[Callable], Callable]:
    """``--matching``, ``--ratio``, ``--geometry``, ``--inlier-threshold`` and
    ``--verify-keypoints``: how spatial verification pairs descriptors and
    which model it fits, gathered into one ``verification`` keyword (a dict of
    :func:`vlad.verification.inlier_matches`'s ``matching``, ``ratio``, ``model``,
    ``reprojection_threshold`` and ``verify_keypoints``).

    With ``from_descriptors`` (``vlad search``), ``--ratio`` and
    ``--verify-keypoints`` default to None, "as suits the descriptors"
    (:data:`vlad.verification.VERIFICATION_PRESETS`), and
    ``--verification-preset`` adds ``preset``. Without it (SIFT of images
    only), they default to SIFT's settings."""
    from vlad.verification._presets import VERIFICATION_PRESETS

    names = ["matching", "ratio", "model", "reprojection_threshold", "verify_keypoints"]
    if from_descriptors:
        ratio = spec_option(
            RATIO,
            default=None,
            show_default=False,
            help=RATIO.help
            + " Learned descriptors need a higher one than SIFT."
            + preset_defaults("ratio", "{:g}".format),
        )
        verify_keypoints = spec_option(
            VERIFY_KEYPOINTS,
            default=None,
            show_default=False,
            help=VERIFY_KEYPOINTS.help
            + preset_defaults("max_keypoints", lambda kept: f"{kept or 0}"),
        )
        presets = [
            click.option(
                "--verification-preset",
                "preset",
                type=click.Choice(sorted(VERIFICATION_PRESETS)),
                help="Verify with the settings that suit these descriptors "
                "(--rerank-depth, --ratio, --min-inliers and --verify-keypoints, "
                "those not given) whatever the descriptors' record says. "
                "[default: read from the descriptors' record: vlad extract's "
                "names its extractor, hloc's file name does "
                "(feats-aliked-n16.h5); else sift's, with a warning]",
            )
        ]
        names.append("preset")
    else:
        ratio = spec_option(RATIO)
        verify_keypoints = spec_option(VERIFY_KEYPOINTS)
        presets = []
    return option_group(
        "verification",
        names,
        [
            spec_option(MATCHING),
            ratio,
            spec_option(GEOMETRY, "--geometry", "model"),
            spec_option(
                INLIER_THRESHOLD, "--inlier-threshold", "reprojection_threshold"
            ),
            verify_keypoints,
            *presets,
        ],
    )


def preset_defaults(field: str, show: Callable[[object], str]) -> str:
    """The defaults of a verification setting by kind of descriptors, for
    ``--help``: ``" [default: as suits the descriptors: 0.9 for aliked, 0.8
    for sift]"``."""
    from vlad.verification._presets import VERIFICATION_PRESETS

    values = ", ".join(
        f"{show(getattr(settings, field))} for {name}"
        for name, settings in sorted(VERIFICATION_PRESETS.items())
    )
    return f" [default: as suits the descriptors: {values}]"
