"""Every default of a specified parameter is the specification's
(vlad.core._parameters): in the signature of each public function, class and
method, and on the command line, where the option's help is the
specification's too. A literal default that differs fails here, unless it is
listed below with its reason."""

from __future__ import annotations

import importlib
import inspect

import click
import pytest

from vlad.cli._main import main
from vlad.cli._options import _Specified
from vlad.core import _parameters
from vlad.core._parameters import Parameter
from vlad.images._extractors import FEATURES
from vlad.images._learned import LEARNED_PARAMETERS
from vlad.images._sift import DESCRIPTOR_PARAMETERS

#: The packages whose public names are checked.
PACKAGES = (
    "vlad",
    "vlad.core",
    "vlad.estimators",
    "vlad.evaluation",
    "vlad.formats",
    "vlad.images",
    "vlad.pages",
    "vlad.pipeline",
    "vlad.search",
    "vlad.asmk",
    "vlad.verification",
)

#: Every specified parameter by name: the library's own, then the descriptor
#: options (SIFT's; learned features' own below).
SPECIFIED: dict[str, Parameter] = {
    **{
        parameter.name: parameter
        for parameter in vars(_parameters).values()
        if isinstance(parameter, Parameter)
    },
    **{parameter.name: parameter for parameter in DESCRIPTOR_PARAMETERS},
}
#: Learned features' options, where their defaults are not SIFT's.
LEARNED = {parameter.name: parameter for parameter in LEARNED_PARAMETERS}

#: Signatures whose parameter of a specified name is another parameter, or
#: whose default is decided elsewhere: (qualified name, parameter) -> why.
EXCEPTIONS = {
    ("vlad.search.QueryExpansion", "alpha"): "query expansion's weight exponent",
    ("vlad.search.expand_queries", "alpha"): "query expansion's weight exponent",
    ("vlad.assign_nearest", "n_nearest"): (
        "the count itself; EncodingOptions resolves None to it"
    ),
    ("vlad.assignment_weights", "assignment"): (
        "the weights of multiple or soft assignment; hard has none"
    ),
    ("vlad.SIFTExtractor", "root_sift"): "None: as suits the features",
    ("vlad.SiftOptions", "root_sift"): "None: as suits the features",
    ("vlad.extract_sift", "root_sift"): "None: as suits the features",
    ("vlad.verification.rerank_spatially", "ratio"): "None: the descriptors' preset",
    ("vlad.verification.rerank_spatially", "depth"): "None: the descriptors' preset",
    (
        "vlad.verification.rerank_spatially",
        "min_inliers",
    ): "None: the descriptors' preset",
    ("vlad.verification.rerank_spatially", "verify_keypoints"): (
        "None: the descriptors' preset"
    ),
    ("vlad.verification.expand_verified", "min_inliers"): "None: the results' record",
    ("vlad.pipeline.search_index", "min_inliers"): "None: the descriptors' preset",
    ("vlad.pipeline.search_verified", "min_inliers"): "None: the descriptors' preset",
    ("vlad.pipeline.search_verified", "k"): "None: every image of the index",
    **{
        ("vlad.verification.check_verification", name): "None: not checked"
        for name in ("ratio", "min_inliers", "verify_keypoints")
    },
}


def specification(owner: str, name: str) -> Parameter | None:
    """The specification of parameter ``name`` of ``owner``."""
    if owner.startswith("vlad.LearnedOptions") and name in LEARNED:
        return LEARNED[name]
    if name == "features" and owner.startswith("vlad.FeatureExtractor"):
        return FEATURES
    return SPECIFIED.get(name)


def public_callables():
    """(qualified name, callable) of each public function, class and public
    method of :data:`PACKAGES`, each once."""
    seen = set()
    for package in PACKAGES:
        module = importlib.import_module(package)
        for name in module.__all__:
            value = getattr(module, name)
            if not callable(value) or id(value) in seen:
                continue
            seen.add(id(value))
            qualified = f"{package}.{name}"
            yield qualified, value
            if inspect.isclass(value):
                for attribute, member in vars(value).items():
                    if attribute.startswith("_") and attribute != "__init__":
                        continue
                    function = getattr(value, attribute)
                    if callable(function) and id(member) not in seen:
                        seen.add(id(member))
                        yield f"{qualified}.{attribute}", function


