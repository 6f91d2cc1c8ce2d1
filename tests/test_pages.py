"""The HTML pages, read back without a browser: escaping, URL-encoding,
labels against the ground truth, the limit, thumbnails made once and reused,
placeholders (vlad.pages)."""

from __future__ import annotations

import html
import math
import os
import re
import subprocess
import sys
import unicodedata
from urllib.parse import unquote_to_bytes

import numpy as np
import pytest
from hostile.makers import png_of_zeros
from html_pages import HOSTILE_NAMES, parse_page, source_file, write_photo
from hypothesis import given
from hypothesis import strategies as st

from vlad._extras import install_command
from vlad.evaluation import average_precision, evaluate
from vlad.pages import write_evaluation_page, write_search_page
from vlad.pages._html import escape, url, visible
from vlad.pages._thumbnails import THUMBNAIL_SIZE, ImageFolders
from vlad.search._results import QueryResult, SearchResults

PIL = pytest.importorskip(
    "PIL.Image", reason="the pages need Pillow (vlad-toolkit[html])"
)

DATABASE = ["a.jpg", "b.jpg", "c.jpg", "sub/d.jpg", *HOSTILE_NAMES, "broken.jpg"]
QUERIES = ["q1.jpg", "q2.jpg", "q3.jpg", "<script>alert(2)</script>.jpg"]


def hit(names, query, inliers=None):
    scores = np.linspace(0.9, 0.1, len(names)).astype(np.float32)
    return QueryResult(
        query,
        tuple(names),
        scores,
        np.arange(len(names)),
        None,
        None if inliers is None else np.array(inliers),
    )


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """Database and query images: photos of distinct colours, one file that is
    not an image, and the hostile names."""
    root = tmp_path_factory.mktemp("images")
    for number, name in enumerate(DATABASE):
        write_photo(
            root / "database" / name, (60 + 10 * number, 40), (20 * number, 90, 200)
        )
    (root / "database" / "broken.jpg").write_bytes(b"\xff\xd8 not really a JPEG")
    for number, name in enumerate(QUERIES):
        write_photo(root / "queries" / name, (300, 200), (50, 20 * number, 100))
    return root / "database", root / "queries"


@pytest.fixture(scope="module")
def results():
    return SearchResults(
        [
            hit(["a.jpg", HOSTILE_NAMES[0], "b.jpg", "missing.jpg"], "q1.jpg"),
            hit(["c.jpg", "broken.jpg", "sub/d.jpg"], "q2.jpg"),
            hit([HOSTILE_NAMES[1], HOSTILE_NAMES[2], HOSTILE_NAMES[3]], "q3.jpg"),
            hit(["b.jpg", "a.jpg"], QUERIES[3]),
        ],
        {"k": 4, "index": {"factory": "Flat", "n_images": len(DATABASE)}},
        ["a note with <markup> & ampersands"],
    )


TRUTH = {
    "q1.jpg": {"relevant": ["b.jpg", "c.jpg"], "junk": ["a.jpg"], "tags": ["easy"]},
    "q2.jpg": {"relevant": ["c.jpg"], "tags": ["hard"]},
    "q3.jpg": {"relevant": [HOSTILE_NAMES[2]], "tags": ["<i>tag</i>"]},
}


def cards(page):
    """``(query, [(name, classes, label text), ...], row)`` of each row."""
    rows = []
    for row in page.find("section", "row"):
        query = row.find(cls="query")[0].find(cls="name")[0].content()
        hits = [
            (
                card.find(cls="name")[0].content(),
                card.classes - {"card"},
                "".join(label.content() for label in card.find(cls="label")),
            )
            for card in row.find("ol", "hits")[0].find("li")
        ]
        rows.append((query, hits, row))
    return rows


