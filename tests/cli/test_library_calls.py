"""The library calls behind ``vlad fit``, ``vlad index`` and ``vlad search``
(:mod:`vlad.pipeline`), called directly, write and find what the commands do,
on the bundled photos."""

from __future__ import annotations

from pathlib import Path

import pytest
from photos import DATA, FAST_OPTIONS

from vlad.errors import VladError
from vlad.pipeline import (
    search_index,
    write_adapted_codebook,
    write_codebook,
    write_index,
)
from vlad.search import read_rankings

from .conftest import FAST, run

#: The processes ``vlad fit`` describes images in when not told (descriptors
#: made in one process may differ in their last bit from a pool's).
COMMAND_JOBS = None


def files_of(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder``, by its path relative to it, with its bytes."""
    return {
        str(path.relative_to(folder)): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


@pytest.fixture(scope="module")
def made(tmp_path_factory, codebook_path):
    """Vectors and descriptors of the bundled photos, from the commands."""
    folder = tmp_path_factory.mktemp("library-calls")
    run("encode", DATA, "-c", codebook_path, "-o", folder / "v.npy")
    run("extract", DATA, *FAST, "-o", folder / "descriptors.npz")
    run("index", folder / "v.npy", "-o", folder / "index")
    run(
        "index", folder / "descriptors.npz", "--method", "asmk",
        "-c", codebook_path, "-o", folder / "asmk-index",
    )  # fmt: skip
    return folder


@pytest.mark.parametrize(
    ("options", "settings"),
    [
        (["-k", "8"], {"n_clusters": 8}),
        (["-k", "4", "--vocabularies", "2"], {"n_clusters": 4, "n_vocabularies": 2}),
        (
            ["-k", "4", "--sample", "500", "--seed", "3"],
            {"n_clusters": 4, "sample": 500, "seed": 3},
        ),
    ],
)
def test_write_codebook_writes_the_file_of_vlad_fit(tmp_path, options, settings):
    run("fit", DATA, *FAST, *options, "-o", tmp_path / "command.npz")
    n_clusters = settings.pop("n_clusters")
    codebook, report = write_codebook(
        DATA,
        tmp_path / "library.npz",
        n_clusters,
        descriptor_options=FAST_OPTIONS,
        n_jobs=COMMAND_JOBS,
        **settings,
    )
    assert (tmp_path / "library.npz").read_bytes() == (
        tmp_path / "command.npz"
    ).read_bytes()
    n_vocabularies = settings.get("n_vocabularies", 1)
    assert codebook.vocabulary_sizes == (n_clusters,) * n_vocabularies
    assert len(report.names) == 8


def test_write_adapted_codebook_writes_the_file_of_vlad_fit_adapt(
    tmp_path, codebook_path
):
    run("fit", DATA / "chelsea.jpg", "--adapt", codebook_path, "-o", tmp_path / "c.npz")
    adapted, report = write_adapted_codebook(
        DATA / "chelsea.jpg", codebook_path, tmp_path / "l.npz", n_jobs=COMMAND_JOBS
    )
    assert (tmp_path / "l.npz").read_bytes() == (tmp_path / "c.npz").read_bytes()
    assert report.names == ["chelsea.jpg"]
    assert adapted.metadata["adaptation"]["n_descriptors"] > 0


@pytest.mark.parametrize(
    ("options", "settings"),
    [
        ([], {}),
        (["--pca", "6", "--whiten"], {"pca": 6, "whiten": 1.0}),
        (
            ["--augment", "2", "--augment-alpha", "1"],
            {"augment": 2, "augment_alpha": 1.0},
        ),
    ],
)
def test_write_index_writes_the_folder_of_vlad_index(made, tmp_path, options, settings):
    run("index", made / "v.npy", *options, "-o", tmp_path / "command")
    index = write_index(made / "v.npy", tmp_path / "library", **settings)
    assert files_of(tmp_path / "library") == files_of(tmp_path / "command")
    assert index.n_images == 8


def test_write_index_writes_the_asmk_folder_of_vlad_index(
    made, tmp_path, codebook_path
):
    index = write_index(
        made / "descriptors.npz",
        tmp_path / "library",
        method="asmk",
        codebook=codebook_path,
        binary=False,
        idf=True,
    )
    run(
        "index", made / "descriptors.npz", "--method", "asmk", "-c", codebook_path,
        "--full", "--idf", "-o", tmp_path / "command",
    )  # fmt: skip
    assert files_of(tmp_path / "library") == files_of(tmp_path / "command")
    assert index.n_images == 8


@pytest.mark.parametrize(
    ("options", "settings"),
    [
        ([], {}),
        (
            ["--rerank", "qe", "--qe-neighbours", "2"],
            {"rerank": ["qe"], "qe_neighbours": 2},
        ),
        (
            ["--rerank", "spatial", "--rerank-depth", "3"],
            {"rerank": ["spatial"], "rerank_depth": 3},
        ),
    ],
)
def test_search_index_finds_what_vlad_search_writes(
    made, tmp_path, codebook_path, options, settings
):
    queries = [DATA / "chelsea.jpg", DATA / "coffee.jpg"]
    spatial = "spatial" in settings.get("rerank", ())
    database = ["--database-descriptors", made / "descriptors.npz"] if spatial else []
    run(
        "search", made / "index", *queries, "-c", codebook_path, "-k", 4,
        *database, "-o", tmp_path / "command.csv", *options,
    )  # fmt: skip
    found = search_index(
        made / "index",
        queries,
        codebook=codebook_path,
        top=4,
        database_descriptors=made / "descriptors.npz",
        n_jobs=1,
        **settings,
    )
    found.results.write(tmp_path / "library.csv")
    assert (tmp_path / "library.csv").read_bytes() == (
        tmp_path / "command.csv"
    ).read_bytes()
    assert found.report.skipped == {}
    assert (found.query_descriptors is not None) == spatial
    assert (found.database_descriptors is not None) == spatial


def test_search_index_finds_what_vlad_search_writes_from_an_asmk_index(made, tmp_path):
    run(
        "search", made / "asmk-index", made / "descriptors.npz", "-k", 3,
        "-o", tmp_path / "command.json",
    )  # fmt: skip
    found = search_index(made / "asmk-index", made / "descriptors.npz", top=3)
    assert found.results.rankings() == read_rankings(tmp_path / "command.json")
    assert len(found.results) == 8


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda made: search_index(made / "index", made / "v.npy", rerank=["x"]),
         "rerank must hold only 'qe' and 'spatial'; got 'x'"),
        (lambda made: search_index(made / "index", made / "v.npy", rerank=["spatial"]),
         "spatial re-ranking needs database_descriptors"),
        (lambda made: search_index(made / "asmk-index", made / "descriptors.npz",
                                   rerank=["qe"]),
         "query expansion and search parameters do not apply to an ASMK index"),
        (lambda made: search_index(made / "index", made / "v.npy",
                                   multiple_assignment=3),
         "multiple_assignment applies only to an ASMK index"),
        (lambda made: search_index(made / "index", made / "v.npy", stop_fraction=0.3),
         "stop_fraction applies only to an ASMK index"),
        (lambda made: write_index(made / "v.npy", made / "x", method="bow"),
         "method must be one of 'vlad', 'asmk'; got 'bow'"),
        (lambda made: write_index(made / "descriptors.npz", made / "x", method="asmk"),
         "method='asmk' needs a codebook"),
        (lambda made: write_index(made / "v.npy", made / "x", idf=True, alpha=2.0),
         "alpha, idf do not apply to method='vlad'"),
        (lambda made: write_index(made / "descriptors.npz", made / "x",
                                  method="asmk", codebook="c.npz", pca=4),
         "pca does not apply to method='asmk'"),
        (lambda made: write_codebook(DATA, made / "x.npz", 4, n_vocabularies=0),
         "n_vocabularies must be an integer >= 1; got 0"),
    ],
)  # fmt: skip
def test_settings_that_do_not_go_together_are_refused(made, call, message):
    with pytest.raises(VladError) as caught:
        call(made)
    assert str(caught.value) == message
    assert isinstance(caught.value, ValueError)
    assert not (made / "x").exists() and not (made / "x.npz").exists()
