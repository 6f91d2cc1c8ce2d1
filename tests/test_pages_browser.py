"""The pages in a real browser: headless Chromium (Debian's ``chromium`` and
``chromium-driver``) driven by Selenium, opening the pages from ``file://``
after they were moved with their folder.

Skipped when Selenium or Chromium is missing; CI installs both. Selenium is
given both executables, so it never tries to download a browser or driver.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from html_pages import HOSTILE_NAMES
from photos import DATA

from vlad.evaluation import average_precision, evaluate
from vlad.pages import write_evaluation_page, write_search_page
from vlad.pages._html import visible
from vlad.search._results import QueryResult, SearchResults

pytest.importorskip("PIL", reason="the pages need Pillow (vlad-toolkit[html])")
webdriver = pytest.importorskip(
    "selenium.webdriver", reason="selenium not installed (pip install -e '.[test]')"
)
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
if not (os.access(CHROMIUM, os.X_OK) and os.access(CHROMEDRIVER, os.X_OK)):
    pytest.skip(
        "headless Chromium not installed (apt-get install chromium chromium-driver)",
        allow_module_level=True,
    )

from selenium.common.exceptions import NoAlertPresentException  # noqa: E402
from selenium.webdriver.support.select import Select  # noqa: E402
from selenium.webdriver.support.wait import WebDriverWait  # noqa: E402

HOSTILE = HOSTILE_NAMES[0]
#: query -> its hits, best first; the ground truth's relevant image is the
#: photo the query is named after.
RANKINGS = {
    "astronaut-copy.jpg": ["astronaut.jpg", "chelsea.jpg", HOSTILE],
    "chelsea-copy.jpg": ["coffee.jpg", "chelsea.jpg", "missing.jpg"],
    "coffee-copy.jpg": ["astronaut.jpg", HOSTILE, "chelsea.jpg", "coffee.jpg"],
    HOSTILE: [HOSTILE, "coffee.jpg"],
}
TRUTH = {
    "astronaut-copy.jpg": {"relevant": ["astronaut.jpg"]},
    "chelsea-copy.jpg": {"relevant": ["chelsea.jpg"], "junk": ["missing.jpg"]},
    "coffee-copy.jpg": {"relevant": ["coffee.jpg"], "tags": ["<b>bold</b>"]},
    HOSTILE: {"relevant": [HOSTILE, "astronaut.jpg"]},
}


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    """The search page and the evaluation report of RANKINGS, written in one
    folder, then moved with their folders to another (whose name needs
    URL-encoding)."""
    root = tmp_path_factory.mktemp("browser")
    database, queries = root / "database", root / "queries"
    database.mkdir()
    queries.mkdir()
    for name in ["astronaut.jpg", "chelsea.jpg", "coffee.jpg"]:
        shutil.copy(DATA / name, database / name)
        shutil.copy(DATA / name, queries / name.replace(".jpg", "-copy.jpg"))
    shutil.copy(DATA / "rocket.jpg", database / HOSTILE)
    shutil.copy(DATA / "rocket.jpg", queries / HOSTILE)
    results = SearchResults(
        [
            QueryResult(query, tuple(names), _scores(len(names)), _rows(len(names)))
            for query, names in RANKINGS.items()
        ],
        {"k": 4},
    )
    written = root / "written"
    written.mkdir()
    write_search_page(
        written / "results.html",
        results,
        images=database,
        query_images=queries,
        ground_truth=TRUTH,
    )
    write_evaluation_page(
        written / "report.html",
        evaluate(RANKINGS, TRUTH),
        RANKINGS,
        TRUTH,
        images=database,
        query_images=queries,
    )
    moved = root / "moved #1 100%"
    written.rename(moved)
    return moved / "results.html", moved / "report.html"


def _scores(n):
    import numpy as np

    return np.linspace(0.9, 0.5, n).astype(np.float32)


def _rows(n):
    import numpy as np

    return np.arange(n)


@pytest.fixture(scope="module")
def browser():
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in [
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1280,900",
    ]:
        options.add_argument(argument)
    options.set_capability(
        "goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"}
    )
    driver = webdriver.Chrome(
        service=webdriver.ChromeService(executable_path=CHROMEDRIVER), options=options
    )
    yield driver
    driver.quit()


def open_page(driver, page: Path) -> tuple[list[dict], list[str]]:
    """Open ``page``, load every thumbnail (lazy ones too); return the console
    messages and the URL of every request it made."""
    driver.get_log("browser")
    driver.get_log("performance")
    driver.get(page.as_uri())
    driver.execute_script(
        "for (const image of document.images) image.loading = 'eager';"
    )
    WebDriverWait(driver, 10).until(
        lambda driver: driver.execute_script(
            "return Array.from(document.images).every((image) => image.complete);"
        )
    )
    requests = [
        event["params"]["request"]["url"]
        for entry in driver.get_log("performance")
        for event in [json.loads(entry["message"])["message"]]
        if event["method"] == "Network.requestWillBeSent"
    ]
    return driver.get_log("browser"), requests


ROWS = """
return Array.from(document.querySelectorAll("section.row"), (row) => ({
  query: row.querySelector(".query .name").textContent,
  shown: !row.hidden,
  hits: Array.from(row.querySelectorAll(".hits li"), (card) => ({
    name: card.querySelector(".name").textContent,
    label: card.querySelector(".label") ? card.querySelector(".label").textContent : "",
    colour: getComputedStyle(card).borderTopColor,
  })),
}));
"""


def average_precisions():
    return {
        query: average_precision(
            names, TRUTH[query]["relevant"], TRUTH[query].get("junk", [])
        )
        for query, names in RANKINGS.items()
    }


def test_every_thumbnail_loads_and_nothing_leaves_file_urls(browser, pages):
    console, requests = open_page(browser, pages[0])
    loaded = browser.execute_script(
        "return Array.from(document.images, (image) => image.naturalWidth);"
    )
    cards = sum(len(names) + 1 for names in RANKINGS.values())
    assert len(loaded) == cards - 1  # missing.jpg shows a placeholder
    assert all(width > 0 for width in loaded)
    placeholders = browser.execute_script(
        "return Array.from(document.querySelectorAll('.placeholder'),"
        " (placeholder) => placeholder.textContent);"
    )
    assert placeholders == ["image not found"]
    assert requests and all(url.startswith("file://") for url in requests)
    assert requests[0] == pages[0].as_uri()
    assert console == []


def test_labels_and_colours_follow_the_ground_truth(browser, pages):
    open_page(browser, pages[0])
    rows = browser.execute_script(ROWS)
    colours = {}
    for row, (query, names) in zip(rows, RANKINGS.items(), strict=True):
        assert row["query"] == visible(query)
        truth = TRUTH[query]
        for hit, name in zip(row["hits"], names, strict=True):
            assert hit["name"] == visible(name)
            label = (
                "relevant"
                if name in truth["relevant"]
                else "junk"
                if name in truth.get("junk", [])
                else "not relevant"
            )
            assert hit["label"] == label
            colours.setdefault(label, set()).add(hit["colour"])
    # One colour per label, and a different one for each.
    assert all(len(shades) == 1 for shades in colours.values())
    assert len({shade for shades in colours.values() for shade in shades}) == 3


# The page's controls, a page load each: with the slow tests.
@pytest.mark.slow
def test_sorting_by_ap_reorders_the_rows(browser, pages):
    open_page(browser, pages[0])
    given = [visible(query) for query in RANKINGS]
    scores = average_precisions()
    worst = [
        visible(q)
        for q in sorted(RANKINGS, key=lambda q: (scores[q], given.index(visible(q))))
    ]
    assert worst != given
    choose = Select(browser.find_element("id", "sort"))
    choose.select_by_value("worst")
    assert [row["query"] for row in browser.execute_script(ROWS)] == worst
    choose.select_by_value("best")
    best = sorted(RANKINGS, key=lambda q: (-scores[q], given.index(visible(q))))
    assert [row["query"] for row in browser.execute_script(ROWS)] == [
        visible(q) for q in best
    ]
    choose.select_by_value("order")
    assert [row["query"] for row in browser.execute_script(ROWS)] == given


@pytest.mark.slow
def test_filtering_by_name_hides_the_other_rows(browser, pages):
    open_page(browser, pages[0])
    browser.find_element("id", "filter").send_keys("COFFEE")
    shown = [row["query"] for row in browser.execute_script(ROWS) if row["shown"]]
    expected = [
        visible(query)
        for query, names in RANKINGS.items()
        if any("coffee" in name.lower() for name in [query, *names])
    ]
    assert shown == expected and len(shown) < len(RANKINGS)
    assert (
        browser.find_element("id", "shown").text
        == f"{len(expected)} of 4 queries shown"
    )


def test_a_hostile_name_is_text_and_runs_nothing(browser, pages, tmp_path):
    console, _ = open_page(browser, pages[0])
    names = browser.execute_script(
        "return Array.from(document.querySelectorAll('.name'),"
        " (name) => name.textContent);"
    )
    assert names.count(HOSTILE) == 4  # a query, and three hits
    assert (
        browser.execute_script("return document.querySelectorAll('img[src=x]').length")
        == 0
    )
    with pytest.raises(NoAlertPresentException):
        browser.switch_to.alert.text  # noqa: B018
    assert console == []
    browser.save_screenshot(str(tmp_path / "search-page.png"))
    assert (tmp_path / "search-page.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_evaluation_report(browser, pages, tmp_path):
    console, requests = open_page(browser, pages[1])
    assert console == [] and all(url.startswith("file://") for url in requests)
    assert browser.execute_script("return document.querySelectorAll('svg').length") == 2
    widths = browser.execute_script(
        "return Array.from(document.images, (image) => image.naturalWidth);"
    )
    assert widths and all(width > 0 for width in widths)
    tags = browser.execute_script(
        "return Array.from(document.querySelectorAll('table tr td:first-child'),"
        " (cell) => cell.textContent);"
    )
    assert tags == ["all", "<b>bold</b>"]
    browser.save_screenshot(str(tmp_path / "report.png"))
    assert (tmp_path / "report.png").stat().st_size > 1000