def test_names_show_as_text_and_nothing_can_run(tmp_path, folders, results):
    page = tmp_path / "results.html"
    write_search_page(page, results, images=folders[0], query_images=folders[1])
    tree = parse_page(page)
    shown = cards(tree)
    assert [query for query, _, _ in shown] == [visible(r.query) for r in results]
    assert [[name for name, _, _ in hits] for _, hits, _ in shown] == [
        [visible(name) for name in r.names] for r in results
    ]
    # The only script is the page's own, and no element has an event handler.
    scripts = tree.find("script")
    assert len(scripts) == 1 and "alert" not in scripts[0].content()
    for element in tree.find():
        assert not any(key.startswith("on") for key in element.attributes), element
    # The right-to-left override shows as an escape, not as itself.
    assert "left\\u202egpj.exe.jpg" in [
        name for _, hits, _ in shown for name, *_ in hits
    ]
    assert "\u202e" not in page.read_text(encoding="utf-8")
    notes = [note.content() for note in tree.find("p", "notes")]
    assert notes == ["a note with <markup> & ampersands"]


def test_every_thumbnail_names_an_existing_file_by_an_encoded_url(
    tmp_path, folders, results
):
    # A page whose name needs URL-encoding: its folder's name is in every src.
    page = tmp_path / 'my #1 "page" 100%.html'
    write_search_page(page, results, images=folders[0], query_images=folders[1])
    images = parse_page(page).find("img")
    assert images
    for image in images:
        src = image.attributes["src"]
        assert set(src) <= set("abcdefghijklmnopqrstuvwxyz0123456789_.-~/%ABCDEF")
        assert src.startswith("my%20%231%20%22page%22%20100%25_files/thumbnails/")
        thumbnail = source_file(page, src)
        assert thumbnail.is_file()
        with PIL.open(thumbnail) as opened:
            assert max(opened.size) <= THUMBNAIL_SIZE
            assert opened.size == (
                int(image.attributes["width"]),
                int(image.attributes["height"]),
            )


def test_missing_and_unreadable_images_show_a_placeholder(tmp_path, folders, results):
    page = tmp_path / "results.html"
    report = write_search_page(
        page, results, images=folders[0], query_images=folders[1]
    )
    by_name = {
        name: card
        for _, _, row in cards(parse_page(page))
        for card in row.find("li")
        for name in [card.find(cls="name")[0].content()]
    }
    for name, problem in [
        ("missing.jpg", "image not found"),
        ("broken.jpg", "cannot read"),
    ]:
        placeholder = by_name[name].find(cls="placeholder")
        assert placeholder and placeholder[0].content().startswith(problem)
        assert not by_name[name].find("img")
    assert by_name["a.jpg"].find("img")
    assert report.n_placeholders == 2
    # Every other distinct image has its thumbnail.
    distinct = {r.query for r in results} | {n for r in results for n in r.names}
    assert report.n_thumbnails == len(distinct) - 2


def test_labels_and_average_precision_follow_the_ground_truth(
    tmp_path, folders, results
):
    page = tmp_path / "results.html"
    write_search_page(
        page, results, images=folders[0], query_images=folders[1], ground_truth=TRUTH
    )
    for (_, hits, row), result in zip(cards(parse_page(page)), results, strict=True):
        truth = TRUTH.get(result.query)
        for (_, classes, label), name in zip(hits, result.names, strict=True):
            if truth is None:
                assert label == "" and classes == set()
            elif name in truth["relevant"]:
                assert (label, classes) == ("relevant", {"relevant"})
            elif name in truth.get("junk", []):
                assert (label, classes) == ("junk", {"junk"})
            else:
                assert (label, classes) == ("not relevant", {"not-relevant"})
        if truth is None:
            assert row.attributes["data-ap"] == "" and not row.find(cls="ap")
            continue
        expected = average_precision(
            list(result.names), truth["relevant"], truth.get("junk", [])
        )
        assert float(row.attributes["data-ap"]) == pytest.approx(expected, abs=1e-6)
        assert row.find(cls="ap")[0].content() == f"{100 * expected:.2f}"


@pytest.mark.parametrize("truth", [None, TRUTH])
@pytest.mark.parametrize("limit", [1, 2, 3, 4, None])
def test_the_limit_keeps_the_first_or_the_worst_queries(
    tmp_path, results, truth, limit
):
    page = tmp_path / "results.html"
    report = write_search_page(page, results, ground_truth=truth, limit=limit)
    shown = [query for query, _, _ in cards(parse_page(page))]
    order = list(range(len(results)))
    if truth is not None and limit is not None:

        def key(place):
            result = results[place]
            if result.query not in truth:
                return (math.inf, place)
            expected = truth[result.query]
            ap = average_precision(
                list(result.names), expected["relevant"], expected.get("junk", [])
            )
            return (ap, place)

        order = sorted(sorted(order, key=key)[:limit])
    elif limit is not None:
        order = order[:limit]
    assert shown == [visible(results[place].query) for place in order]
    assert (report.n_queries, report.n_total) == (len(order), len(results))
    showing = [
        p.content()
        for p in parse_page(page).find("p", "summary")
        if "Showing" in p.content()
    ]
    assert bool(showing) == (len(order) < len(results))


