"""How ``vlad encode`` into a folder scales on a Dask cluster, and what a task costs.

On copies of the bundled photos at 320x240, the same run into a folder of
shards is timed in this process (``n_jobs=1`` and ``2``) and on a
``LocalCluster`` of one and of two worker processes (one thread each, started
as ``vlad encode --dask`` starts them, by
:func:`vlad.pipeline.dask_client`), whose workers have run a
task first (so their imports are not counted); then the
scheduler's cost per task: ``N`` tasks that do nothing, timed, divided by
``N``. Beside each time, the CPU seconds the run took (this process and the
workers) and the cores it used (CPU over wall-clock): on a machine that others
load, the cores a run was given. Prints Markdown tables; every run's folder
is checked to hold the same bytes as the local one.

Usage, from the root of a source checkout (needs ``pip install -e '.[dask]'``)::

    python -m benchmarks.dask_scaling [--images 256] [--shard-images 8]
        [--clusters 16] [--repeats 3] [--tasks 1000]
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib.util
import resource
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import cv2
import numpy as np

import vlad
from vlad.pipeline import dask_client, encode_images_to_folder

__all__ = ["main", "make_photos", "process_cpu_seconds", "task_overhead", "timed"]

DATA = Path(__file__).resolve().parents[1] / "data"


def make_photos(folder: Path, n_images: int) -> Path:
    """``n_images`` 320x240 crops of the bundled photos (each a different
    window, so no two are the same) in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    sources = sorted(path for path in DATA.iterdir() if path.suffix in (".jpg", ".png"))
    rng = np.random.default_rng(0)
    for index in range(n_images):
        image = cv2.imread(str(sources[index % len(sources)]))
        height, width = image.shape[:2]
        scale = rng.uniform(0.6, 1.0)
        crop_h, crop_w = int(height * scale), int(width * scale)
        top = rng.integers(0, height - crop_h + 1)
        left = rng.integers(0, width - crop_w + 1)
        crop = image[top : top + crop_h, left : left + crop_w]
        cv2.imwrite(str(folder / f"{index:05d}.jpg"), cv2.resize(crop, (320, 240)))
    return folder


def process_cpu_seconds() -> float:
    """User and system CPU seconds of this process so far, all threads."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def timed(run: Callable[[], object], client=None) -> tuple[float, float]:
    """Wall-clock seconds of ``run()`` and the CPU seconds it took: of this
    process, and of the workers of ``client``'s cluster."""

    def cpu() -> float:
        workers = client.run(process_cpu_seconds) if client is not None else {}
        return process_cpu_seconds() + sum(workers.values())

    cpu_start = cpu()
    start = time.perf_counter()
    run()
    wall = time.perf_counter() - start
    return wall, cpu() - cpu_start


def folder_bytes(folder: Path) -> dict[str, bytes]:
    """Every file of a folder and its bytes."""
    return {path.name: path.read_bytes() for path in sorted(folder.iterdir())}


def task_overhead(client, n_tasks: int) -> float:
    """Seconds per task of ``n_tasks`` tasks that do nothing, submitted at once
    and gathered."""
    import distributed

    start = time.perf_counter()
    futures = client.map(int, range(n_tasks), pure=False)
    distributed.wait(futures)
    elapsed = time.perf_counter() - start
    client.cancel(futures)
    return elapsed / n_tasks


def main(argv: list[str] | None = None) -> None:
    """Measure and print the tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=256)
    parser.add_argument("--shard-images", type=int, default=8)
    parser.add_argument("--clusters", type=int, default=16, help="K")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--tasks", type=int, default=1000)
    args = parser.parse_args(argv)
    if importlib.util.find_spec("distributed") is None:
        sys.exit("dask_scaling needs dask.distributed: pip install -e '.[dask]'")
    work = Path(tempfile.mkdtemp(prefix="vlad-dask-"))
    try:
        photos = make_photos(work / "photos", args.images)
        codebook, _ = vlad.fit_codebook_to_images(
            sorted(photos.iterdir())[:16], args.clusters, n_jobs=2
        )
        codebook.save(work / "codebook.npz")
        folder = work / "vectors"

        def encode(**settings):
            encode_images_to_folder(
                photos,
                work / "codebook.npz",
                folder,
                shard_images=args.shard_images,
                overwrite=True,
                **settings,
            )

        runs: dict[str, tuple[Callable[[], object], object]] = {
            f"this process, n_jobs={n_jobs}": (
                functools.partial(encode, n_jobs=n_jobs),
                None,
            )
            for n_jobs in (1, 2)
        }
        runs["this process, n_jobs=1"][0]()
        expected = folder_bytes(folder)
        with contextlib.ExitStack() as stack:
            clients, started = {}, {}
            for n_workers in (1, 2):
                start = time.perf_counter()
                client = stack.enter_context(dask_client(n_workers=n_workers))
                name = f"LocalCluster, {n_workers} worker(s)"
                started[name] = time.perf_counter() - start
                clients[n_workers] = client
                runs[name] = (functools.partial(encode, client=client), client)
                runs[name][0]()  # the workers' first task imports OpenCV
                if folder_bytes(folder) != expected:
                    raise AssertionError("the cluster wrote other bytes")
            # Rounds of every run in turn, so that a change in the machine's
            # load falls on all of them alike; the best round of each counts.
            seconds = {name: (float("inf"), 0.0) for name in runs}
            for _ in range(args.repeats):
                for name, (run, client) in runs.items():
                    seconds[name] = min(seconds[name], timed(run, client))
            overheads = [
                (n_workers, task_overhead(client, args.tasks))
                for n_workers, client in clients.items()
            ]
        rows = [(name, started.get(name), seconds[name]) for name in runs]
        n_tasks = -(-args.images // args.shard_images)
        print(
            f"{args.images} images of 320x240, K={args.clusters}, shards of "
            f"{args.shard_images} images ({n_tasks} tasks), best of {args.repeats}\n"
        )
        print(
            "| run | cluster start (s) | encode (s) | vs n_jobs=1 | CPU (s) "
            "| cores used |"
        )
        print("| --- | --- | --- | --- | --- | --- |")
        reference = rows[0][2][0]
        for name, start_seconds, (wall, cpu) in rows:
            shown = "" if start_seconds is None else f"{start_seconds:.1f}"
            print(
                f"| {name} | {shown} | {wall:.2f} | {reference / wall:.2f}x "
                f"| {cpu:.2f} | {cpu / wall:.2f} |"
            )
        print(f"\n2 workers vs 1 worker: {rows[2][2][0] / rows[3][2][0]:.2f}x\n")
        print(f"| workers | seconds per empty task ({args.tasks} tasks) |")
        print("| --- | --- |")
        for n_workers, task_seconds in overheads:
            print(f"| {n_workers} | {task_seconds * 1e3:.2f} ms |")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