def specified_defaults():
    """(owner, parameter name, default, specification) of every parameter of
    a specified name with a default."""
    for owner, function in public_callables():
        try:
            signature = inspect.signature(function)
        except (TypeError, ValueError):
            continue
        for parameter in signature.parameters.values():
            specified = specification(owner, parameter.name)
            if specified is None or parameter.default is inspect.Parameter.empty:
                continue
            yield owner, parameter.name, parameter.default, specified


DEFAULTS = sorted(specified_defaults(), key=lambda entry: (entry[0], entry[1]))


def test_the_public_signatures_hold_specified_parameters():
    """The check below sees the library: the parameters of the list."""
    names = {name for _, name, _, _ in DEFAULTS}
    for name in ("n_jobs", "ratio", "matching", "verify_keypoints", "alpha", "k"):
        assert name in names


@pytest.mark.parametrize(
    ("owner", "name", "default", "specified"),
    DEFAULTS,
    ids=[f"{owner}-{name}" for owner, name, _, _ in DEFAULTS],
)
def test_each_default_is_the_specification_s(owner, name, default, specified):
    if (owner, name) in EXCEPTIONS or (owner.rsplit(".", 1)[0], name) in EXCEPTIONS:
        return
    assert default == specified.default and type(default) is type(specified.default), (
        f"{owner}({name}={default!r}): the specification's default is "
        f"{specified.default!r}; take it from vlad.core._parameters"
    )


def test_the_listed_exceptions_exist():
    """A listed exception that no longer differs is taken off the list."""
    found = {(owner, name) for owner, name, _, _ in DEFAULTS}
    for owner, name in EXCEPTIONS:
        assert (owner, name) in found or (
            any(key[0].startswith(owner) and key[1] == name for key in found)
        ), (owner, name)


def command_options():
    """(command name, option) of every option of every ``vlad`` command."""
    context = click.Context(main)
    for name in main.list_commands(context):
        command = main.get_command(context, name)
        for option in command.params:
            if isinstance(option, click.Option):
                yield name, option


#: Options of a specified name that take another default (or help) on the
#: command line: (command, parameter) -> why.
OPTION_EXCEPTIONS = {
    ("search", "ratio"): "None: the descriptors' preset",
    ("search", "verify_keypoints"): "None: the descriptors' preset",
    ("search", "min_inliers"): "None: the descriptors' preset",
    ("search", "rerank_depth"): "None: the descriptors' preset",
}


@pytest.mark.parametrize(
    ("command", "option"),
    [
        (command, option)
        for command, option in command_options()
        if not option.hidden
        and (isinstance(option.type, _Specified) or option.name in SPECIFIED)
    ],
    ids=lambda value: getattr(value, "name", value),
)
def test_each_option_of_a_specified_parameter_comes_from_it(command, option):
    if isinstance(option.type, _Specified):
        specified = option.type.parameter
    else:
        specified = SPECIFIED[option.name]
        # A flag of a bool, or a descriptor option of a codebook's default.
        assert specified.kind is bool, (
            f"vlad {command} {option.opts[0]} is not made by spec_option"
        )
    assert first_sentence(specified.help) in " ".join(option.help.split()).lower(), (
        f"vlad {command} {option.opts[0]}: its help is not the specification's"
    )
    if (command, option.name) in OPTION_EXCEPTIONS:
        assert option.default is None
    elif option.default is None and isinstance(option.show_default, str):
        pass  # "the codebook's", "all cores": decided where the value is used
    else:
        assert option.default == specified.default, (
            f"vlad {command} {option.opts[0]} defaults to {option.default!r}; the "
            f"specification's default is {specified.default!r}"
        )


def first_sentence(help: str) -> str:
    """The first sentence of a help, lower case, as an option's help holds it
    (after a prefix such as "With --method asmk: ")."""
    return " ".join(help.split(". ")[0].split()).lower()
