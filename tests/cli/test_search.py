"""``vlad search`` on the bundled photos: queries as vectors, descriptors or
images, results as a table or files, re-ranking, and one-line errors; the
Quick start's search."""

from __future__ import annotations

import json
import re
from pathlib import Path

import cv2
import numpy as np
import pytest
from photos import DATA, PHOTOS

import vlad
from vlad.core._parameters import VERIFY_KEYPOINTS
from vlad.errors import VladError
from vlad.formats._vectors import load_vectors
from vlad.search import QueryExpansion, load_index, read_rankings
from vlad.verification._spatial import (
    SMALLEST_MAX_KEYPOINTS,
    _check_max_keypoints,
    spatial_rerank,
)

from .conftest import FAST, run

README = Path(__file__).resolve().parents[2] / "README.md"


@pytest.fixture(scope="module")
def built(tmp_path_factory, codebook_path):
    """The bundled photos encoded with the fast codebook, their index, and
    their descriptors from ``vlad extract`` (with keypoints)."""
    folder = tmp_path_factory.mktemp("search")
    run("encode", DATA, "-c", codebook_path, "-o", folder / "v.npy")
    run("index", folder / "v.npy", "-o", folder / "index")
    run("extract", DATA, *FAST, "-o", folder / "descriptors.npz")
    return folder


def table(output: str) -> list[tuple[str, int, float, str]]:
    """The rows of the table ``vlad search`` prints: query, rank, score, name."""
    rows = []
    for line in output.splitlines():
        query, rank, score, name = line.split("\t")
        rows.append((query, int(rank), float(score), name))
    return rows


def test_help_shows_examples():
    assert "Examples:" in run("search", "--help").output


def test_vectors_file_queries_print_the_library_s_results(built):
    result = run("search", built / "index", built / "v.npy", "--top", 3)
    rows = table(result.stdout)
    vectors, names, _ = load_vectors(built / "v.npy")
    expected = load_index(built / "index").search(vectors, 3, query_names=names)
    assert [(q, rank, name) for q, rank, _, name in rows] == [
        (found.query, rank, name)
        for found in expected
        for rank, name in enumerate(found.names, start=1)
    ]
    np.testing.assert_allclose(
        [score for *_, score, _ in rows],
        np.concatenate([found.scores for found in expected]),
        atol=5e-5,
    )
    # Every photo finds itself first.
    assert [(q, name, score) for q, rank, score, name in rows if rank == 1] == [
        (name, name, 1.0) for name in PHOTOS
    ]


@pytest.mark.parametrize("given", ["file", "folder", "descriptors"])
def test_images_and_descriptors_are_encoded_as_the_index_s_vectors(
    built, codebook_path, given
):
    query = {
        "file": DATA / "chelsea.jpg",
        "folder": DATA,
        "descriptors": built / "descriptors.npz",
    }[given]
    result = run("search", built / "index", query, "-c", codebook_path, "--top", 2)
    rows = table(result.stdout)
    if given == "file":
        assert rows[0] == ("chelsea.jpg", 1, 1.0, "chelsea.jpg")
    else:
        firsts = [(query, name) for query, rank, _, name in rows if rank == 1]
        assert firsts == [(name, name) for name in PHOTOS]
        assert all(score == 1.0 for _, rank, score, _ in rows if rank == 1)


@pytest.mark.parametrize("suffix", [".json", ".csv", ".txt"])
def test_results_files_hold_the_ranking_printed(built, suffix):
    printed = table(run("search", built / "index", built / "v.npy", "--top", 4).stdout)
    expected: dict[str, list[str]] = {}
    for query, _, _, name in printed:
        expected.setdefault(query, []).append(name)
    output = built / f"results{suffix}"
    result = run("search", built / "index", built / "v.npy", "--top", 4, "-o", output)
    assert result.stdout == ""
    assert f"wrote the best 4 images of 8 queries to {output}" in result.stderr
    assert read_rankings(output) == expected
    refused = run("search", built / "index", built / "v.npy", "-o", output, exit_code=1)
    assert "already exists; pass --overwrite" in refused.stderr
    run(
        "search",
        built / "index",
        built / "v.npy",
        "--top",
        1,
        "-o",
        output,
        "--overwrite",
    )
    assert all(len(names) == 1 for names in read_rankings(output).values())


