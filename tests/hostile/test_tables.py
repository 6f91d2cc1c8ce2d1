"""Names and tags that would drive the terminal or forge table rows, in the
tables ``vlad search`` and ``vlad evaluate`` print, and results files that
hold scores no search gives."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import vlad
from hostile.conftest import assert_one_line_error, invoke, record
from vlad.search._results import FORMAT, FORMAT_VERSION

#: Names that clear the screen, set the window's title, add a column and (in
#: a folder of shards, whose names are JSON) a line, and hold an undecodable
#: byte that is a C1 control (CSI) to an 8-bit terminal.
FORGING = ["a\x1b[2J.jpg", "b\x1b]0;owned\x07\tforged.jpg", "c\x9b31m\udc9b1m.jpg"]


def test_search_table_escapes_names(tmp_path):
    vlad.save_vectors(tmp_path / "v.npy", np.eye(3), FORGING, {})
    invoke("index", tmp_path / "v.npy", "-o", tmp_path / "index", "-q")
    shown = invoke("search", tmp_path / "index", tmp_path / "v.npy", "--top", 1)
    rows = shown.stdout_bytes.split(b"\n")
    assert rows[-1] == b"" and len(rows) == 4
    for row, name in zip(rows, FORGING, strict=False):
        controls = [b for b in row if b < 0x20 and b != 0x09 or 0x7F <= b <= 0x9F]
        assert controls == [], row
        fields = row.split(b"\t")
        assert len(fields) == 4 and fields[0] == fields[3]
        assert fields[0].decode() == vlad.formats._names.printable(name)
    assert b"b\\x1b]0;owned\\x07\\x09forged.jpg" in shown.stdout_bytes
    record("handled")


def _results(path, queries: dict[str, list], score=0.5) -> None:
    document = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "queries": [
            {"query": query, "results": [{"name": n, "score": score} for n in names]}
            for query, names in queries.items()
        ],
    }
    path.write_text(json.dumps(document))


def test_evaluate_tables_escape_query_names_and_tags(tmp_path):
    forged_query = "q\x1b[2J\nall    100.00.jpg"
    forged_tag = "t\x1b]0;owned\x07\nevil\tx"
    _results(tmp_path / "r.json", {forged_query: ["a.jpg"], "p.jpg": ["b.jpg"]})
    truth = {
        forged_query: {"relevant": ["a.jpg"], "tags": [forged_tag]},
        "p.jpg": {"relevant": ["a.jpg"], "tags": ["plain"]},
    }
    (tmp_path / "gt.json").write_text(json.dumps(truth))
    shown = invoke(
        "evaluate", tmp_path / "r.json", "-g", tmp_path / "gt.json", "--per-query"
    ).stderr
    assert not any(ord(c) < 0x20 and c != "\n" or c == "\x7f" for c in shown)
    lines = shown.splitlines()
    # Means: header, all, two tags; a blank line; per query: header, two.
    assert len(lines) == 8, shown
    labels = [line.split()[0] for line in lines[1:4]]
    assert sorted(labels) == sorted(["all", "plain", printed(forged_tag)])
    assert printed(forged_query) in shown and printed(forged_tag) in shown
    record("handled")


def printed(text: str) -> str:
    return vlad.formats._names.printable(text)


@pytest.mark.parametrize("score", [math.nan, math.inf, "0.5", True])
def test_evaluate_refuses_json_scores_that_are_not_finite_numbers(tmp_path, score):
    _results(tmp_path / "r.json", {"q.jpg": ["a.jpg"]}, score=score)
    (tmp_path / "gt.json").write_text(json.dumps({"q.jpg": {"relevant": ["a.jpg"]}}))
    result = invoke(
        "evaluate", tmp_path / "r.json", "-g", tmp_path / "gt.json", exit_code=1
    )
    assert_one_line_error(
        result.output, "r.json", "score of result 1 of query 'q.jpg'", "finite number"
    )


@pytest.mark.parametrize("score", ["nan", "-inf", "high"])
def test_evaluate_refuses_csv_scores_that_are_not_finite_numbers(tmp_path, score):
    rows = f"query,rank,name,score\r\nq.jpg,1,a.jpg,{score}\r\n"
    (tmp_path / "r.csv").write_text(rows, newline="")
    (tmp_path / "gt.json").write_text(json.dumps({"q.jpg": {"relevant": ["a.jpg"]}}))
    result = invoke(
        "evaluate", tmp_path / "r.csv", "-g", tmp_path / "gt.json", exit_code=1
    )
    assert_one_line_error(result.output, "r.csv", "finite number", repr(score))
