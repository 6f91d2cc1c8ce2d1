"""vlad.evaluation.evaluate: which queries count, means overall and by tag, the
JSON it writes, and the results of a real search."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from vlad.evaluation import (
    QueryTruth,
    average_precision,
    evaluate,
    precision_at_k,
    recall_at_k,
    reciprocal_rank,
)
from vlad.search import build_index

TRUTH = {
    "q1": {"relevant": ["a", "b"], "tags": ["day", "easy"]},
    "q2": {"relevant": ["c"], "junk": ["y"], "tags": ["night"]},
    "q3": {"relevant": ["d"], "tags": ["night"]},
    "q4": {"relevant": [], "junk": ["a"], "tags": ["night"]},
}
RANKINGS = {"q1": ["a", "x", "b"], "q2": ["y", "x", "c"], "q4": ["a"], "extra": ["a"]}


def test_missing_unknown_and_empty_queries_are_counted_and_listed():
    evaluation = evaluate(RANKINGS, TRUTH, ks=[1, 2])
    ap1, ap2 = (1 + 7 / 12) / 2, 0.25
    mean = evaluation.mean
    assert mean["n_queries"] == 3  # q1, q2 and q3 (missing: AP 0); q4 left out
    assert (mean["n_missing"], mean["n_without_relevant"]) == (1, 1)
    assert mean["mAP"] == pytest.approx((ap1 + ap2 + 0.0) / 3)
    assert mean["MRR"] == pytest.approx((1 + 1 / 2 + 0) / 3)
    assert mean["recall@1"] == pytest.approx(1 / 3)
    assert mean["recall@2"] == pytest.approx(2 / 3)
    assert mean["precision@2"] == pytest.approx((1 / 2 + 1 / 2 + 0) / 3)
    assert evaluation.missing_queries == ["q3"]
    assert evaluation.unknown_queries == ["extra"]
    assert evaluation.queries_without_relevant == ["q4"]
    notes = " ".join(evaluation.notes)
    assert "1 query of the ground truth is not in the results" in notes
    assert "1 query of the results is not in the ground truth" in notes
    assert "1 query has no relevant image" in notes


def test_by_tag_averages_the_queries_of_each_tag():
    evaluation = evaluate(RANKINGS, TRUTH, ks=[1])
    by_tag = evaluation.by_tag
    assert list(by_tag) == ["day", "easy", "night"]
    assert by_tag["day"]["n_queries"] == 1
    assert by_tag["day"]["mAP"] == pytest.approx((1 + 7 / 12) / 2)
    night = by_tag["night"]
    assert (night["n_queries"], night["n_missing"], night["n_without_relevant"]) == (
        2,
        1,
        1,
    )
    assert night["mAP"] == pytest.approx(0.25 / 2)


def test_step_map_is_the_mean_non_interpolated_ap_overall_and_by_tag():
    evaluation = evaluate(RANKINGS, TRUTH, ks=[1])
    # q1: a at 1, b at 3 (x between); q2: junk y removed, c at 2; q3 missing.
    q1, q2, q3 = (1 / 1 + 2 / 3) / 2, 1 / 2, 0.0
    assert evaluation.step_map["mean"] == pytest.approx((q1 + q2 + q3) / 3)
    assert evaluation.step_map["by_tag"] == pytest.approx(
        {"day": q1, "easy": q1, "night": (q2 + q3) / 2}
    )
    assert evaluation.queries[0].step_average_precision == pytest.approx(q1)
    assert math.isnan(evaluation.queries[3].step_average_precision)  # q4: none
    nothing = evaluate({"q": ["a"]}, {"q": {"relevant": [], "tags": ["t"]}})
    assert math.isnan(nothing.step_map["mean"])
    assert math.isnan(nothing.step_map["by_tag"]["t"])


def test_a_tag_whose_queries_have_nothing_to_find_has_no_mean():
    truth = {"q1": {"relevant": ["a"]}, "q2": {"relevant": [], "tags": ["t"]}}
    evaluation = evaluate({"q1": ["a"], "q2": ["a"]}, truth)
    assert math.isnan(evaluation.by_tag["t"]["mAP"])
    assert evaluation.to_dict()["by_tag"]["t"]["mAP"] is None


@st.composite
def evaluation_cases(draw):
    pool = [f"db{i}" for i in range(8)]
    n_queries = draw(st.integers(1, 6))
    truth, rankings = {}, {}
    for query in range(n_queries):
        relevant = draw(st.lists(st.sampled_from(pool), unique=True, max_size=4))
        others = [name for name in pool if name not in relevant]
        junk = draw(st.lists(st.sampled_from(others), unique=True, max_size=2))
        tags = draw(st.lists(st.sampled_from(["a", "b"]), unique=True))
        truth[f"q{query}"] = QueryTruth(tuple(relevant), tuple(junk), tuple(tags))
        if draw(st.booleans()) or query == 0:
            rankings[f"q{query}"] = draw(st.lists(st.sampled_from(pool), max_size=10))
    return rankings, truth, draw(st.lists(st.integers(1, 12), max_size=3))


@given(evaluation_cases())
def test_means_are_the_plain_means_of_the_per_query_functions(case):
    rankings, truth, ks = case
    evaluation = evaluate(rankings, truth, ks)
    assert evaluation.ks == tuple(sorted(set(ks)))
    for tag in [None, "a", "b"]:
        counted = [
            query
            for query, expected in truth.items()
            if expected.relevant and (tag is None or tag in expected.tags)
        ]
        summary = evaluation.mean if tag is None else evaluation.by_tag.get(tag)
        if summary is None:
            assert not any(tag in expected.tags for expected in truth.values())
            continue
        assert summary["n_queries"] == len(counted)
        functions = {"mAP": average_precision, "MRR": reciprocal_rank}
        for k in ks:
            functions[f"recall@{k}"] = lambda r, rel, j, k=k: recall_at_k(r, rel, k, j)
            functions[f"precision@{k}"] = lambda r, rel, j, k=k: precision_at_k(
                r, rel, k, j
            )
        for name, function in functions.items():
            values = [
                function(
                    rankings.get(query, []), truth[query].relevant, truth[query].junk
                )
                for query in counted
            ]
            if values:
                assert summary[name] == pytest.approx(float(np.mean(values)))
            else:
                assert math.isnan(summary[name])


def test_a_ranking_that_repeats_a_name_gets_a_note():
    evaluation = evaluate({"q": ["x", "x", "a"]}, {"q": {"relevant": ["a"]}})
    assert evaluation.mean["mAP"] == pytest.approx(0.25)
    assert "1 ranking names an image more than once" in evaluation.notes[0]


def test_to_dict_has_what_the_retrieval_benchmark_reads(tmp_path):
    evaluation = evaluate(RANKINGS, TRUTH, ks=(1, 5, 10))
    document = evaluation.to_dict()
    for key in ("mAP", "recall@1", "recall@10"):
        assert isinstance(document["mean"][key], float)
    for tag in ("day", "night"):
        assert {"n_queries", "mAP", "recall@1"} <= set(document["by_tag"][tag])
    assert document["per_query"]["q1"]["first_rank"] == 1
    assert document["per_query"]["q3"] == {
        "tags": ["night"],
        "in_results": False,
        "n_relevant": 1,
        "n_found": 0,
        "first_rank": None,
        "AP": 0.0,
        "RR": 0.0,
        **{
            f"{metric}@{k}": 0.0
            for k in (1, 5, 10)
            for metric in ("recall", "precision")
        },
    }
    assert document["per_query"]["q4"]["AP"] is None
    path = tmp_path / "evaluation.json"
    evaluation.write(path)
    assert json.loads(path.read_text()) == json.loads(json.dumps(document))


def test_the_table_shows_the_means_in_percent():
    table = evaluate(RANKINGS, TRUTH, ks=[1]).format_table(per_query=True)
    lines = table.splitlines()
    assert lines[0].split() == ["queries", "mAP", "MRR", "R@1", "P@1"]
    assert lines[1].split()[:3] == ["all", "3", f"{100 * (19 / 24 + 0.25) / 3:.2f}"]
    assert [line.split()[0] for line in lines[2:5]] == ["day", "easy", "night"]
    assert "q3 0.00 - 0/1 night (not in the results)" in " ".join(table.split())
    assert "q4 - - 0/0 night" in " ".join(table.split())


@pytest.mark.parametrize(
    "rankings, truth, ks, error, match",
    [
        ({"other": ["a"]}, TRUTH, [1], ValueError, "name none of the 4 queries"),
        ({}, TRUTH, [1], ValueError, "they name none"),
        ({"q1": "a"}, TRUTH, [1], TypeError, r"rankings\['q1'\] must be a list"),
        ({"q1": [1]}, TRUTH, [1], TypeError, "must hold names"),
        (["q1"], TRUTH, [1], TypeError, "rankings must map"),
        (RANKINGS, {}, [1], ValueError, "ground_truth names no query"),
        (RANKINGS, {"q1": {"relevant": "a"}}, [1], ValueError, "ground_truth, query"),
        (RANKINGS, TRUTH, [0], ValueError, "ks must hold ints of at least 1"),
        (RANKINGS, TRUTH, 5, TypeError, "ks must be a sequence"),
    ],
)
def test_bad_arguments_are_refused_in_one_line(rankings, truth, ks, error, match):
    with pytest.raises(error, match=match) as caught:
        evaluate(rankings, truth, ks)
    assert "\n" not in str(caught.value)


def test_search_results_evaluate_as_their_rankings():
    """An index of eight vectors searched with noisy copies of them: every
    copy finds its original first."""
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((8, 16)).astype(np.float32)
    names = [f"db{i}.jpg" for i in range(8)]
    index = build_index(vectors, names)
    queries = vectors + 0.01 * rng.standard_normal(vectors.shape).astype(np.float32)
    query_names = [f"copy{i}.jpg" for i in range(8)]
    results = index.search(queries, 3, query_names=query_names)
    truth = {
        query: {"relevant": [name]}
        for query, name in zip(query_names, names, strict=True)
    }
    evaluation = evaluate(results.rankings(), truth, ks=[1, 3])
    assert evaluation.mean["mAP"] == 1.0 and evaluation.mean["recall@1"] == 1.0
    assert evaluation.mean["precision@3"] == pytest.approx(1 / 3)


def test_names_that_are_not_utf8_survive_the_json(tmp_path):
    name = b"caf\xe9.jpg".decode(errors="surrogateescape")
    evaluation = evaluate({name: ["a"]}, {name: {"relevant": ["a"]}})
    evaluation.write(tmp_path / "evaluation.json")
    written = json.loads((tmp_path / "evaluation.json").read_text(encoding="ascii"))
    assert list(written["per_query"]) == [name]


def test_names_that_match_nothing_are_noted_with_the_closest_names():
    """Results named under the folders searched and a ground truth without
    them: the notes say which names come closest."""
    rankings = {
        "queries/q1.jpg": ["database/a.jpg", "database/b.jpg"],
        "q2.jpg": ["c.jpeg"],
    }
    truth = {"q1.jpg": {"relevant": ["a.jpg"]}, "q2.jpg": {"relevant": ["c.jpg"]}}
    notes = evaluate(rankings, truth).notes
    assert notes[0].endswith(": 'q1.jpg' (closest: 'queries/q1.jpg')")
    assert notes[1] == (
        "none of the 2 relevant images of the ground truth is in any ranking: are "
        "names relative to the same folders? 'a.jpg' (closest: 'database/a.jpg'), "
        "'c.jpg' (closest: 'c.jpeg')"
    )
    with pytest.raises(ValueError, match=r"'q1.jpg' \(closest: 'queries/q1.jpg'\)"):
        evaluate({"queries/q1.jpg": ["a.jpg"]}, truth)
    # Names that match: no such note.
    assert evaluate({"q1.jpg": ["b.jpg", "a.jpg"]}, truth).notes == [
        "1 query of the ground truth is not in the results and counts as finding "
        "nothing (a pairs file has no line for a query that found nothing): 'q2.jpg'"
    ]
