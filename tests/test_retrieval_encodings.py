"""The encodings table of the retrieval benchmark, end to end on a small build
of data/."""

import json

import numpy as np
import pytest

import vlad
from benchmarks.retrieval.build import build_dataset
from benchmarks.retrieval.encodings import VARIANTS, main
from benchmarks.retrieval.encodings_page import render_page

#: The benchmarks' own tests: a CI step of their own, not the default run.
pytestmark = pytest.mark.benchmarks

CHOSEN = ("defaults", "adapted codebook", "power 0.5")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("encodings")
    dataset = folder / "bench"
    build_dataset(dataset, ["data"], seed=0, max_side=160)
    output = folder / "report.json"
    arguments = [str(dataset), "--clusters", "8", "--jobs", "1", "--json", str(output)]
    for label in CHOSEN:
        arguments += ["--only", label]
    assert main(arguments) == 0
    return dataset, json.loads(output.read_text())


# The runner's run, seconds: its tests run with the slow tests.
@pytest.mark.slow
def test_every_chosen_variant_is_evaluated(run):
    _, report = run
    rows = report["variants"]
    assert [row["variant"] for row in rows] == list(CHOSEN)
    for row in rows:
        mean = row["evaluation"]["mean"]
        assert 0 <= mean["mAP"] <= 1
        assert set(row["evaluation"]["by_tag"]) >= {"easy", "hard"}
        assert row["dimensions"] == 8 * 128
        assert row["seconds"]["encode_per_image"] > 0


@pytest.mark.slow
def test_the_defaults_row_is_what_the_library_gives(run):
    dataset, report = run
    database, _ = vlad.extract_images(dataset / "database", n_jobs=1)
    queries, _ = vlad.extract_images(dataset / "queries", n_jobs=1)
    codebook = vlad.fit_codebook(database, 8, seed=0)
    index = vlad.search.build_index(vlad.encode(database, codebook), database.names)
    results = index.search(
        vlad.encode(queries, codebook), 100, query_names=queries.names
    )
    ground_truth = vlad.evaluation.load_ground_truth(dataset / "ground_truth.json")
    evaluation = vlad.evaluation.evaluate(results.rankings(), ground_truth)
    expected = evaluation.to_dict()["mean"]["mAP"]
    np.testing.assert_allclose(
        report["variants"][0]["evaluation"]["mean"]["mAP"], expected
    )


def test_variant_labels_are_unique_and_settings_valid():
    labels = [variant.label for variant in VARIANTS]
    assert len(labels) == len(set(labels))
    for variant in VARIANTS:
        vlad.SiftOptions(**variant.extraction)
        vlad.EncodingOptions(**variant.encoding)


@pytest.mark.slow
def test_the_page_shows_every_variant_and_the_machine(run):
    _, report = run
    page = render_page(report, "report.json")
    assert "--json report.json" in page
    for row in report["variants"]:
        assert f"| {row['variant']} |" in page
    assert report["machine"]["cpu"] in page
