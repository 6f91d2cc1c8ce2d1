"""``--html`` of ``vlad search`` and ``vlad evaluate``, and ``vlad
show-matches``: the pages the commands write match the library's results, and
their errors are one line."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import cv2
import numpy as np
import pytest
from hostile.makers import png_of_zeros
from html_pages import parse_page, source_file, write_photo
from photos import DATA, FAST_OPTIONS
from readme_commands import README, quick_start_commands

from vlad._extras import install_command
from vlad.evaluation import evaluate, load_ground_truth
from vlad.formats._vectors import save_vectors
from vlad.pages import write_matches_picture
from vlad.search import build_index, read_rankings
from vlad.search._results import QueryResult, SearchResults

from .conftest import FAST, run

pytest.importorskip("PIL", reason="the pages need Pillow (vlad-toolkit[html])")

QUERIED = ["astronaut.jpg", "chelsea.jpg", "coffee.jpg"]


@pytest.fixture(scope="module")
def made(tmp_path_factory, codebook_path):
    """Rotated copies of three photos, an index of all eight, their
    descriptors, and a ground truth (copy -> original)."""
    folder = tmp_path_factory.mktemp("pages")
    queries = folder / "queries"
    queries.mkdir()
    for name in QUERIED:
        image = cv2.imread(str(DATA / name))
        height, width = image.shape[:2]
        turn = cv2.getRotationMatrix2D((width / 2, height / 2), 20, 0.8)
        cv2.imwrite(str(queries / name), cv2.warpAffine(image, turn, (width, height)))
    truth = {name: {"relevant": [name], "tags": ["rotated"]} for name in QUERIED}
    (folder / "gt.json").write_text(json.dumps(truth))
    run("encode", DATA, "-c", codebook_path, "-o", folder / "db.npy", "-q")
    run("index", folder / "db.npy", "-o", folder / "index", "-q")
    run("extract", DATA, *FAST, "-o", folder / "descriptors.npz", "-q")
    return folder


def rows(page: Path) -> list[tuple[str, list[tuple[str, str]]]]:
    """``(query, [(name, label), ...])`` of each row of a page."""
    found = []
    for row in parse_page(page).find("section", "row"):
        query = row.find(cls="query")[0].find(cls="name")[0].content()
        hits = [
            (
                card.find(cls="name")[0].content(),
                "".join(label.content() for label in card.find(cls="label")),
            )
            for card in row.find("ol", "hits")[0].find("li")
        ]
        found.append((query, hits))
    return found


def test_the_page_shows_what_the_table_prints(made, codebook_path, tmp_path):
    query = made / "queries" / "chelsea.jpg"
    plain = run("search", made / "index", query, "-c", codebook_path, "--top", 3)
    page = tmp_path / "results.html"
    result = run(
        "search",
        made / "index",
        query,
        "-c",
        codebook_path,
        "--top",
        3,
        "--html",
        page,
        "--images",
        DATA,
    )
    assert result.stdout == plain.stdout
    printed = [line.split("\t") for line in plain.stdout.splitlines()]
    assert rows(page) == [("chelsea.jpg", [(name, "") for *_, name in printed])]
    assert f"wrote a page of 1 query to {page}" in result.stderr
    assert "(4 thumbnails in" in result.stderr
    for image in parse_page(page).find("img"):
        assert source_file(page, image.attributes["src"]).is_file()
    # Again: the thumbnails are reused, the page is not replaced without asking.
    again = run(
        "search",
        made / "index",
        query,
        "-c",
        codebook_path,
        "--top",
        3,
        "--html",
        page,
        "--images",
        DATA,
        exit_code=1,
    )
    assert "already exists; pass --overwrite" in again.output
    again = run(
        "search",
        made / "index",
        query,
        "-c",
        codebook_path,
        "--top",
        3,
        "--html",
        page,
        "--images",
        DATA,
        "--overwrite",
    )
    assert "0 made, 4 reused" in again.stderr


def test_labels_links_and_the_evaluation_report(made, codebook_path, tmp_path):
    page = tmp_path / "results.html"
    run(
        "search",
        made / "index",
        made / "queries",
        "-c",
        codebook_path,
        "--top",
        4,
        "--rerank",
        "spatial",
        "--database-descriptors",
        made / "descriptors.npz",
        "-o",
        tmp_path / "results.json",
        "--html",
        page,
        "--images",
        DATA,
        "--ground-truth",
        made / "gt.json",
    )
    truth = load_ground_truth(made / "gt.json")
    rankings = read_rankings(tmp_path / "results.json")
    assert [(query, [name for name, _ in hits]) for query, hits in rows(page)] == list(
        rankings.items()
    )
    for query, hits in rows(page):
        for name, label in hits:
            assert label == (
                "relevant" if name in truth[query].relevant else "not relevant"
            )
    # Each copy finds its photo first, verified: its inliers link to a picture.
    links = [
        card.find("a", "matches")[0]
        for row in parse_page(page).find("section", "row")
        for card in row.find("li")[:1]
    ]
    assert len(links) == len(QUERIED)
    for link in links:
        assert cv2.imread(str(source_file(page, link.attributes["href"]))) is not None

    report = tmp_path / "report.html"
    result = run(
        "evaluate",
        tmp_path / "results.json",
        "-g",
        made / "gt.json",
        "--html",
        report,
        "--images",
        DATA,
        "--query-images",
        made / "queries",
    )
    assert f"wrote a page of 3 worst queries to {report}" in result.stderr
    evaluation = evaluate(rankings, truth)
    table = parse_page(report).find("table")[0].find("tr")
    assert table[1].find("td")[2].content() == f"{100 * evaluation.mean['mAP']:.2f}"
    assert len(parse_page(report).find("img")) > 3


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--images", DATA], "--images is for the page: give --html too"),
        (
            ["--html", "page.htm", "--query-images", DATA, "--html-limit", 0],
            "--html-limit",
        ),
        (["--html", "page.pdf"], "must end in .html"),
    ],
)
def test_page_options_are_checked(made, codebook_path, arguments, message):
    result = run(
        "search",
        made / "index",
        made / "queries",
        "-c",
        codebook_path,
        *arguments,
        exit_code=2,
    )
    assert message in result.output


def test_without_pillow_the_error_says_what_to_install(
    made, codebook_path, tmp_path, monkeypatch
):
    for name in [
        name for name in sys.modules if name == "PIL" or name.startswith("PIL.")
    ]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "PIL", None)
    result = run(
        "search",
        made / "index",
        made / "queries",
        "-c",
        codebook_path,
        "--html",
        tmp_path / "page.html",
        exit_code=1,
    )
    # Said at once, before the search.
    assert result.output == (
        "Error: the HTML pages make thumbnails with Pillow; install it with: "
        f"{install_command('html')}\n"
    )


def test_show_matches_draws_what_the_library_draws(made, tmp_path):
    query = made / "queries" / "coffee.jpg"
    output = tmp_path / "matches.png"
    result = run(
        "show-matches",
        query,
        DATA / "coffee.jpg",
        "-o",
        output,
        *FAST,
        "--height",
        200,
    )
    expected = write_matches_picture(
        query,
        DATA / "coffee.jpg",
        tmp_path / "library.png",
        descriptor_options=FAST_OPTIONS,
        max_height=200,
    )
    assert f"{expected.n_inliers} of {expected.n_matches} matches" in result.stderr
    assert (cv2.imread(str(output)) == expected.picture).all()
    assert expected.picture.shape[0] == 200 and expected.n_inliers > 20
    refused = run("show-matches", query, DATA / "coffee.jpg", "-o", output, exit_code=1)
    assert "already exists" in refused.output
    wrong = run(
        "show-matches",
        query,
        DATA / "coffee.jpg",
        "-o",
        tmp_path / "m.gif",
        exit_code=2,
    )
    assert "must end in .png, .jpg, .jpeg" in wrong.output
    broken = tmp_path / "broken.jpg"
    broken.write_bytes(b"not an image")
    failed = run(
        "show-matches",
        broken,
        DATA / "coffee.jpg",
        "-o",
        tmp_path / "b.png",
        exit_code=1,
    )
    assert (
        failed.output.startswith("Error: cannot read")
        and failed.output.count("\n") == 1
    )


def test_the_quick_start_ends_by_writing_the_search_page(main_job, tmp_path):
    """The README's Quick start search, run on the main job's codebook: the
    table it prints is the one without --html, and the page shows it."""
    folder, _, _ = main_job
    first_line = quick_start_commands(README.read_text(encoding="utf-8"))[0]
    command = shlex.split(first_line.split(" && ")[-1])
    assert command[:2] == ["vlad", "search"]
    assert command[-5:] == ["--html", "results.html", "--images", "data", "--overwrite"]
    run("index", folder / "v.npy", "-o", tmp_path / "index")
    replaced = {
        "index": tmp_path / "index",
        "data/chelsea.jpg": DATA / "chelsea.jpg",
        "codebook.npz": folder / "codebook.npz",
        "results.html": tmp_path / "results.html",
        "data": DATA,
    }
    arguments = [replaced.get(argument, argument) for argument in command[1:]]
    with_page = run(*arguments)
    without = run(*arguments[: arguments.index("--html")])
    assert with_page.stdout == without.stdout
    page_rows = rows(tmp_path / "results.html")
    printed = [line.split("\t")[3] for line in without.stdout.splitlines()]
    assert page_rows == [("chelsea.jpg", [(name, "") for name in printed])]
    assert len(parse_page(tmp_path / "results.html").find("img")) == 4


def test_an_image_beyond_the_pixel_limit_gets_a_placeholder_and_a_line(tmp_path):
    """The evaluation report shows the relevant images a query missed: one
    of more pixels than vlad encode reads is named in a warning, never
    decoded."""
    images = tmp_path / "images"
    images.mkdir()
    (images / "huge.png").write_bytes(png_of_zeros(13000, 13000))
    write_photo(images / "small.jpg", (60, 40))
    results = tmp_path / "results.json"
    SearchResults(
        [QueryResult("q", ("small.jpg",), np.array([0.5], np.float32), np.array([0]))]
    ).write(results)
    truth = tmp_path / "gt.json"
    truth.write_text(json.dumps({"q": {"relevant": ["huge.png"]}}))
    page = tmp_path / "report.html"
    result = run("evaluate", results, "-g", truth, "--html", page, "--images", images)
    assert (
        f"warning: no thumbnail of {images / 'huge.png'}: 13000 x 13000 pixels is "
        "more than max_pixels=134217728 (raise the limit to read it)\n"
    ) in result.stderr
    # The query, without --query-images, is missing too.
    assert "1 made, 0 reused, 2 missing" in result.stderr
    placeholders = [p.content() for p in parse_page(page).find(cls="placeholder")]
    assert sorted(placeholders)[0].startswith("cannot read the image: 13000 x 13000")


def test_the_search_page_reads_images_within_the_index_s_pixel_limit(tmp_path):
    """The index was described with max_pixels=100000: the page decodes no
    image beyond it either (astronaut.jpg has 262,144 pixels, chelsea.jpg
    135,300)."""
    names = ["astronaut.jpg", "chelsea.jpg"]
    vectors = np.eye(2, 4, dtype=np.float32)
    save_vectors(tmp_path / "v.npy", vectors, names, {})
    build_index(vectors, names, source={"descriptor": {"max_pixels": 100_000}}).save(
        tmp_path / "index"
    )
    page = tmp_path / "results.html"
    result = run(
        "search", tmp_path / "index", tmp_path / "v.npy", "--top", 1,
        "--html", page, "--images", DATA, "--query-images", DATA,
    )  # fmt: skip
    assert (
        f"warning: no thumbnail of {DATA / 'astronaut.jpg'}: 512 x 512 pixels is "
        "more than max_pixels=100000"
    ) in result.stderr
    assert f"no thumbnail of {DATA / 'chelsea.jpg'}" in result.stderr
    assert "0 made, 0 reused, 2 missing" in result.stderr
