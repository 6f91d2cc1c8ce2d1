"""``vlad evaluate``: on the results of a real ``vlad search`` of the bundled
photos in all three formats, revisited and Holidays ground truths, and its
errors."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import pytest
from photos import DATA, PHOTOS

from vlad.evaluation import evaluate, load_ground_truth
from vlad.search import read_rankings

from .conftest import run

#: Photos whose copies are the queries (kept few, for speed).
QUERIED = PHOTOS[:4]


@pytest.fixture(scope="module")
def searched(tmp_path_factory, codebook_path):
    """Cropped and rotated copies of four photos searched in an index of all
    eight by the real commands; results in .json, .csv and .txt, and the
    ground truth (copy -> original, tagged by transform)."""
    folder = tmp_path_factory.mktemp("evaluate")
    queries = folder / "queries"
    queries.mkdir()
    truth = {}
    for name in QUERIED:
        image = cv2.imread(str(DATA / name))
        height, width = image.shape[:2]
        crop = image[height // 10 : -height // 10, width // 8 : -width // 8]
        turn = cv2.getRotationMatrix2D((width / 2, height / 2), 15, 1.0)
        rotated = cv2.warpAffine(image, turn, (width, height))
        stem = Path(name).stem
        cv2.imwrite(str(queries / f"{stem}-crop.png"), crop)
        cv2.imwrite(str(queries / f"{stem}-rotated.png"), rotated)
        for transform in ("crop", "rotated"):
            truth[f"{stem}-{transform}.png"] = {"relevant": [name], "tags": [transform]}
    truth["never-searched.png"] = {"relevant": ["rocket.jpg"], "tags": ["crop"]}
    truth["nothing-to-find.png"] = {"relevant": [], "tags": ["rotated"]}
    (folder / "gt.json").write_text(json.dumps(truth))
    run("encode", DATA, "-c", codebook_path, "-o", folder / "db.npy", "-q")
    run("encode", queries, "-c", codebook_path, "-o", folder / "q.npy", "-q")
    run("index", folder / "db.npy", "-o", folder / "index", "-q")
    for suffix in ("json", "csv", "txt"):
        output = folder / f"results.{suffix}"
        run(
            "search", folder / "index", folder / "q.npy", "--top", 8, "-o", output, "-q"
        )
    return folder


@pytest.mark.parametrize("suffix", ["json", "csv", "txt"])
def test_evaluate_gives_the_library_evaluation_of_each_results_format(searched, suffix):
    results = searched / f"results.{suffix}"
    output = searched / f"evaluation-{suffix}.json"
    shown = run(
        "evaluate", results, "-g", searched / "gt.json", "--json", output,
        "--cutoff", 1, "--cutoff", 3,
    )  # fmt: skip
    written = json.loads(output.read_text())
    expected = evaluate(
        read_rankings(results), load_ground_truth(searched / "gt.json"), ks=(1, 3)
    ).to_dict()
    assert written == {
        **expected,
        "results": str(results),
        "ground_truth": str(searched / "gt.json"),
        "ground_truth_kind": "vlad",
    }
    # The table, then a line written by the library's logger.
    lines = shown.stderr.splitlines()
    header = next(
        i for i, line in enumerate(lines) if line.split()[:2] == ["queries", "mAP"]
    )
    rows = [line.split() for line in lines[header + 1 : header + 4]]
    assert [row[:2] for row in rows] == [["all", "9"], ["crop", "5"], ["rotated", "4"]]
    assert rows[0][2] == f"{100 * written['mean']['mAP']:.2f}"
    assert "warning: 1 query of the ground truth is not in the results" in (
        shown.stderr
    )
    assert "warning: 1 query has no relevant image" in shown.stderr
    assert f"wrote the evaluation of 10 queries to {output}" in shown.stderr
    assert shown.stdout == ""
    # Eight copies of photos of distinct scenes, searched in all eight
    # photos: found, most at first place (the index holds nothing else).
    assert written["per_query"]["never-searched.png"]["AP"] == 0.0
    assert written["mean"]["recall@3"] >= 7 / 9
    assert written["by_tag"]["crop"]["n_missing"] == 1


def test_the_three_formats_give_the_same_means(searched):
    means = []
    for suffix in ("json", "csv", "txt"):
        rankings = read_rankings(searched / f"results.{suffix}")
        truth = load_ground_truth(searched / "gt.json")
        means.append(evaluate(rankings, truth).mean)
    assert means[0] == means[1] == means[2]


def test_per_query_lines_and_quiet(searched):
    args = ["evaluate", searched / "results.json", "-g", searched / "gt.json"]
    shown = " ".join(run(*args, "--per-query").stderr.split())
    assert "never-searched.png 0.00 - 0/1 crop (not in the results)" in shown
    assert "nothing-to-find.png - - 0/0 rotated (not in the results)" in shown
    assert run(*args, "-qq").stderr == ""


def test_the_json_is_not_replaced_without_overwrite(searched, tmp_path):
    output = tmp_path / "evaluation.json"
    output.write_text("precious")
    args = ["evaluate", searched / "results.json", "-g", searched / "gt.json"]
    refused = run(*args, "--json", output, exit_code=1)
    assert refused.stderr == (
        f"Error: {output} already exists; pass --overwrite to replace it\n"
    )
    assert output.read_text() == "precious"
    run(*args, "--json", output, "--overwrite")
    assert json.loads(output.read_text())["format"] == "vlad evaluation"
    assert not list(tmp_path.glob(".*.tmp"))


def test_revisited_protocols_and_holidays_names(tmp_path):
    results = tmp_path / "results.csv"
    results.write_text(
        "query,rank,name,score\nq.jpg,1,j.jpg,0.9\nq.jpg,2,h.jpg,0.8\n"
        "q.jpg,3,x.jpg,0.7\nq.jpg,4,e.jpg,0.6\n"
    )
    lists = {"q.jpg": {"easy": ["e.jpg"], "hard": ["h.jpg"], "junk": ["j.jpg"]}}
    (tmp_path / "revisited.json").write_text(json.dumps(lists))
    # easy: h and j junk, e second; medium: j junk, h first, e third; hard:
    # e and j junk, h first.
    expected = {"easy": 0.25, "medium": (1 + 7 / 12) / 2, "hard": 1.0}
    for protocol, ap in expected.items():
        output = tmp_path / f"{protocol}.json"
        run(
            "evaluate", results, "-g", tmp_path / "revisited.json",
            "--protocol", protocol, "--json", output,
        )  # fmt: skip
        written = json.loads(output.read_text())
        assert written["mean"]["mAP"] == pytest.approx(ap)
        assert written["ground_truth_kind"] == f"revisited {protocol}"
    pairs = tmp_path / "pairs.txt"
    pairs.write_text(
        "jpg/100000.jpg jpg/100000.jpg\njpg/100000.jpg jpg/100001.jpg\n"
        "jpg/100100.jpg jpg/100000.jpg\njpg/100100.jpg jpg/100101.jpg\n"
    )
    names = tmp_path / "db.names.txt"
    names.write_text("jpg/100000.jpg\njpg/100001.jpg\njpg/100100.jpg\njpg/100101.jpg\n")
    output = tmp_path / "holidays.json"
    run("evaluate", pairs, "-g", names, "--holidays", "--json", output)
    written = json.loads(output.read_text())
    # The first query finds itself (junk), then its scene; the second finds
    # the other scene's query, then its own.
    assert written["per_query"]["jpg/100000.jpg"]["AP"] == 1.0
    assert written["per_query"]["jpg/100100.jpg"]["AP"] == 0.25


@pytest.mark.parametrize(
    "ground_truth, extra, exit_code, message",
    [
        ({"other.png": {"relevant": ["a.jpg"]}}, [], 1, "name none of the 1 query of"),
        ({"q": {"relevant": "a.jpg"}}, [], 1, "query 'q': 'relevant' must be a list"),
        ({"q": {"easy": [], "hard": [], "junk": []}}, [], 1, "need a protocol"),
        ({"q": {"relevant": []}}, ["--protocol", "easy"], 1, "unknown key 'relevant'"),
        ({"q": {"relevant": []}}, ["--holidays"], 1, "not named as INRIA Holidays"),
        ({"q": {"relevant": []}}, ["--holidays", "--protocol", "hard"], 2, "exclude"),
        ({"q": {"relevant": []}}, ["--json", "out.txt"], 2, "must end in .json"),
        ({"q": {"relevant": []}}, ["--cutoff", 0], 2, "0 is not in the range x>=1"),
    ],
)
def test_errors_are_one_line(
    searched, tmp_path, ground_truth, extra, exit_code, message
):
    path = tmp_path / "gt.json"
    path.write_text(json.dumps(ground_truth))
    result = run(
        "evaluate", searched / "results.json", "-g", path, *extra, exit_code=exit_code
    )
    assert message in result.stderr
    if exit_code == 1:
        assert result.stderr.count("\n") == 1 and result.stderr.startswith("Error: ")


def test_a_results_file_that_is_not_one_is_refused(searched, tmp_path):
    damaged = tmp_path / "results.json"
    damaged.write_text('{"queries": []}')
    result = run("evaluate", damaged, "-g", searched / "gt.json", exit_code=1)
    assert result.stderr == (
        f"Error: {damaged} is not a vlad search results file: it does not say "
        "format='vlad search results'\n"
    )
