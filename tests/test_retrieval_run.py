"""The retrieval benchmark's runner, end to end on a small build of data/."""

import json

import pytest

from benchmarks.retrieval.build import build_dataset
from benchmarks.retrieval.page import render_page
from benchmarks.retrieval.run import PQ_FACTORIES, main

pytest.importorskip("faiss")

# The runner's run end to end takes seconds (k-means, every variant, spatial
# re-ranking): with the slow tests. tests/test_retrieval_dataset.py checks the
# dataset it reads by default.
pytestmark = [pytest.mark.slow, pytest.mark.benchmarks]


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    folder = tmp_path_factory.mktemp("retrieval")
    dataset = folder / "bench"
    build_dataset(dataset, ["data"], seed=0, max_side=160)
    output = folder / "report.json"
    assert (
        main(
            [
                str(dataset),
                "--clusters",
                "8",
                "--pca",
                "4",
                "--depth",
                "3",
                "--asmk-words",
                "16",
                "--jobs",
                "1",
                "--json",
                str(output),
            ]
        )  # fmt: skip
        == 0
    )
    return json.loads(output.read_text())


def test_every_variant_is_evaluated_or_says_why_not(report):
    rows = report["variants"]
    assert len(rows) == 6 + len(PQ_FACTORIES) + 3  # one spatial depth, 3 ASMK
    for row in rows:
        if "skipped" in row:
            # PQ needs a dimension its sub-quantizers divide: 4 is not one of 8.
            assert row["factory"] is not None and row["skipped"]
            continue
        mean = row["evaluation"]["mean"]
        assert 0 <= mean["mAP"] <= 1
        assert mean["recall@1"] <= mean["recall@10"]
        assert set(row["evaluation"]["by_tag"]) >= {"easy", "hard", "crop"}


def test_whitening_keeps_the_dimension_asked_for(report):
    exact, whitened = report["variants"][:2]
    assert exact["bytes_per_image"] == 8 * 128 * 4
    assert whitened["bytes_per_image"] == 4 * 4


def test_spatial_verification_reports_its_time(report):
    spatial = [row for row in report["variants"] if row["spatial_depth"]]
    assert spatial and all(row["ms_per_query_spatial"] > 0 for row in spatial)
    assert report["machine"]["cpu"]


def test_the_page_shows_every_variant_and_the_machine(report):
    page = render_page(report, "report.json")
    assert "--json report.json" in page
    for row in report["variants"]:
        assert f"| {row['variant']} |" in page
    assert report["machine"]["cpu"] in page
    assert "| crop |" in page


def test_asmk_variants_index_the_descriptors_with_their_own_vocabulary(report):
    asmk = [row for row in report["variants"] if "asmk_words" in row]
    assert [row["variant"] for row in asmk] == [
        "ASMK* (16 words)",
        "ASMK (16 words)",
        "ASMK (16 words) + spatial (top 3)",
    ]
    star, full, verified = asmk
    assert star["binary"] and not full["binary"] and not verified["binary"]
    # Sign bits take fewer bytes than whole float residuals of 128 values.
    assert 0 < star["bytes_per_image"] < full["bytes_per_image"]
    assert full["bytes_per_image"] == verified["bytes_per_image"]
    assert verified["ms_per_query_spatial"] > 0 and not full["ms_per_query_spatial"]
    assert "ASMK codebook K=16" in report["preparation_seconds"]
    page = render_page(report, "report.json")
    assert "--asmk-words 16" in page
    assert "ASMK (16 words) + spatial (top 3): per transform" in page
