"""Outputs that another run writes while this one works, without --overwrite:
results files, evaluations, pages and pictures of matches are never replaced
(they used to be, silently, by the run that finished last); the command ends
with one line and the other run's file stays."""

from __future__ import annotations

import json

import numpy as np
import pytest
from photos import DATA

import vlad
import vlad.cli._evaluate
import vlad.cli._search
import vlad.pages._evaluation_page
import vlad.pages._matches
import vlad.pages._search_page
from hostile.conftest import assert_one_line_error, invoke
from vlad.search import build_index

NAMES = [f"{i}.jpg" for i in range(4)]


@pytest.fixture
def searched(tmp_path):
    """An index of four vectors, the vectors as queries, their results and a
    ground truth."""
    vectors = np.eye(4, dtype=np.float32)
    build_index(vectors, NAMES).save(tmp_path / "index")
    vlad.save_vectors(tmp_path / "queries.npy", vectors, NAMES, {})
    invoke(
        "search",
        tmp_path / "index",
        tmp_path / "queries.npy",
        "-o",
        tmp_path / "results.json",
    )
    truth = {name: {"relevant": [name]} for name in NAMES}
    (tmp_path / "truth.json").write_text(json.dumps(truth))
    return tmp_path


def overtaking(monkeypatch, module, name: str, output):
    """Make ``module.name`` write ``output`` (another run's) after its work,
    before the command writes its own."""
    original = getattr(module, name)

    def overtaken(*args, **options):
        returned = original(*args, **options)
        output.write_bytes(b"another run's")
        return returned

    monkeypatch.setattr(module, name, overtaken)


#: (arguments after the fixture's folder, the output, where another run
#: writes it first: module and function called before the final write).
CASES = {
    "search -o": (
        lambda f: ("search", f / "index", f / "queries.npy", "-o", f / "r.json"),
        "r.json",
        (vlad.cli._search, "search_index"),
    ),
    "search --html": (
        lambda f: ("search", f / "index", f / "queries.npy", "--html", f / "p.html"),
        "p.html",
        (vlad.pages._search_page, "make_files"),
    ),
    "evaluate --json": (
        lambda f: (
            "evaluate",
            f / "results.json",
            "-g",
            f / "truth.json",
            "--json",
            f / "e.json",
        ),
        "e.json",
        (vlad.cli._evaluate, "evaluate_files"),
    ),
    "evaluate --html": (
        lambda f: (
            "evaluate",
            f / "results.json",
            "-g",
            f / "truth.json",
            "--html",
            f / "e.html",
        ),
        "e.html",
        (vlad.pages._evaluation_page, "make_files"),
    ),
    "show-matches": (
        lambda f: (
            "show-matches",
            DATA / "chelsea.jpg",
            DATA / "chelsea.jpg",
            "-o",
            f / "m.png",
            "--max-side",
            128,
        ),
        "m.png",
        (vlad.pages._matches, "draw_matches"),
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_an_output_written_meanwhile_is_not_replaced(searched, monkeypatch, case):
    arguments, name, (module, function) = CASES[case]
    output = searched / name
    overtaking(monkeypatch, module, function, output)
    result = invoke(*arguments(searched), exit_code=1)
    error = assert_one_line_error(result.output, str(output))
    assert "exists; pass overwrite" in error or "appeared while" in error, error
    assert output.read_bytes() == b"another run's"
    assert not [path.name for path in searched.iterdir() if path.name.endswith(".tmp")]


@pytest.mark.parametrize("case", CASES)
def test_with_overwrite_the_output_is_replaced(searched, monkeypatch, case):
    arguments, name, (module, function) = CASES[case]
    output = searched / name
    overtaking(monkeypatch, module, function, output)
    invoke(*arguments(searched), "--overwrite")
    assert output.read_bytes() != b"another run's"
