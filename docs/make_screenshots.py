"""Make the screenshots of docs/pages.md from the project's own retrieval
benchmark (its data/-only build), by the commands the page shows.

::

    python docs/make_screenshots.py [--work DIR] [--chromium PATH]
        [--chromedriver PATH]

Builds the benchmark folder, extracts, fits, encodes, indexes, searches with
spatial re-ranking and evaluates with ``--html``, draws one query's inlier
matches with ``vlad show-matches``, then opens both pages in headless Chromium
(Debian's ``chromium`` and ``chromium-driver``, driven by Selenium) and
writes:

- ``docs/images/search-page.png``: the search page, rows sorted by AP, worst
  first;
- ``docs/images/evaluation-page.png``: the top of the evaluation report;
- ``docs/images/matches.jpg``: the picture of ``vlad show-matches``.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
IMAGES = ROOT / "docs" / "images"
#: Fewer keypoints and centres than the defaults: the eight photos are easy to
#: tell apart, and a weaker setup leaves failures to look at.
SIFT = ["--max-side", "256", "--max-keypoints", "150"]
CLUSTERS = "4"
#: The query of the matches picture, and its original.
MATCHES = ("queries/data-astronaut__rotation-hard.jpg", "originals/data-astronaut.jpg")


def vlad(*arguments, cwd: Path) -> None:
    """Run ``vlad ARGUMENTS`` in ``cwd``; show what it says."""
    command = [sys.executable, "-m", "vlad", *map(str, arguments)]
    print("$ vlad", " ".join(map(str, arguments)), flush=True)
    subprocess.run(command, cwd=cwd, check=True)


def make_pages(work: Path) -> None:
    """The benchmark folder, then the pages, as docs/pages.md shows them."""
    subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks.retrieval.build",
            work / "bench",
            "--source",
            "data",
            "--max-side",
            "256",
            "--overwrite",
        ],
        cwd=ROOT,
        check=True,
    )
    again = ["--overwrite", "-q"]
    vlad("extract", "bench/database", *SIFT, "-o", "database.npz", *again, cwd=work)
    vlad("fit", "database.npz", "-k", CLUSTERS, "-o", "codebook.npz", *again, cwd=work)
    vlad(
        "encode", "database.npz", "-c", "codebook.npz", "-o", "db.npy", *again, cwd=work
    )
    vlad("index", "db.npy", "-o", "index", *again, cwd=work)
    vlad(
        "search", "index", "bench/queries", "-c", "codebook.npz", "-k", "5",
        "--rerank", "spatial", "--rerank-depth", "3",
        "--database-descriptors", "database.npz", "-o", "results.json",
        "--html", "results.html", "--images", "bench/database",
        "--ground-truth", "bench/ground_truth.json", "--overwrite", cwd=work,
    )  # fmt: skip
    vlad(
        "evaluate", "results.json", "-g", "bench/ground_truth.json",
        "--html", "report.html", "--images", "bench/database",
        "--query-images", "bench/queries", "--overwrite", cwd=work,
    )  # fmt: skip
    query, original = MATCHES
    vlad(
        "show-matches", f"bench/{query}", f"bench/database/{original}",
        *SIFT, "--height", "300", "-o", IMAGES / "matches.jpg", "--overwrite",
        cwd=work,
    )  # fmt: skip


def take_screenshots(work: Path, chromium: str, chromedriver: str) -> None:
    from selenium import webdriver
    from selenium.webdriver.support.select import Select

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for argument in [
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        "--window-size=1200,1150",
    ]:
        options.add_argument(argument)
    driver = webdriver.Chrome(
        service=webdriver.ChromeService(executable_path=chromedriver),
        options=options,
    )
    try:
        driver.get((work / "results.html").as_uri())
        Select(driver.find_element("id", "sort")).select_by_value("worst")
        _settle(driver)
        driver.save_screenshot(str(IMAGES / "search-page.png"))
        driver.set_window_size(1200, 1250)
        driver.get((work / "report.html").as_uri())
        _settle(driver)
        driver.save_screenshot(str(IMAGES / "evaluation-page.png"))
    finally:
        driver.quit()


def _settle(driver) -> None:
    """Wait until the images in view have loaded."""
    for _ in range(50):
        if driver.execute_script(
            "return Array.from(document.images).every((image) => image.complete "
            "|| image.getBoundingClientRect().top > innerHeight);"
        ):
            return
        time.sleep(0.1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--work", type=Path, help="Working folder (default: a temporary one)."
    )
    parser.add_argument(
        "--chromium", default=shutil.which("chromium") or "/usr/bin/chromium"
    )
    parser.add_argument(
        "--chromedriver",
        default=shutil.which("chromedriver") or "/usr/bin/chromedriver",
    )
    arguments = parser.parse_args(argv)
    IMAGES.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as temporary:
        work = arguments.work or Path(temporary)
        work.mkdir(parents=True, exist_ok=True)
        make_pages(work.resolve())
        take_screenshots(work.resolve(), arguments.chromium, arguments.chromedriver)
    for name in ["search-page.png", "evaluation-page.png", "matches.jpg"]:
        print(f"wrote {IMAGES / name} ({(IMAGES / name).stat().st_size // 1024} KB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
