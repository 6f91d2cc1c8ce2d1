"""Time the search page: 1,000 queries x top 10 over a few thousand photos,
made once and made again (thumbnails reused), and its size on disk.

::

    python -m benchmarks.pages [--images 3000] [--queries 1000] [-k 10]
        [--side 1024] [--work DIR] [--jobs N]

The photos are the bundled ones (``data/``) under the retrieval benchmark's
transforms (crop, rotation, scale, ...; both tiers, random parameters),
resized to ``--side`` pixels on their longer side (as camera photos, larger
than the bundled ones) and stored as JPEG at quality 90 in ``--work`` (kept,
and reused by the next run). Each query is one of them and
its hits are 10 others drawn at random (relevant: the copies of the same
photo), so every row holds 11 thumbnails and the page shows nearly every
photo. Prints the seconds of each build, the page's and its folder's size,
and what the same thumbnails would weigh as data URIs in the page.
"""

from __future__ import annotations

import argparse
import base64
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import unquote

import numpy as np

from benchmarks.retrieval.transforms import TIERS, TRANSFORMS, apply_transform
from vlad.pages import write_search_page
from vlad.search import QueryResult, SearchResults

__all__ = ["main", "make_photos", "make_results"]

DATA = Path(__file__).resolve().parents[1] / "data"


def make_photos(folder: Path, n_images: int, side: int, seed: int = 0) -> list[str]:
    """``n_images`` transformed copies of the bundled photos in ``folder``
    (those already there are kept); their names, by source photo."""
    import cv2

    sources = sorted(path for path in DATA.iterdir() if path.suffix in (".jpg", ".png"))
    originals = [cv2.imread(str(path)) for path in sources]
    transforms = [(name, tier) for name in TRANSFORMS for tier in TIERS]
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    names = []
    for number in range(n_images):
        source = number % len(sources)
        transform, tier = transforms[(number // len(sources)) % len(transforms)]
        name = f"{sources[source].stem}/{number:05d}-{transform}-{tier}.jpg"
        names.append(name)
        path = folder / name
        if path.exists():
            continue
        image = apply_transform(originals[source], transform, tier, rng)
        scale = side / max(image.shape[:2])
        size = (round(image.shape[1] * scale), round(image.shape[0] * scale))
        image = cv2.resize(image, size, interpolation=cv2.INTER_CUBIC)
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, 90])[1])
    return names


def make_results(
    names: list[str], n_queries: int, k: int, seed: int = 0
) -> tuple[SearchResults, dict]:
    """Results of ``n_queries`` of ``names`` with ``k`` random others each, and
    a ground truth where an image's relevant ones are the copies of its photo."""
    rng = np.random.default_rng(seed)
    photo = [name.split("/")[0] for name in names]
    queries = rng.choice(len(names), n_queries, replace=False)
    results, truth = [], {}
    for query in queries:
        others = rng.choice(len(names) - 1, k, replace=False)
        others[others >= query] += 1
        hits = tuple(names[row] for row in others)
        scores = np.sort(rng.uniform(0, 1, k)).astype(np.float32)[::-1]
        results.append(QueryResult(names[query], hits, scores, others.astype(np.int64)))
        relevant = [names[row] for row in others if photo[row] == photo[query]] or [
            names[(query + 8) % len(names)]
        ]
        truth[names[query]] = {"relevant": relevant}
    return SearchResults(results, {"k": k}), truth


def folder_size(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())


def data_uri_size(page: Path) -> int:
    """The page's size had each thumbnail been embedded as a data URI at each
    place it shows (what the page would weigh without its folder)."""
    text = page.read_text(encoding="utf-8")
    total = len(text.encode())
    for src in re.findall(r'<img src="([^"]+)"', text):
        path = page.parent / unquote(src)
        encoded = len(base64.b64encode(path.read_bytes())) + len(
            "data:image/jpeg;base64,"
        )
        total += encoded - len(src)
    return total


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--images", type=int, default=3000)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("-k", type=int, default=10)
    parser.add_argument("--side", type=int, default=1024)
    parser.add_argument(
        "--work", type=Path, default=Path(tempfile.gettempdir()) / "vlad-pages-bench"
    )
    parser.add_argument("--jobs", type=int, default=None)
    arguments = parser.parse_args(argv)
    photos = arguments.work / f"photos-{arguments.side}"
    start = time.perf_counter()
    names = make_photos(photos, arguments.images, arguments.side)
    print(
        f"{len(names)} photos in {photos} ({folder_size(photos) / 2**20:.0f} MB, "
        f"{time.perf_counter() - start:.1f} s to make or find)"
    )
    results, truth = make_results(names, arguments.queries, arguments.k)
    page = arguments.work / "results.html"
    folder = arguments.work / "results_files"
    if folder.exists():
        shutil.rmtree(folder)
    for run in ("first", "second"):
        start = time.perf_counter()
        report = write_search_page(
            page, results, images=photos, query_images=photos, ground_truth=truth,
            n_jobs=arguments.jobs,
        )  # fmt: skip
        seconds = time.perf_counter() - start
        print(
            f"{run} build: {seconds:.1f} s, {report.n_queries} queries, "
            f"{report.n_thumbnails} thumbnails ({report.n_reused} reused), "
            f"{os.cpu_count()} cores, jobs={arguments.jobs or 'all'}"
        )
    megabytes = [page.stat().st_size / 2**20, folder_size(folder) / 2**20]
    print(
        f"page {megabytes[0]:.1f} MB, thumbnails {megabytes[1]:.1f} MB "
        f"({report.n_thumbnails} files); as data URIs the page would be "
        f"{data_uri_size(page) / 2**20:.0f} MB"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
