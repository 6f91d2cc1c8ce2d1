"""The old spellings of renamed options: ``-k`` of ``vlad fit`` (now
``--n-clusters``), of ``vlad search`` (``--top``) and of ``vlad evaluate``
(``--cutoff``) still work, give the same outputs, and say so in one line on
stderr."""

from __future__ import annotations

import json

import pytest

from .conftest import run


@pytest.fixture(scope="module")
def made(tmp_path_factory, photo_sets):
    """Descriptors of the bundled photos, their vectors and index, results of
    searching it and a ground truth."""
    folder = tmp_path_factory.mktemp("deprecated")
    photo_sets.save(folder / "d.npz")
    run("fit", folder / "d.npz", "--n-clusters", 4, "-o", folder / "c.npz", "-q")
    run("encode", folder / "d.npz", "-c", folder / "c.npz", "-o", folder / "v.npy")
    run("index", folder / "v.npy", "-o", folder / "index", "-q")
    run("search", folder / "index", folder / "v.npy", "-o", folder / "r.txt", "-q")
    names = photo_sets.names
    truth = {name: {"relevant": [other for other in names if other != name]}
             for name in names}  # fmt: skip
    (folder / "gt.json").write_text(json.dumps(truth))
    return folder


def commands(folder, old, output):
    """The three renamed options, each spelled ``old`` or ``new``."""
    return {
        "fit": ["fit", folder / "d.npz", old["fit"], 4, "-o", output("npz")],
        # Fitting several vocabularies reads the number of centres otherwise.
        "fit --vocabularies": [
            "fit",
            folder / "d.npz",
            old["fit"],
            3,
            "--vocabularies",
            2,
            "-o",
            output("npz"),
        ],
        "search": [
            "search",
            folder / "index",
            folder / "v.npy",
            old["search"],
            3,
            "-o",
            output("txt"),
        ],  # fmt: skip
        "evaluate": [
            "evaluate",
            folder / "r.txt",
            "-g",
            folder / "gt.json",
            old["evaluate"],
            1,
            old["evaluate"],
            3,
            "--json",
            output("json"),
        ],  # fmt: skip
    }


NEW = {"fit": "--n-clusters", "search": "--top", "evaluate": "--cutoff"}
OLD = {command: "-k" for command in NEW}


@pytest.mark.parametrize("case", [*sorted(NEW), "fit --vocabularies"])
def test_the_old_spelling_gives_the_same_output_and_one_line_on_stderr(
    made, tmp_path, case
):
    command = case.split()[0]
    outputs = {}
    results = {}
    for spelling, names in (("old", OLD), ("new", NEW)):
        path = tmp_path / spelling

        def output(suffix, path=path):
            return path.with_suffix(f".{suffix}")

        results[spelling] = run(*commands(made, names, output)[case])
        outputs[spelling] = next(tmp_path.glob(f"{spelling}.*")).read_bytes()
    assert outputs["old"] == outputs["new"]
    notice = f"-k is deprecated for vlad {command}; use {NEW[command]}"
    old_lines = results["old"].stderr.splitlines()
    assert old_lines[0] == notice
    assert (
        old_lines[1:]
        == results["new"]
        .stderr.replace(str(tmp_path / "new"), str(tmp_path / "old"))
        .splitlines()
    )
    assert notice not in results["new"].stderr
    assert results["old"].stdout == results["new"].stdout


@pytest.mark.parametrize("command", sorted(NEW))
def test_old_and_new_spellings_together_are_refused(made, tmp_path, command):
    args = commands(made, OLD, lambda suffix: tmp_path / f"out.{suffix}")[command]
    result = run(*args, NEW[command], 2, exit_code=2)
    assert result.output.splitlines()[-1] == (
        f"Error: -k and {NEW[command]} are one option; give {NEW[command]}"
    )


@pytest.mark.parametrize("command", sorted(NEW))
def test_the_old_spelling_is_hidden_from_the_help(command):
    shown = run(command, "--help").output
    assert NEW[command] in shown
    assert "-k," not in shown and "-k " not in shown