def test_thumbnails_are_made_once_and_reused(tmp_path, folders, results):
    page = tmp_path / "results.html"
    first = write_search_page(page, results, images=folders[0], query_images=folders[1])
    written = page.read_bytes()
    thumbnails = page.parent / "results_files" / "thumbnails"
    made = {path.name: path.stat().st_mtime_ns for path in thumbnails.iterdir()}
    assert first.n_reused == 0 and len(made) == first.n_thumbnails
    second = write_search_page(
        page, results, images=folders[0], query_images=folders[1]
    )
    assert second.n_reused == second.n_thumbnails == first.n_thumbnails
    assert {path.name: path.stat().st_mtime_ns for path in thumbnails.iterdir()} == made
    assert page.read_bytes() == written
    # A page of fewer queries keeps only the thumbnails it shows.
    third = write_search_page(
        page, results, images=folders[0], query_images=folders[1], limit=1
    )
    assert third.n_reused == third.n_thumbnails == len(list(thumbnails.iterdir()))
    assert len(list(thumbnails.iterdir())) < len(made)


def test_a_changed_image_gets_a_new_thumbnail(tmp_path):
    images = tmp_path / "images"
    write_photo(images / "a.jpg", (80, 40), (10, 200, 10))
    results = SearchResults([hit(["a.jpg"], "a.jpg")])
    page = tmp_path / "results.html"
    write_search_page(page, results, images=images)
    before = set((tmp_path / "results_files" / "thumbnails").iterdir())
    write_photo(images / "a.jpg", (40, 80), (10, 10, 200))
    os.utime(images / "a.jpg", ns=(1, 1))
    report = write_search_page(page, results, images=images)
    after = set((tmp_path / "results_files" / "thumbnails").iterdir())
    assert report.n_reused == 0 and len(after) == 1 and after != before
    with PIL.open(next(iter(after))) as opened:
        assert opened.size == (40, 80)


def test_a_second_page_beside_the_first_reuses_its_thumbnails(tmp_path):
    images = tmp_path / "images"
    for number in range(3):
        write_photo(images / f"{number}.jpg", (80, 40 + 10 * number))
    results = SearchResults([hit(["0.jpg", "1.jpg", "2.jpg"], "q")])
    first = write_search_page(tmp_path / "first.html", results, images=images)
    second = write_search_page(tmp_path / "second.html", results, images=images)
    assert first.n_reused == 0 and first.n_thumbnails == 3
    assert second.n_reused == second.n_thumbnails == 3

    def thumbnails(page: str) -> dict[str, bytes]:
        folder = tmp_path / f"{page}_files" / "thumbnails"
        return {path.name: path.read_bytes() for path in folder.iterdir()}

    assert thumbnails("second") == thumbnails("first")
    # The evaluation report beside them reuses them too.
    rankings = {"q": ["0.jpg", "1.jpg", "2.jpg"]}
    truth = {"q": {"relevant": ["1.jpg"]}}
    report = write_evaluation_page(
        tmp_path / "report.html",
        evaluate(rankings, truth),
        rankings,
        truth,
        images=images,
    )
    assert report.n_reused == report.n_thumbnails == 3


