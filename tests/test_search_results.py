"""Search results files: vlad.search._results written as .json, .csv and pairs
.txt, and read back by read_rankings."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vlad.search import QueryResult, SearchResults, read_rankings
from vlad.search._results import results_from_arrays

#: Names that file systems allow and simple formats trip over.
AWKWARD_NAMES = [
    "a,b.jpg",
    'say "cheese".jpg',
    "it's.jpg",
    "tab\there.jpg",
    "two  spaces.jpg",
    " leading.jpg",
    "trailing .jpg",
    "line\nbreak.jpg",
    "carriage\rreturn.jpg",
    "crlf\r\n.jpg",
    "café/日本語/Ünïcödé.jpg",
    "caf\udce9.jpg",  # undecodable byte 0xe9 of a Latin-1 file name
    "#hash.jpg",
    "query,rank,name,score",
    "",
]


def results_of(rankings: dict[str, list[str]], reasons=None) -> SearchResults:
    """SearchResults with descending scores 1, 1/2, 1/3, ..."""
    queries = []
    for query, names in rankings.items():
        scores = np.array([1 / (rank + 1) for rank in range(len(names))], np.float32)
        reason = (reasons or {}).get(query)
        queries.append(
            QueryResult(query, tuple(names), scores, np.arange(len(names)), reason)
        )
    return SearchResults(queries, {"k": 3}, ["a note"])


def test_awkward_names_round_trip_through_json_and_csv(tmp_path):
    rankings = {
        'q,1\t"x"': AWKWARD_NAMES[:8],
        "q\r\n2 日本": AWKWARD_NAMES[8:],
        "found nothing": [],
    }
    results = results_of(rankings)
    results.write(tmp_path / "results.json")
    assert read_rankings(tmp_path / "results.json") == rankings
    results.write(tmp_path / "results.csv")
    # A query that found nothing has no row in a CSV.
    assert read_rankings(tmp_path / "results.csv") == {
        query: names for query, names in rankings.items() if names
    }


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.dictionaries(
        st.text(max_size=8),
        st.lists(st.text(max_size=8), max_size=4),
        max_size=4,
    )
)
def test_any_names_round_trip_through_json_and_csv(tmp_path, rankings):
    results = results_of(rankings)
    results.write(tmp_path / "any.json")
    assert read_rankings(tmp_path / "any.json") == rankings
    results.write(tmp_path / "any.csv")
    assert read_rankings(tmp_path / "any.csv") == {
        query: names for query, names in rankings.items() if names
    }


name_without_space = st.text(
    st.characters(
        blacklist_categories=("Cs", "Zs", "Zl", "Zp", "Cc"),
        blacklist_characters="\x1c\x1d\x1e\x1f\x85",
    ),
    min_size=1,
    max_size=8,
)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.dictionaries(
        # A line starting with "#" is a comment to COLMAP.
        name_without_space.filter(lambda name: not name.startswith("#")),
        st.lists(name_without_space, min_size=1, max_size=4),
        max_size=4,
    )
)
def test_names_without_whitespace_round_trip_through_pairs(tmp_path, rankings):
    results_of(rankings).write(tmp_path / "pairs.txt")
    assert read_rankings(tmp_path / "pairs.txt") == rankings


def test_the_pairs_file_is_hloc_s_format(tmp_path):
    results = results_of({"q1.jpg": ["a.jpg", "b.jpg"], "q2.jpg": ["b.jpg"], "q3": []})
    results.write(tmp_path / "pairs.txt")
    assert (tmp_path / "pairs.txt").read_text() == (
        "q1.jpg a.jpg\nq1.jpg b.jpg\nq2.jpg b.jpg\n"
    )


@pytest.mark.parametrize(
    "name", [n for n in AWKWARD_NAMES if not n or any(c.isspace() for c in n)]
)
def test_pairs_refuse_names_they_cannot_hold(tmp_path, name):
    with pytest.raises(ValueError, match="write .json or .csv") as raised:
        results_of({"q.jpg": ["a.jpg", name]}).write(tmp_path / "pairs.txt")
    assert "\n" not in str(raised.value)
    assert not (tmp_path / "pairs.txt").exists()


def test_pairs_refuse_a_query_that_colmap_reads_as_a_comment(tmp_path):
    results_of({"q.jpg": ["#hash.jpg"]}).write(tmp_path / "pairs.txt")
    with pytest.raises(ValueError, match="comment to COLMAP") as raised:
        results_of({"#hash.jpg": ["q.jpg"]}).write(tmp_path / "hash.txt")
    assert "\n" not in str(raised.value)
    assert not (tmp_path / "hash.txt").exists()


def test_the_csv_file_has_a_header_and_one_row_per_hit(tmp_path):
    results_of({"q.jpg": ["a.jpg", "b,c.jpg"]}).write(tmp_path / "results.csv")
    with open(tmp_path / "results.csv", newline="") as handle:
        rows = list(csv.reader(handle))
    assert rows == [
        ["query", "rank", "name", "score"],
        ["q.jpg", "1", "a.jpg", "1.0"],
        ["q.jpg", "2", "b,c.jpg", "0.5"],
    ]


def test_the_json_file_holds_scores_inliers_reasons_notes_and_the_record(tmp_path):
    results = SearchResults(
        [
            QueryResult(
                "q.jpg",
                ("a.jpg", "b.jpg"),
                np.array([0.9, 0.25], np.float32),
                np.array([4, 0]),
                None,
                np.array([57, -1]),
            ),
            QueryResult(
                "blank.png", (), np.zeros(0), np.zeros(0, int), "no descriptors"
            ),
        ],
        {"k": 2, "index": {"n_images": 5}},
        ["k=2 is fine"],
    )
    results.write(tmp_path / "results.json")
    document = json.loads((tmp_path / "results.json").read_text())
    assert document == {
        "format": "vlad search results",
        "format_version": 1,
        "k": 2,
        "index": {"n_images": 5},
        "notes": ["k=2 is fine"],
        "queries": [
            {
                "query": "q.jpg",
                "results": [
                    {"name": "a.jpg", "score": 0.9, "inliers": 57},
                    {"name": "b.jpg", "score": 0.25, "inliers": -1},
                ],
            },
            {"query": "blank.png", "results": [], "reason": "no descriptors"},
        ],
    }
    assert results.n_empty == 1
    assert results.rankings() == {"q.jpg": ["a.jpg", "b.jpg"], "blank.png": []}


def test_csv_ranks_order_the_names_whatever_the_row_order(tmp_path):
    (tmp_path / "r.csv").write_text(
        "query,rank,name,score\nq,2,second,0.5\nq,1,first,0.9\nq,10,tenth,0.1\n"
    )
    assert read_rankings(tmp_path / "r.csv") == {"q": ["first", "second", "tenth"]}


def test_two_queries_of_one_name_are_refused(tmp_path):
    results = results_of({"q": ["a"]})
    results.queries.append(results.queries[0])
    with pytest.raises(ValueError, match="query 'q' appears twice"):
        results.rankings()
    results.write(tmp_path / "twice.json")
    with pytest.raises(ValueError, match="appears twice"):
        read_rankings(tmp_path / "twice.json")


def test_another_suffix_is_refused_when_writing_and_reading(tmp_path):
    with pytest.raises(ValueError, match=r"written as \.json, \.csv, \.txt"):
        results_of({"q": ["a"]}).write(tmp_path / "results.tsv")
    (tmp_path / "results.tsv").write_text("q a\n")
    with pytest.raises(ValueError, match="not a results file"):
        read_rankings(tmp_path / "results.tsv")


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("r.json", "{", "not a vlad search results file"),
        ("r.json", '{"format": "other"}', "does not say format"),
        ("r.json", "[1, 2]", "does not say format"),
        (
            "r.json",
            '{"format": "vlad search results", "format_version": 2, "queries": []}',
            "written by a newer vlad",
        ),
        ("r.json", '{"format": "vlad search results"}', "damaged"),
        (
            "r.json",
            '{"format": "vlad search results", "queries": [{"query": 1, '
            '"results": []}]}',
            "damaged",
        ),
        ("r.json", '{"format": "vlad search results", "queries": [{}]}', "damaged"),
        ("r.csv", "", "first line must be query,rank,name,score"),
        ("r.csv", "a,b\n", "first line must be"),
        ("r.csv", "query,rank,name,score\nq,first,a,0.5\n", "line 2: expected"),
        ("r.csv", "query,rank,name,score\nq,1,a\n", "line 2: expected"),
        ("r.csv", 'query,rank,name,score\nq,1,"a\n', "line 2"),
        ("r.txt", "q a\nq b c\n", "line 2: a pairs file holds two names"),
    ],
)
def test_files_that_are_not_results_are_refused_in_one_line(
    tmp_path, name, content, message
):
    (tmp_path / name).write_text(content)
    with pytest.raises(ValueError, match=message) as raised:
        read_rankings(tmp_path / name)
    assert "\n" not in str(raised.value)


def test_missing_files_and_folders(tmp_path):
    with pytest.raises(FileNotFoundError):
        read_rankings(tmp_path / "missing.json")
    (tmp_path / "folder.json").mkdir()
    with pytest.raises(ValueError, match="is a folder"):
        read_rankings(tmp_path / "folder.json")


def test_pairs_skip_blank_lines_and_accept_crlf(tmp_path):
    (tmp_path / "p.txt").write_bytes(b"q a\r\n\r\nq b\r\nr c\n")
    assert read_rankings(tmp_path / "p.txt") == {"q": ["a", "b"], "r": ["c"]}


def test_writing_replaces_a_file_atomically(tmp_path):
    path = tmp_path / "results.json"
    results_of({"q": ["old"]}).write(path)
    results_of({"q": ["new"]}).write(path)
    assert read_rankings(path) == {"q": ["new"]}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.json"]


@given(st.data())
def test_results_from_arrays_match_a_plain_loop(data):
    """Names found by one gather, with -1 rows left out wherever they are, as a
    plain loop over each query's rows finds them; names given as a list or as
    an object array alike."""
    n_images = data.draw(st.integers(1, 6))
    names = [f"image {row}.jpg" for row in range(n_images)]
    n_queries = data.draw(st.integers(0, 4))
    k = data.draw(st.integers(0, 5))
    rows = np.array(
        data.draw(
            st.lists(
                st.lists(st.integers(-1, n_images - 1), min_size=k, max_size=k),
                min_size=n_queries,
                max_size=n_queries,
            )
        ),
        dtype=np.int64,
    ).reshape(n_queries, k)
    scores = np.arange(rows.size, dtype=np.float64).reshape(rows.shape)
    query_names = [f"q{query}" for query in range(n_queries)]
    for given_names in (names, np.array(names, dtype=object)):
        found = results_from_arrays(query_names, given_names, scores, rows)
        assert [result.query for result in found] == query_names
        for result, query_scores, query_rows in zip(found, scores, rows, strict=True):
            kept = [column for column in range(k) if query_rows[column] >= 0]
            assert result.names == tuple(names[query_rows[c]] for c in kept)
            assert result.rows.tolist() == [query_rows[c] for c in kept]
            assert result.scores.dtype == np.float32
            assert result.scores.tolist() == [query_scores[c] for c in kept]
