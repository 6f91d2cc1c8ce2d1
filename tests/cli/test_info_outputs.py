"""``vlad info`` describes every file and folder a vlad command writes: each
command, with each of its outputs, runs once into a folder of its own, and
every entry it leaves there is described as the kind of thing it is. A new
output (a file beside another, a new option that writes) fails here until
it is described."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest
from photos import DATA

from vlad.cli._main import main

from .conftest import FAST, run

#: Options (click parameter names) that name something a command writes.
WRITING_OPTIONS = ("output", "html", "json")

#: Each case: the command line (``{out}`` the case's empty folder, ``{name}``
#: an input made once by the ``inputs`` fixture), what it leaves in ``{out}``
#: (entry -> the kind ``vlad info`` gives it), and a module it needs.
CASES = {
    "extract .npz": (
        ["extract", "{photos}", *FAST, "-o", "{out}/d.npz"],
        {"d.npz": "descriptor sets"},
        None,
    ),
    "extract shards": (
        ["extract", "{photos}", *FAST, "-o", "{out}/d"],
        {"d": "descriptor sets"},
        None,
    ),
    "fit": (
        ["fit", "{descriptors}", "--n-clusters", 4, "-o", "{out}/codebook.npz"],
        {"codebook.npz": "codebook"},
        None,
    ),
    "encode .npy": (
        ["encode", "{descriptors}", "-c", "{codebook}", "-o", "{out}/v.npy"],
        {"v.npy": "vectors", "v.names.txt": "vector names", "v.json": "vectors record"},
        None,
    ),
    "encode shards": (
        ["encode", "{descriptors}", "-c", "{codebook}", "-o", "{out}/v"],
        {"v": "vectors"},
        None,
    ),
    "encode .h5": (
        ["encode", "{descriptors}", "-c", "{codebook}", "-o", "{out}/v.h5"],
        {"v.h5": "vectors"},
        "h5py",
    ),
    "index": (
        ["index", "{vectors}", "-o", "{out}/index", "--pca", 4],
        {"index": "index"},
        None,
    ),
    "index faiss": (
        ["index", "{vectors}", "-o", "{out}/index", "--factory", "PCA8,Flat"],
        {"index": "index"},
        "faiss",
    ),
    "index asmk": (
        ["index", "{descriptors}", "--method", "asmk", "-c", "{codebook}"]
        + ["-o", "{out}/asmk"],
        {"asmk": "asmk index"},
        None,
    ),
    "index asmk --full": (
        ["index", "{descriptors}", "--method", "asmk", "--full", "-c", "{codebook}"]
        + ["-o", "{out}/asmk"],
        {"asmk": "asmk index"},
        None,
    ),
    "search .json --html": (
        ["search", "{index}", "{photos}", "-c", "{codebook}", "--top", 2]
        + ["--rerank", "spatial", "--database-descriptors", "{descriptors}"]
        + ["-o", "{out}/results.json", "--html", "{out}/results.html"]
        + ["--images", DATA],
        {
            "results.json": "search results",
            "results.html": "search page",
            "results_files": "page folder",
        },
        "PIL",
    ),
    "search .csv": (
        ["search", "{index}", "{vectors}", "--top", 3, "-o", "{out}/results.csv"],
        {"results.csv": "search results"},
        None,
    ),
    "search .txt": (
        ["search", "{index}", "{vectors}", "--top", 3, "-o", "{out}/results.txt"],
        {"results.txt": "search results"},
        None,
    ),
    "evaluate": (
        ["evaluate", "{results}", "-g", "{truth}", "--json", "{out}/evaluation.json"]
        + ["--html", "{out}/report.html", "--images", DATA, "--query-images", DATA],
        {
            "evaluation.json": "evaluation",
            "report.html": "evaluation report",
            "report_files": "page folder",
        },
        "PIL",
    ),
    "show-matches .png": (
        ["show-matches", DATA / "coffee.jpg", DATA / "coffee.jpg", *FAST]
        + ["-o", "{out}/matches.png"],
        {"matches.png": "image"},
        None,
    ),
    "show-matches .jpg": (
        ["show-matches", DATA / "coffee.jpg", DATA / "coffee.jpg", *FAST]
        + ["-o", "{out}/matches.jpg"],
        {"matches.jpg": "image"},
        None,
    ),
}


@pytest.fixture(scope="module")
def inputs(tmp_path_factory, photo_sets, codebook_path) -> dict[str, Path]:
    """What the cases read: two photos, the bundled photos' descriptors, a
    codebook, vectors, an index, search results and a ground truth."""
    folder = tmp_path_factory.mktemp("inputs")
    made = {
        "photos": folder / "photos",
        "descriptors": folder / "descriptors.npz",
        "codebook": codebook_path,
        "vectors": folder / "vectors.npy",
        "index": folder / "index",
        "results": folder / "results.json",
        "truth": folder / "truth.json",
    }
    made["photos"].mkdir()
    for name in ("chelsea.jpg", "coffee.jpg"):
        shutil.copy(DATA / name, made["photos"] / name)
    photo_sets.save(made["descriptors"])
    run("encode", made["descriptors"], "-c", codebook_path, "-o", made["vectors"])
    run("index", made["vectors"], "-o", made["index"])
    run("search", made["index"], made["vectors"], "--top", 3, "-o", made["results"])
    truth = {name: {"relevant": [name]} for name in photo_sets.names}
    made["truth"].write_text(json.dumps(truth))
    return made


@pytest.mark.parametrize(
    ("arguments", "expected", "module"), CASES.values(), ids=list(CASES)
)
def test_info_describes_what_each_command_writes(
    tmp_path, inputs, arguments, expected, module
):
    if module is not None and importlib.util.find_spec(module) is None:
        pytest.skip(f"needs {module}")
    names = {name: str(path) for name, path in inputs.items()}
    run(*(str(argument).format(out=tmp_path, **names) for argument in arguments))
    assert sorted(entry.name for entry in tmp_path.iterdir()) == sorted(expected)
    for name, kind in expected.items():
        summary = json.loads(run("info", "--json", tmp_path / name).stdout)
        assert summary["kind"] == kind, (name, summary)
        assert summary["file"] == str(tmp_path / name)
        assert f"\nkind: {kind}\n" in run("info", tmp_path / name).stdout
        if kind in ("search page", "evaluation report"):
            assert summary["n_images"] > 0 and summary["n_missing"] == 0
            assert summary["folder"] == str(tmp_path / name).replace(".html", "_files")
        if kind == "page folder":
            assert summary["page"] == str(tmp_path / name).replace("_files", ".html")
            assert summary["n_thumbnails"] > 0 and summary["n_other_files"] == 0


def test_every_option_that_writes_is_run_above():
    """Each option of each command that names an output is in a case, so
    that a new command or option that writes is described too."""
    writing = {
        (name, parameter.name)
        for name, command in main.commands.items()
        for parameter in command.params
        if parameter.name in WRITING_OPTIONS
    }
    covered = set()
    for arguments, _, _ in CASES.values():
        command = main.commands[arguments[0]]
        for parameter in command.params:
            if set(getattr(parameter, "opts", ())) & set(map(str, arguments)):
                covered.add((arguments[0], parameter.name))
    assert writing <= covered, sorted(writing - covered)
    assert {"extract", "fit", "encode", "index", "search", "evaluate"} <= {
        name for name, _ in writing
    }