def test_an_image_rewritten_with_its_size_and_time_kept_gets_a_new_thumbnail(
    tmp_path,
):
    # As cp -p or rsync -a can leave it: other pixels, same size, same
    # modification time. Neither this page's thumbnail nor another page's is
    # reused.
    images = tmp_path / "images"
    images.mkdir()
    PIL.new("RGB", (40, 30), (250, 0, 0)).save(images / "a.bmp")
    status = (images / "a.bmp").stat()
    results = SearchResults([hit(["a.bmp"], "a.bmp")])
    write_search_page(tmp_path / "first.html", results, images=images)
    PIL.new("RGB", (40, 30), (0, 0, 250)).save(images / "a.bmp")
    os.utime(images / "a.bmp", ns=(status.st_atime_ns, status.st_mtime_ns))
    assert (images / "a.bmp").stat().st_size == status.st_size
    second = write_search_page(tmp_path / "second.html", results, images=images)
    assert second.n_reused == 0 and second.n_thumbnails == 1
    write_search_page(tmp_path / "first.html", results, images=images)
    for page in ("first", "second"):
        [thumbnail] = (tmp_path / f"{page}_files" / "thumbnails").iterdir()
        with PIL.open(thumbnail) as opened:
            red, _, blue = opened.convert("RGB").getpixel((20, 15))
        assert blue > 200 and red < 50


def test_an_image_of_more_pixels_than_the_limit_is_never_decoded(tmp_path):
    # A real 13000 x 13000 16-bit RGBA PNG of 1.6 MB: 1.4 GB to decode, more
    # than the default limit of 2**27 pixels. It is refused from its header.
    images = tmp_path / "images"
    images.mkdir()
    (images / "huge.png").write_bytes(png_of_zeros(13000, 13000))
    write_photo(images / "small.jpg", (60, 40))
    results = SearchResults([hit(["huge.png", "small.jpg"], "small.jpg")])
    page = tmp_path / "results.html"
    report = write_search_page(page, results, images=images, query_images=images)
    reason = "13000 x 13000 pixels is more than max_pixels=134217728"
    [(source, problem)] = report.unreadable
    assert source == images / "huge.png" and problem.startswith(reason)
    [placeholder] = parse_page(page).find(cls="placeholder")
    assert placeholder.content() == f"cannot read the image: {problem}"
    assert report.n_thumbnails == 1 and report.n_placeholders == 1
    # The limit is the caller's: a JPEG of 60 x 40 is refused beyond 2000.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    report = write_search_page(
        elsewhere / "results.html",
        results,
        images=images,
        query_images=images,
        max_pixels=2000,
    )
    assert [problem for _, problem in report.unreadable] == [
        "60 x 40 pixels is more than max_pixels=2000 (raise the limit to read it)",
        "13000 x 13000 pixels is more than max_pixels=2000 (raise the limit to "
        "read it)",
    ]
    with pytest.raises(ValueError, match="max_pixels must be an integer >= 0"):
        write_search_page(page, results, images=images, max_pixels=-1)


@pytest.mark.skipif(
    not os.path.exists("/proc/self/status"), reason="reads the peak from /proc"
)
def test_a_thumbnail_beyond_the_limit_takes_no_memory(tmp_path):
    # The peak memory of a process that makes the thumbnail of that PNG:
    # before the limit applied, Pillow decoded it in 1.36 GB (and 13 s).
    images = tmp_path / "images"
    images.mkdir()
    (images / "huge.png").write_bytes(png_of_zeros(13000, 13000))
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "from vlad.pages._thumbnails import make_thumbnail\n"
        "folder = Path(sys.argv[1])\n"
        "thumbnail = make_thumbnail(folder / 'huge.png', folder, folder)\n"
        "assert thumbnail.relative is None, thumbnail\n"
        "status = Path('/proc/self/status').read_text().splitlines()\n"
        "print(next(line for line in status if line.startswith('VmHWM:')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(images)],
        capture_output=True,
        text=True,
        check=True,
    )
    _, peak, unit = done.stdout.split()
    assert unit == "kB" and int(peak) < 300 * 1024


def test_thumbnails_are_upright_and_no_larger_than_160_pixels(tmp_path):
    images = tmp_path / "images"
    images.mkdir()
    # 400 x 200, dark square top-left, stored with EXIF orientation 6: shown
    # turned a quarter clockwise, 200 x 400 with the square top-right.
    picture = PIL.new("RGB", (400, 200), (250, 250, 250))
    picture.paste((0, 0, 0), (0, 0, 100, 100))
    exif = PIL.Exif()
    exif[0x0112] = 6
    picture.save(images / "turned.jpg", exif=exif)
    write_photo(images / "small.jpg", (50, 30))
    results = SearchResults([hit(["turned.jpg", "small.jpg"], "q")])
    page = tmp_path / "page.html"
    write_search_page(page, results, images=images)
    sizes = {}
    for image in parse_page(page).find("img"):
        with PIL.open(source_file(page, image.attributes["src"])) as opened:
            sizes[image.attributes["alt"]] = opened.size
            if image.attributes["alt"] == "turned.jpg":
                pixels = np.asarray(opened.convert("L"))
    assert sizes == {"turned.jpg": (80, 160), "small.jpg": (50, 30)}
    assert pixels[:30, -30:].mean() < 40 and pixels[:30, :30].mean() > 200