def test_an_unknown_results_suffix_is_a_usage_error(built, tmp_path):
    result = run(
        "search",
        built / "index",
        built / "v.npy",
        "-o",
        tmp_path / "r.tsv",
        exit_code=2,
    )
    assert "must end in .json, .csv, .txt" in result.stderr


def test_the_json_file_records_the_search(built, tmp_path):
    output = tmp_path / "results.json"
    run("search", built / "index", built / "v.npy", "--top", 20, "-o", output)
    document = json.loads(output.read_text())
    assert document["format"] == "vlad search results" and document["k"] == 20
    assert document["index"]["n_images"] == 8
    assert document["notes"] == [
        "k=20 but the index holds 8 images with descriptors: each query gets at most 8"
    ]
    assert len(document["queries"]) == 8
    assert all(len(entry["results"]) == 8 for entry in document["queries"])


def test_k_larger_than_the_index_is_a_warning(built):
    result = run("search", built / "index", built / "v.npy", "--top", 20)
    assert "warning: k=20 but the index holds 8 images" in result.stderr
    assert len(table(result.stdout)) == 64


def test_query_expansion_equals_the_library_s(built, tmp_path):
    output = tmp_path / "qe.json"
    run(
        "search", built / "index", built / "v.npy", "--top", 5, "-o", output,
        "--rerank", "qe", "--qe-neighbours", 2, "--qe-alpha", 1,
    )  # fmt: skip
    vectors, names, _ = load_vectors(built / "v.npy")
    expected = load_index(built / "index").search(
        vectors, 5, query_names=names, expansion=QueryExpansion(2, 1.0)
    )
    assert read_rankings(output) == expected.rankings()
    document = json.loads(output.read_text())
    assert document["query_expansion"] == {"neighbours": 2, "alpha": 1.0}


@pytest.mark.parametrize(
    ("options", "settings"),
    [
        ([], {}),
        (
            ["--matching", "ratio", "--geometry", "affine", "--min-inliers", "5"]
            + ["--verify-keypoints", "0", "--ratio", "0.7"],
            {
                "matching": "ratio",
                "ratio": 0.7,
                "model": "affine",
                "min_inliers": 5,
                "max_keypoints": None,
            },
        ),
        (
            ["--matching", "mutual", "--inlier-threshold", "3"]
            + ["--verify-keypoints", "100"],
            {"matching": "mutual", "reprojection_threshold": 3.0, "max_keypoints": 100},
        ),
    ],
)
def test_spatial_reranking_counts_inliers_as_the_library_does(
    built, codebook_path, tmp_path, options, settings
):
    output = tmp_path / "spatial.json"
    run(
        "search", built / "index", DATA / "chelsea.jpg", "-c", codebook_path,
        "--top", 4, "--rerank", "spatial", "--rerank-depth", 3,
        "--database-descriptors", built / "descriptors.npz", "-o", output,
        *options,
    )  # fmt: skip
    document = json.loads(output.read_text())
    recorded = document["spatial_verification"]
    assert recorded["depth"] == 3
    assert {key: recorded[key] for key in settings} == settings
    (entry,) = document["queries"]
    hits = entry["results"]
    assert hits[0]["name"] == "chelsea.jpg" and hits[0]["inliers"] > 50
    assert hits[-1]["inliers"] == -1  # beyond the depth: not verified
    # The same verification by the library, on the same descriptors.
    database = vlad.DescriptorSets.load(built / "descriptors.npz")
    query, _ = vlad.extract_images(DATA / "chelsea.jpg", {"max_side": 256}, n_jobs=1)
    run(
        "search", built / "index", DATA / "chelsea.jpg", "-c", codebook_path,
        "--top", 4, "-o", tmp_path / "plain.json",
    )  # fmt: skip
    (plain,) = read_rankings(tmp_path / "plain.json").values()
    candidates = np.array([database.names.index(name) for name in plain])
    # The record keeps the keypoint cap under its former name.
    arguments = {
        "verify_keypoints" if key == "max_keypoints" else key: value
        for key, value in settings.items()
    }
    ranking, inliers = spatial_rerank(
        query.keypoints_of(0), query[0], candidates, database, depth=3, **arguments
    )
    assert [hit["name"] for hit in hits] == [database.names[row] for row in ranking]
    assert [hit["inliers"] for hit in hits] == inliers.tolist()


