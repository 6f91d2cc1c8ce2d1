"""benchmarks.options: the benchmarks' options that vlad specifies take the
specification's default, help and checks, and refuse a bad value with the
library's own message."""

from __future__ import annotations

import argparse

import pytest

import vlad
from benchmarks.options import descriptor_parameter, spec_argument
from benchmarks.retrieval.run import main as retrieval_main
from vlad.core import POWER
from vlad.images import DESCRIPTOR_PARAMETERS

#: The benchmarks' own tests: a CI step of their own, not the default run.
pytestmark = pytest.mark.benchmarks

SPECIFIED = [POWER, *DESCRIPTOR_PARAMETERS]


def parser_of(parameter) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="bench", exit_on_error=False)
    spec_argument(parser, parameter)
    return parser


@pytest.mark.parametrize("parameter", SPECIFIED, ids=lambda p: p.name)
def test_the_default_and_help_are_the_specification_s(parameter):
    parser = parser_of(parameter)
    assert getattr(parser.parse_args([]), parameter.name) == parameter.default
    assert parameter.help in " ".join(parser.format_help().split())


@pytest.mark.parametrize(
    ("parameter", "text"),
    [
        (POWER, "2"),
        (POWER, "0"),
        (descriptor_parameter("max_side"), "-1"),
        (descriptor_parameter("max_keypoints"), "-5"),
        (descriptor_parameter("features"), "surf"),
    ],
)
def test_a_bad_value_gets_the_library_s_message(parameter, text, capsys):
    with pytest.raises(vlad.VladError) as library:
        parameter.check(parameter.kind(text))
    parser = argparse.ArgumentParser(prog="bench")
    spec_argument(parser, parameter)
    flag = "--" + parameter.name.replace("_", "-")
    with pytest.raises(SystemExit) as exit_status:
        parser.parse_args([flag, text])
    assert exit_status.value.code == 2
    error = capsys.readouterr().err.splitlines()[-1]
    assert error == f"bench: error: argument {flag}: {library.value}"


def test_text_that_is_no_number_is_refused_in_the_library_s_words(capsys):
    parser = argparse.ArgumentParser(prog="bench")
    spec_argument(parser, descriptor_parameter("max_side"))
    with pytest.raises(SystemExit):
        parser.parse_args(["--max-side", "1.5"])
    assert capsys.readouterr().err.splitlines()[-1] == (
        "bench: error: argument --max-side: max_side must be an integer >= 0; got '1.5'"
    )


def test_a_bool_is_a_flag_pair_and_attributes_replace_the_specification():
    reduce_jpeg = descriptor_parameter("reduce_jpeg")
    parser = parser_of(reduce_jpeg)
    assert parser.parse_args(["--reduce-jpeg"]).reduce_jpeg is True
    assert parser.parse_args(["--no-reduce-jpeg"]).reduce_jpeg is False
    parser = argparse.ArgumentParser()
    spec_argument(parser, POWER, "--alpha", dest="alpha", default=0.5)
    assert parser.parse_args([]).alpha == 0.5
    assert parser.parse_args(["--alpha", "0.2"]).alpha == 0.2


def test_an_unknown_descriptor_option_is_refused():
    with pytest.raises(KeyError, match="no descriptor option 'colour'"):
        descriptor_parameter("colour")


def test_the_retrieval_runner_refuses_what_vlad_refuses(tmp_path, capsys):
    with pytest.raises(SystemExit):
        retrieval_main([str(tmp_path), "--power", "1.5"])
    assert (
        capsys.readouterr()
        .err.splitlines()[-1]
        .endswith("argument --power: power must be a number in (0, 1]; got 1.5")
    )