def test_a_page_can_be_moved_with_its_folder(tmp_path, folders, results):
    page = tmp_path / "here" / "results.html"
    page.parent.mkdir()
    write_search_page(page, results, images=folders[0], query_images=folders[1])
    moved = tmp_path / "there"
    moved.mkdir()
    page.rename(moved / "results.html")
    (page.parent / "results_files").rename(moved / "results_files")
    for image in parse_page(moved / "results.html").find("img"):
        assert source_file(moved / "results.html", image.attributes["src"]).is_file()


def test_names_outside_the_image_folders_are_never_read(tmp_path, folders):
    write_photo(tmp_path / "secret.jpg")
    found = ImageFolders(folders[0])
    assert found.locate("../secret.jpg") is None
    assert found.locate("a.jpg") == folders[0] / "a.jpg"
    assert found.locate("sub/d.jpg") == folders[0] / "sub" / "d.jpg"


def test_without_pillow_the_page_says_what_to_install(tmp_path, monkeypatch, results):
    for name in [
        name for name in sys.modules if name == "PIL" or name.startswith("PIL.")
    ]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "PIL", None)
    with pytest.raises(ImportError, match=re.escape(install_command("html"))):
        write_search_page(tmp_path / "results.html", results)
    assert not (tmp_path / "results.html").exists()


def test_a_page_in_a_folder_that_does_not_exist_is_refused(tmp_path, results):
    with pytest.raises(FileNotFoundError, match="no such folder"):
        write_search_page(tmp_path / "absent" / "results.html", results)
    assert not (tmp_path / "absent").exists()
    with pytest.raises(ValueError, match="is a folder"):
        write_search_page(tmp_path, results)


@pytest.mark.parametrize(
    ("arguments", "error", "message"),
    [
        ({"limit": 0}, ValueError, "limit must be None or an int >= 1; got 0"),
        ({"limit": 2.5}, TypeError, "limit must be None or an int"),
        ({"ground_truth": {"q": {"junk": []}}}, ValueError, "relevant"),
        ({"ground_truth": {"nobody": {"relevant": ["a"]}}}, ValueError, "none of"),
    ],
)
def test_bad_arguments_are_refused_in_one_line(
    tmp_path, results, arguments, error, message
):
    with pytest.raises(error, match=message) as raised:
        write_search_page(tmp_path / "results.html", results, **arguments)
    assert "\n" not in str(raised.value)


@given(st.text())
def test_escaped_text_reads_back_as_the_visible_name(name):
    escaped = escape(name)
    assert not set(escaped) & set("<>\"'")
    assert html.unescape(escaped) == visible(name)
    # Nothing invisible or reordering is left: no control, format, surrogate,
    # private or unassigned character.
    assert all(unicodedata.category(character)[0] != "C" for character in visible(name))


@given(st.text(st.characters(blacklist_categories=["Cs"]), min_size=1))
def test_urls_decode_to_the_path(path):
    encoded = url(path)
    assert set(encoded) <= set(
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-~/%"
    )
    assert unquote_to_bytes(encoded) == os.fsencode(path)


def test_a_name_that_is_not_utf8_shows_its_bytes():
    name = os.fsdecode(b"caf\xe9.jpg")
    assert visible(name) == "caf\\xe9.jpg"
    assert escape("line\nbreak") == "line\\nbreak"