def test_queries_without_descriptors_are_reported(built, codebook_path, tmp_path):
    cv2.imwrite(str(tmp_path / "blank.png"), np.full((100, 120), 128, np.uint8))
    (tmp_path / "chelsea.jpg").write_bytes((DATA / "chelsea.jpg").read_bytes())
    result = run("search", built / "index", tmp_path, "-c", codebook_path, "--top", 1)
    assert table(result.stdout) == [("chelsea.jpg", 1, 1.0, "chelsea.jpg")]
    assert result.stderr == (
        "warning: 1 query has no keypoints, so no descriptors, and finds nothing: "
        "blank.png\n"
    )


def test_a_faiss_index_takes_search_parameters(built, tmp_path):
    pytest.importorskip("faiss")
    run("index", built / "v.npy", "-o", tmp_path / "ivf", "--factory", "IVF2,Flat")
    exact = run("search", built / "index", built / "v.npy", "--top", 3).stdout
    full = run(
        "search",
        tmp_path / "ivf",
        built / "v.npy",
        "--top",
        3,
        "--parameters",
        "nprobe=2",
    ).stdout
    assert [row[:2] + row[3:] for row in table(full)] == [
        row[:2] + row[3:] for row in table(exact)
    ]
    np.testing.assert_allclose(
        [row[2] for row in table(full)], [row[2] for row in table(exact)], atol=1e-4
    )
    bad = run(
        "search", tmp_path / "ivf", built / "v.npy", "--parameters", "nope=1",
        exit_code=1,
    )  # fmt: skip
    assert "faiss could not set 'nope=1'" in bad.stderr


@pytest.fixture(scope="module")
def other_codebook(built, tmp_path_factory):
    """Another codebook of 16 centres on the same descriptors (another seed):
    its vectors have the index's dimension and mean nothing to it."""
    path = tmp_path_factory.mktemp("other") / "codebook.npz"
    run("fit", built / "descriptors.npz", "--n-clusters", 16, "--seed", 1, "-o", path)
    return path


def one_line_error(result, message):
    assert message in result.stderr, result.stderr
    assert result.stderr.startswith("Error: ") and result.stderr.count("\n") == 1


def test_a_codebook_other_than_the_index_s_is_refused(built, other_codebook):
    for query in (DATA / "chelsea.jpg", built / "v.npy"):
        result = run(
            "search", built / "index", query, "-c", other_codebook, exit_code=1
        )
        one_line_error(result, "but the index's vectors were made with codebook")


def test_query_vectors_of_another_codebook_are_refused(built, other_codebook, tmp_path):
    run(
        "encode",
        built / "descriptors.npz",
        "-c",
        other_codebook,
        "-o",
        tmp_path / "q.npy",
    )
    result = run("search", built / "index", tmp_path / "q.npy", exit_code=1)
    one_line_error(result, "were made with codebook")


def test_query_vectors_of_another_dimension_are_refused(built, tmp_path):
    np.save(tmp_path / "q.npy", np.ones((2, 10), np.float32))
    result = run("search", built / "index", tmp_path / "q.npy", exit_code=1)
    one_line_error(result, "queries have 10 dimensions; the index takes 2048")


def test_spatial_reranking_needs_database_descriptors(built, codebook_path):
    result = run(
        "search", built / "index", DATA / "chelsea.jpg", "-c", codebook_path,
        "--rerank", "spatial", exit_code=2,
    )  # fmt: skip
    assert "--rerank spatial needs --database-descriptors" in result.stderr


def usage_error(result, message):
    """``result`` is click's usage error ``message``, in one line of its own."""
    assert result.stderr.splitlines()[-1] == f"Error: {message}", result.stderr


