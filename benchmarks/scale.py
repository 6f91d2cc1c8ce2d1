"""Peak memory of ``vlad extract``, ``vlad fit`` and ``vlad encode`` as the
collection grows.

``python -m benchmarks.scale [--sizes 500,2000,8000] [--jobs 2] [--json FILE]
[--layout folders|files|both]`` (``--large-jpeg`` measures ``vlad extract`` of one
8000x6000 JPEG, decoded whole and reduced, instead)
makes copies of the bundled photos at 320x240 (each moved, turned, scaled
and brightened a little at random, so that no two are alike), runs each
command on the first N of them as a child process, and prints the child's
peak resident set size (``ru_maxrss`` of ``os.wait4``), with the slope
between the two largest sizes and what it gives at a million images.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import cv2
import numpy as np

__all__ = [
    "COMMANDS",
    "SINGLE_FILE_COMMANDS",
    "large_jpeg_rows",
    "make_photos",
    "peak_rss",
    "run_scale",
]

DATA = Path(__file__).resolve().parents[1] / "data"
#: GNU time, which measures the children's peak memory.
TIME = "/usr/bin/time"
#: The size of every generated photo (width, height).
PHOTO_SIZE = (320, 240)
#: What is measured, each as ``vlad`` arguments; ``{photos}``, ``{out}``,
#: ``{jobs}`` are filled in. Rows run in this order: later ones read earlier
#: ones' outputs.
COMMANDS = {
    "extract PHOTOS -o descriptors": "extract {photos} -o {out}/d -j {jobs}",
    "fit descriptors --n-clusters 64": "fit {out}/d --n-clusters 64 -o {out}/c.npz",
    "encode descriptors -o vectors": "encode {out}/d -c {out}/c.npz -o {out}/v "
    "-j {jobs}",
}
#: With ``--layout files``: the same through one ``.npz`` and one ``.npy``.
SINGLE_FILE_COMMANDS = {
    "extract PHOTOS -o descriptors.npz": "extract {photos} -o {out}/d.npz -j {jobs}",
    "fit descriptors.npz --n-clusters 64": "fit {out}/d.npz --n-clusters 64 "
    "-o {out}/c1.npz",
    "encode descriptors.npz -o vectors.npy": "encode {out}/d.npz -c {out}/c1.npz "
    "-o {out}/v1.npy -j {jobs}",
}


def make_photos(folder: str | os.PathLike, n_photos: int, seed: int = 0) -> Path:
    """Write ``n_photos`` JPEGs of 320x240, ``000000.jpg`` ..., into ``folder``:
    the bundled photos in turn, each with a small random shift, rotation,
    scale and brightness change."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    bases = [
        cv2.resize(cv2.imread(str(path)), PHOTO_SIZE, interpolation=cv2.INTER_AREA)
        for path in sorted(DATA.iterdir())
        if path.suffix in (".jpg", ".png")
    ]
    rng = np.random.default_rng(seed)
    width, height = PHOTO_SIZE
    for index in range(n_photos):
        angle, scale = rng.uniform(-8, 8), rng.uniform(0.9, 1.1)
        matrix = cv2.getRotationMatrix2D((width / 2, height / 2), angle, scale)
        matrix[:, 2] += rng.uniform(-12, 12, 2)
        image = cv2.warpAffine(
            bases[index % len(bases)], matrix, PHOTO_SIZE, borderMode=cv2.BORDER_REFLECT
        )
        image = cv2.convertScaleAbs(image, alpha=1.0, beta=rng.uniform(-20, 20))
        cv2.imwrite(str(folder / f"{index:06d}.jpg"), image)
    return folder


def peak_rss(arguments: list[str], *, vlad: bool = True) -> tuple[float, float]:
    """Run ``vlad ARGUMENTS -q`` (or ``python ARGUMENTS``) as a child process;
    its peak resident set size (MiB) and wall time (seconds).

    GNU time (``/usr/bin/time``) starts the child and reports its maximum
    resident set size: Linux counts the RSS of the process that forks into a
    child's peak, and GNU time is small, where this process holds the photos
    it made.
    """
    command = ["-m", "vlad", *arguments, "-q"] if vlad else arguments
    with tempfile.NamedTemporaryFile("r", suffix=".txt") as report:
        start = time.perf_counter()
        completed = subprocess.run(
            [TIME, "-f", "%M", "-o", report.name, sys.executable, *command],
            stdout=subprocess.DEVNULL,
        )
        seconds = time.perf_counter() - start
        if completed.returncode:
            raise RuntimeError(f"{' '.join(command)} exited {completed.returncode}")
        kilobytes = int(report.read().split()[-1])
    return kilobytes / 1024, seconds


