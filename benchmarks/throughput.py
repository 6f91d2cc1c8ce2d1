"""Images per second of ``vlad.encode_images`` against decoding + SIFT alone.

::

    python -m benchmarks.throughput [--images 256] [--side 800] [--jobs 1
        --jobs 2] [--repeats 3] [--clusters 64] [--work DIR] [--json PATH]

The photos are transformed copies of the bundled ones, ``--side`` pixels on
their longer side, as JPEG (made once in ``--work`` and reused). For each
number of jobs, side by side and alternating within each repeat:

- the floor, decoding and SIFT alone: ``cv2.imread`` in grey and OpenCV's
  SIFT (at most 2,000 keypoints, as the library's default) on a thread pool of
  that many threads, OpenCV single-threaded, nothing kept;
- ``vlad.extract_images`` (descriptors of every image, as ``vlad extract``);
- ``vlad.encode_images`` (vectors of every image, as ``vlad encode``), with a
  codebook of ``--clusters`` centres fitted once beforehand.

Prints the median seconds of each, the ratio of ``encode_images`` to the
floor and each one's speed-up over one job.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import vlad
from benchmarks.files import atomic_write
from benchmarks.pages import make_photos
from benchmarks.report import machine_info

__all__ = ["decode_and_sift", "main", "measure_jobs"]


def decode_and_sift(paths: list[Path], n_jobs: int) -> int:
    """Decode each file in grey and run OpenCV SIFT on it, on ``n_jobs``
    threads; the number of descriptors found."""
    import cv2

    def describe(path: Path) -> int:
        image = cv2.imread(str(path), cv2.IMREAD_GRAYSCALE)
        _, descriptors = cv2.SIFT_create(nfeatures=2000).detectAndCompute(image, None)
        return 0 if descriptors is None else len(descriptors)

    # One OpenCV thread per call: the pool's threads are the parallelism, as
    # in vlad's own extraction.
    threads = cv2.getNumThreads()
    cv2.setNumThreads(1)
    try:
        with ThreadPoolExecutor(max_workers=n_jobs) as pool:
            return sum(pool.map(describe, paths))
    finally:
        cv2.setNumThreads(threads)


def measure_jobs(
    folder: Path, codebook: vlad.Codebook, jobs: list[int], repeats: int
) -> dict:
    """Seconds of the floor, ``extract_images`` and ``encode_images`` for each
    number of jobs, ``repeats`` times, alternating."""
    paths = sorted(folder.rglob("*.jpg"))
    runs = {
        n_jobs: {"decode + SIFT": [], "extract_images": [], "encode_images": []}
        for n_jobs in jobs
    }
    calls = {
        "decode + SIFT": lambda n_jobs: decode_and_sift(paths, n_jobs),
        "extract_images": lambda n_jobs: vlad.extract_images(folder, n_jobs=n_jobs),
        "encode_images": lambda n_jobs: vlad.encode_images(
            folder, codebook, n_jobs=n_jobs
        ),
    }
    for _ in range(repeats):
        for n_jobs in jobs:
            for name, call in calls.items():
                start = time.perf_counter()
                call(n_jobs)
                runs[n_jobs][name].append(time.perf_counter() - start)
    return runs


def _summary(runs: dict) -> list[dict]:
    rows = []
    one = min(runs)
    for n_jobs, seconds in runs.items():
        median = {name: statistics.median(values) for name, values in seconds.items()}
        rows.append(
            {
                "jobs": n_jobs,
                "seconds": median,
                "encode / floor": median["encode_images"] / median["decode + SIFT"],
                "extract / floor": median["extract_images"] / median["decode + SIFT"],
                "speed-up": {
                    name: statistics.median(runs[one][name]) / value
                    for name, value in median.items()
                },
            }
        )
    return rows


def format_rows(rows: list[dict]) -> str:
    """The summary as a Markdown table."""
    lines = [
        "| jobs | decode + SIFT | extract_images | encode_images | encode / floor "
        "| speed-up of encode_images (floor) |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        seconds = row["seconds"]
        lines.append(
            f"| {row['jobs']} | {seconds['decode + SIFT']:.2f} s "
            f"| {seconds['extract_images']:.2f} s | {seconds['encode_images']:.2f} s "
            f"| {row['encode / floor']:.2f} "
            f"| {row['speed-up']['encode_images']:.2f}x "
            f"({row['speed-up']['decode + SIFT']:.2f}x) |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.throughput")
    parser.add_argument("--images", type=int, default=256)
    parser.add_argument("--side", type=int, default=800)
    parser.add_argument("--jobs", type=int, action="append")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--clusters", type=int, default=64)
    parser.add_argument("--work", type=Path)
    parser.add_argument("--json", type=Path)
    arguments = parser.parse_args(argv)
    jobs = arguments.jobs or [1, 2]
    with tempfile.TemporaryDirectory() as scratch:
        folder = arguments.work or Path(scratch) / "photos"
        make_photos(folder, arguments.images, arguments.side)
        codebook, _ = vlad.fit_codebook_to_images(
            folder, arguments.clusters, n_jobs=max(jobs)
        )
        runs = measure_jobs(folder, codebook, jobs, arguments.repeats)
    rows = _summary(runs)
    print(
        f"{arguments.images} photos of {arguments.side} px, K={arguments.clusters}, "
        f"median of {arguments.repeats}"
    )
    print(format_rows(rows))
    if arguments.json:
        report = {
            "machine": machine_info(),
            "settings": vars(arguments) | {"work": None, "json": None},
            "runs": {str(n_jobs): values for n_jobs, values in runs.items()},
            "summary": rows,
        }
        with atomic_write(arguments.json) as handle:
            handle.write((json.dumps(report, indent=1) + "\n").encode())
    return 0


if __name__ == "__main__":
    sys.exit(main())