#: Each option that only a re-ranking reads, a value for it, and that
#: re-ranking.
RERANKING_OPTIONS = [
    ("--rerank-depth", "3", "spatial"),
    ("--matching", "mutual", "spatial"),
    ("--ratio", "0.7", "spatial"),
    ("--geometry", "affine", "spatial"),
    ("--inlier-threshold", "3", "spatial"),
    ("--verify-keypoints", "100", "spatial"),
    ("--min-inliers", "5", "spatial"),
    ("--database-descriptors", "descriptors.npz", "spatial"),
    ("--qe-neighbours", "2", "qe"),
    ("--qe-alpha", "1", "qe"),
]


@pytest.mark.parametrize(
    ("option", "value", "reranking", "other"),
    [
        (option, value, reranking, other)
        for option, value, reranking in RERANKING_OPTIONS
        for other in ([], ["--rerank", "qe" if reranking == "spatial" else "spatial"])
    ],
)
def test_an_option_of_a_reranking_not_asked_for_is_refused(
    built, tmp_path, option, value, reranking, other
):
    if option == "--database-descriptors":
        value = built / value
    result = run(
        "search", built / "index", built / "v.npy", option, value, *other,
        "-o", tmp_path / "r.json", exit_code=2,
    )  # fmt: skip
    usage_error(result, f"{option} applies only with --rerank {reranking}")
    assert not (tmp_path / "r.json").exists()


def test_the_options_of_a_reranking_are_refused_together_even_at_their_defaults(
    built,
):
    result = run(
        "search", built / "index", built / "v.npy", "--rerank", "qe",
        "--ratio", "0.8", "--min-inliers", "12", exit_code=2,
    )  # fmt: skip
    usage_error(result, "--ratio, --min-inliers apply only with --rerank spatial")


@pytest.mark.parametrize(
    ("option", "value"), [("--multiple-assignment", "2"), ("--stop-fraction", "0.3")]
)
def test_asmk_options_are_refused_for_a_vlad_index(built, option, value):
    result = run(
        "search", built / "index", built / "v.npy", option, value, exit_code=2
    )  # fmt: skip
    usage_error(result, f"{option} applies only to an ASMK index")


def test_verify_keypoints_takes_what_the_library_takes(built):
    """Each value is refused by the option, naming it, exactly when the
    library refuses its ``verify_keypoints``, with the library's message."""
    for value in range(-2, 3 * SMALLEST_MAX_KEYPOINTS):
        try:
            _check_max_keypoints(value)
            library_takes = True
        except VladError:
            library_takes = False
        # Taken, the option lets the command go on to its next check.
        result = run(
            "search", built / "index", built / "v.npy", "--rerank", "spatial",
            "--verify-keypoints", value, exit_code=2,
        )  # fmt: skip
        if library_takes:
            usage_error(result, "--rerank spatial needs --database-descriptors")
        else:
            usage_error(
                result,
                "Invalid value for '--verify-keypoints': "
                + VERIFY_KEYPOINTS.message(value),
            )


@pytest.mark.parametrize(
    ("command", "default"),
    [
        ("search", "as suits the descriptors: 1024 for aliked, 1024 for sift"),
        ("show-matches", f"1024; 0 or x>={SMALLEST_MAX_KEYPOINTS}"),
    ],
)
def test_verify_keypoints_help_shows_the_values_taken(command, default):
    shown = " ".join(run(command, "--help").output.split())
    assert f"0 for all (vlad 0.4). [default: {default}]" in shown


def test_spatial_reranking_needs_the_queries_descriptors(built):
    result = run(
        "search", built / "index", built / "v.npy", "--rerank", "spatial",
        "--database-descriptors", built / "descriptors.npz", exit_code=1,
    )  # fmt: skip
    one_line_error(result, "holds vectors only; spatial verification needs")