def run_scale(sizes: list[int], jobs: int, root: Path, commands: dict) -> dict:
    """Peak RSS (MiB) and time of every command of ``commands`` at each
    size; ``{"sizes": [...], "rows": {command: [[mib, seconds], ...]}}``."""
    make_photos(root / "all", max(sizes))
    rows: dict[str, list] = {name: [] for name in commands}
    for size in sizes:
        photos = root / f"photos-{size}"
        photos.mkdir()
        for index in range(size):
            name = f"{index:06d}.jpg"
            os.link(root / "all" / name, photos / name)
        out = root / f"out-{size}"
        out.mkdir()
        for name, command in commands.items():
            arguments = command.format(photos=photos, out=out, jobs=jobs).split()
            rows[name].append(peak_rss(arguments))
            print(f"{size:>6} {name:<42} {rows[name][-1][0]:7.0f} MiB", flush=True)
    return {"sizes": sizes, "jobs": jobs, "rows": rows}


def large_jpeg_rows(root: Path, size: tuple[int, int] = (8000, 6000)) -> dict:
    """Peak RSS (MiB) and time (s) of ``vlad extract`` on one JPEG of ``size``
    (the astronaut, enlarged) at ``--max-side 1024``, decoded whole or
    reduced."""
    path = root / "large.jpg"
    image = cv2.resize(cv2.imread(str(DATA / "astronaut.jpg")), size, cv2.INTER_CUBIC)
    cv2.imwrite(str(path), image, [cv2.IMWRITE_JPEG_QUALITY, 92])
    del image
    rows = {}
    for flag in ("--no-reduce-jpeg", "--reduce-jpeg"):
        arguments = f"extract {path} -o {root}/{flag}.npz --max-side 1024 {flag}"
        rows[f"vlad {arguments}"] = peak_rss(arguments.split())
    for min_side in (0, 1024):
        code = (
            "from vlad.images import read_image_reduced; "
            f"read_image_reduced({str(path)!r}, min_side={min_side})"
        )
        rows[f"decode only, min_side={min_side}"] = peak_rss(["-c", code], vlad=False)
    for name, (mib, seconds) in rows.items():
        print(f"{mib:7.0f} MiB {seconds:6.2f} s  {name}", flush=True)
    from vlad.images import read_image_reduced

    for min_side in (0, 1024):
        times = []
        for _ in range(5):
            start = time.perf_counter()
            read_image_reduced(path, min_side=min_side)
            times.append(time.perf_counter() - start)
        rows[f"decode in process, min_side={min_side}"] = [
            None,
            float(np.median(times)),
        ]
        print(f"decode, min_side={min_side}: median {np.median(times):.3f} s")
    return rows


def table(result: dict) -> str:
    """A Markdown table of peak RSS, with the slope between the two largest
    sizes (MiB per 1,000 images) and the straight line's value at 1M images."""
    sizes = result["sizes"]
    header = " | ".join(f"{size:,}" for size in sizes)
    lines = [
        f"| command (peak RSS, MiB) | {header} | MiB per 1,000 images | at 1M (line) |",
        "| --- |" + " --- |" * (len(sizes) + 2),
    ]
    for name, values in result["rows"].items():
        mib = [value[0] for value in values]
        # A slope below zero is noise about a flat line.
        slope = max(0.0, (mib[-1] - mib[-2]) / (sizes[-1] - sizes[-2]) * 1000)
        at_million = mib[-1] + slope * (1_000_000 - sizes[-1]) / 1000
        cells = " | ".join(f"{value:,.0f}" for value in mib)
        lines.append(f"| `vlad {name}` | {cells} | {slope:+.1f} | {at_million:,.0f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    """Parse the arguments, measure, print the table."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.scale")
    parser.add_argument("--sizes", default="500,2000,8000")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--json", type=Path)
    parser.add_argument(
        "--layout",
        choices=("folders", "files", "both"),
        default="folders",
        help="measure the folder commands, the single-file ones, or both",
    )
    parser.add_argument(
        "--large-jpeg", action="store_true", help="measure one 8000x6000 JPEG only"
    )
    arguments = parser.parse_args(argv)
    if arguments.large_jpeg:
        with tempfile.TemporaryDirectory(prefix="vlad-scale-") as root:
            large_jpeg_rows(Path(root))
        return
    sizes = [int(size) for size in arguments.sizes.split(",")]
    commands = {
        "folders": COMMANDS,
        "files": SINGLE_FILE_COMMANDS,
        "both": COMMANDS | SINGLE_FILE_COMMANDS,
    }[arguments.layout]
    with tempfile.TemporaryDirectory(prefix="vlad-scale-") as root:
        result = run_scale(sizes, arguments.jobs, Path(root), commands)
    if arguments.json:
        arguments.json.write_text(json.dumps(result, indent=2) + "\n")
    print(table(result))


if __name__ == "__main__":
    main()