def test_the_evaluation_report(tmp_path, folders, results):
    rankings = results.rankings()
    truth = {**TRUTH, "q4.jpg": {"relevant": ["a.jpg"], "tags": ["hard"]}}
    evaluation = evaluate(rankings, truth)
    page = tmp_path / "report.html"
    report = write_evaluation_page(
        page,
        evaluation,
        rankings,
        truth,
        images=folders[0],
        query_images=folders[1],
        n_worst=3,
        n_hits=2,
    )
    tree = parse_page(page)
    # The table: one row overall and one per tag, the means in percent.
    rows = tree.find("table")[0].find("tr")[1:]
    labels = [row.find("td")[0].content() for row in rows]
    assert labels == ["all", "<i>tag</i>", "easy", "hard"]
    cells = [cell.content() for cell in rows[0].find("td")[2:]]
    expected = [evaluation.mean[name] for name in evaluation.metric_names]
    assert cells == [f"{100 * value:.2f}" for value in expected]
    # Charts: the curve's eleven points, one bar per tag, the tag as text.
    charts = tree.find("svg")
    assert len(charts) == 2 and len(charts[0].find("circle")) == 11
    texts = [text.content() for text in charts[1].find("text")]
    assert texts[1::2] == ["<i>tag</i>", "easy", "hard"]
    assert texts[2::2] == [
        f"{100 * evaluation.by_tag[tag]['mAP']:.1f}%" for tag in evaluation.tags
    ]
    # The worst queries, lowest AP first (ties in the ground truth's order).
    worst = sorted(
        (query for query in evaluation.queries if query.counted),
        key=lambda query: query.scores["AP"],
    )[:3]
    sections = tree.find("section", "row")
    assert [s.find(cls="query")[0].find(cls="name")[0].content() for s in sections] == [
        query.query for query in worst
    ]
    assert report.n_queries == 3
    # Each shows its first two hits, labelled, then its relevant images beyond.
    for section, query in zip(sections, worst, strict=True):
        names = [card.find(cls="name")[0].content() for card in section.find("li")]
        ranking = list(rankings.get(query.query, []))
        beyond = [n for n in truth[query.query]["relevant"] if n not in ranking[:2]]
        assert names == [visible(name) for name in ranking[:2] + beyond]
    assert "not in the results" in tree.find("section", "row")[0].content()


def test_a_worst_query_shows_every_relevant_image_it_missed_and_names_the_rest(
    tmp_path, folders
):
    """Relevant beyond the shown hits: the first three found as pictures, in
    rank order, every missed one as a picture, the others named with ranks."""
    ranking = [f"r{rank}.jpg" for rank in range(1, 11)]
    relevant = ["r9.jpg", "r3.jpg", "gone1.jpg", "r4.jpg", "r7.jpg", "r5.jpg"]
    relevant += ["gone2.jpg", "gone3.jpg", "gone4.jpg"]
    truth = {"q1.jpg": {"relevant": relevant}}
    rankings = {"q1.jpg": ranking}
    page = tmp_path / "report.html"
    write_evaluation_page(
        page,
        evaluate(rankings, truth),
        rankings,
        truth,
        images=folders[0],
        query_images=folders[1],
        n_hits=2,
    )
    [section] = parse_page(page).find("section", "row")
    names = [card.find(cls="name")[0].content() for card in section.find("li")]
    missed = ["gone1.jpg", "gone2.jpg", "gone3.jpg", "gone4.jpg"]
    assert names == ["r1.jpg", "r2.jpg", "r3.jpg", "r4.jpg", "r5.jpg", *missed]
    assert section.content().count("not in the ranking") == 4
    assert "+2 more: r7.jpg (rank 7), r9.jpg (rank 9)" in section.content()


def test_one_query_is_one_query_not_one_queries(tmp_path, folders):
    results = SearchResults([hit(["a.jpg", "b.jpg"], "q1.jpg")], {"k": 2})
    truth = {"q1.jpg": {"relevant": ["b.jpg"]}}
    search_page, evaluation_page = tmp_path / "s.html", tmp_path / "e.html"
    write_search_page(
        search_page, results, images=folders[0], query_images=folders[1],
        ground_truth=truth,
    )  # fmt: skip
    rankings = results.rankings()
    write_evaluation_page(
        evaluation_page, evaluate(rankings, truth), rankings, truth,
        images=folders[0], query_images=folders[1],
    )  # fmt: skip
    for page in (search_page, evaluation_page):
        text = parse_page(page).content()
        assert "1 query" in text and "1 queries" not in text
    assert "The query of lowest AP" in parse_page(evaluation_page).content()