def test_spatial_reranking_needs_descriptors_of_the_index_s_images(
    built, codebook_path, tmp_path
):
    run("extract", DATA / "chelsea.jpg", *FAST, "-o", tmp_path / "one.npz")
    result = run(
        "search", built / "index", DATA / "coffee.jpg", "-c", codebook_path,
        "--rerank", "spatial", "--database-descriptors", tmp_path / "one.npz",
        exit_code=1,
    )  # fmt: skip
    one_line_error(result, "result images have no descriptors in the database")


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda folder: folder.mkdir(), "no index.json"),
        (lambda folder: None, "does not exist"),
    ],
)
def test_what_is_not_an_index_is_refused(built, tmp_path, make, message):
    make(tmp_path / "index")
    result = run(
        "search",
        tmp_path / "index",
        built / "v.npy",
        exit_code=1 if message == "no index.json" else 2,
    )
    assert message in result.stderr


def test_images_need_the_codebook(built):
    result = run("search", built / "index", DATA / "chelsea.jpg", exit_code=1)
    one_line_error(result, "need the codebook the index's vectors were made with")


#: How far a score of the Quick start may move on another CPU: SIFT's rounding
#: depends on the instructions OpenCV runs, and so does the codebook fitted on
#: the descriptors (with OpenCV's SSE code instead of AVX2, the scores of the
#: two images the README shows moved by 0.005, those of others by up to 0.11).
SCORE_SPREAD = 0.2


def test_the_quick_start_prints_chelsea_first_as_the_readme_shows(main_job, tmp_path):
    """The README's Quick start line, after its fit and encode (main_job):
    the photo itself first, at 1, then images of the bundled photos whose
    scores are those the command gives them, within what another CPU
    changes."""
    folder, _, _ = main_job
    run("index", folder / "v.npy", "-o", tmp_path / "index")
    result = run(
        "search", tmp_path / "index", DATA / "chelsea.jpg",
        "--codebook", folder / "codebook.npz", "--top", 3,
    )  # fmt: skip
    rows = table(result.stdout)
    assert rows[0] == ("chelsea.jpg", 1, 1.0, "chelsea.jpg")
    assert [rank for _, rank, _, _ in rows] == [1, 2, 3]
    readme = README.read_text(encoding="utf-8")
    quick_start = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    assert "vlad search index data/chelsea.jpg --codebook codebook.npz --top 3" in (
        quick_start
    )
    shown = re.search(r"```text\n(.*?)```", quick_start, re.S).group(1)
    shown_rows = table(shown)
    assert shown_rows[0] == rows[0]
    assert [(query, rank) for query, rank, _, _ in shown_rows] == [
        (query, rank) for query, rank, _, _ in rows
    ]
    every = run(
        "search", tmp_path / "index", DATA / "chelsea.jpg",
        "--codebook", folder / "codebook.npz", "--top", len(PHOTOS),
    )  # fmt: skip
    scores = {name: score for _, _, score, name in table(every.stdout)}
    shown_scores = [score for _, _, score, _ in shown_rows]
    assert shown_scores == sorted(shown_scores, reverse=True)
    for _, _, score, name in shown_rows:
        assert abs(score - scores[name]) <= SCORE_SPREAD, (name, score, scores)


def test_names_that_are_not_utf8_print_as_their_bytes(tmp_path):
    """A Latin-1 file name read from a UTF-8 file system (a surrogate escape):
    printed as its own bytes, not a UnicodeEncodeError."""
    names = ["caf\udce9.jpg", "b.jpg"]
    vlad.save_vectors(tmp_path / "v.npy", np.eye(2), names, {})
    run("index", tmp_path / "v.npy", "-o", tmp_path / "index")
    result = run("search", tmp_path / "index", tmp_path / "v.npy", "--top", 1)
    assert (
        result.stdout_bytes
        == b"caf\xe9.jpg\t1\t1.0000\tcaf\xe9.jpg\nb.jpg\t1\t1.0000\tb.jpg\n"
    )
    run(
        "search",
        tmp_path / "index",
        tmp_path / "v.npy",
        "--top",
        1,
        "-o",
        tmp_path / "r.csv",
    )
    assert read_rankings(tmp_path / "r.csv") == {name: [name] for name in names}


def test_search_parameters_for_an_exact_index_are_refused(built):
    result = run(
        "search", built / "index", built / "v.npy", "--parameters", "nprobe=2",
        exit_code=1,
    )  # fmt: skip
    one_line_error(result, "tune a faiss index, and this index searches exactly")
