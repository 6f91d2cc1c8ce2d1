"""ASMK* as the database grows: query time, index bytes, open and build time
and peak memory, for vocabularies of several sizes.

Usage, from the repository root::

    python -m benchmarks.asmk_scale --descriptors desc.npz \\
        --codebook cb4096.npz --sizes 10000 100000 --json asmk-4096.json

Each vocabulary indexes the real images of ``--descriptors`` (``vlad
extract``'s output; the bundled photos of data/ when not given) once: the
*base* index, its build timed. A database of N images is then the base
index's segment copied N / n_base times, each copy but the first perturbed as
another image would differ: a tenth of its entries dropped at random and
each sign bit of the others flipped with probability 0.1, so that lists
grow as they would with real distractors while the real images keep their
place (the first copy). The copies are stacked
(:meth:`vlad.asmk.ASMKIndex.from_segments`), saved, and merged into one
segment in place (:func:`vlad.asmk.merge_asmk_index`), each step timed.
Then the folder is opened memory-mapped and the first ``--queries`` real
images are searched with ``--multiple-assignment`` words per query
descriptor (each value in turn): open time, CPU and wall-clock time per
query (after one warm-up query; the page cache holds the folder just
written) and peak resident set size, which counts the pages of the mapped
index the searches read. Building a database of real images would cost the
assignment of every descriptor to its words (see the base build's seconds
per image), which is what the copies save.

Each step (base build, database, search) runs in a child process of its own,
whose peak resident set size GNU time reports. Times are CPU seconds of all
threads and wall-clock seconds; on a shared machine the CPU time is the
steadier. Bytes are the index folder's on disk (entries, offsets, names,
codebook) per image.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import vlad
from benchmarks.measuring import timed
from benchmarks.scale import peak_rss
from vlad.asmk import (
    ASMKIndex,
    ASMKSegment,
    build_asmk_index,
    load_asmk_index,
    merge_asmk_index,
)

__all__ = [
    "build_base",
    "build_database",
    "copied_segment",
    "main",
    "measure_search",
    "scale_rows",
]

DATA = Path(__file__).resolve().parents[1] / "data"
#: Share of a copy's entries dropped, and probability of each sign bit flipped.
DROPPED, FLIPPED = 0.1, 0.1
#: Random masks the copies' codes are XORed with, drawn per entry.
N_MASKS = 1024


def copied_segment(
    base: ASMKSegment, first_image: int, rng: np.random.Generator
) -> ASMKSegment:
    """A perturbed copy of ``base`` numbered from ``first_image``: each entry
    dropped with probability :data:`DROPPED`, each bit of the others' codes
    flipped with probability :data:`FLIPPED`."""
    n_words = base.n_words
    counts = base.word_counts()
    words = np.repeat(np.arange(n_words), counts)
    kept = rng.random(base.n_entries) >= DROPPED
    width = base.codes.shape[1]
    masks = np.packbits(rng.random((N_MASKS, width * 8)) < FLIPPED, axis=1)
    codes = base.codes[kept] ^ masks[rng.integers(0, N_MASKS, int(kept.sum()))]
    local = base.entry_images[kept].astype(np.int64) - base.first_image
    offsets = np.zeros(n_words + 1, np.int64)
    np.cumsum(np.bincount(words[kept], minlength=n_words), out=offsets[1:])
    return ASMKSegment(
        first_image,
        base.n_images,
        offsets,
        (local + first_image).astype(np.int32),
        codes,
        np.bincount(local, minlength=base.n_images).astype(np.int32),
    )


def base_index(
    sets: vlad.DescriptorSets,
    words: vlad.Codebook,
    folder: str,
    quantizer: str,
    quantizer_parameters: str | None,
) -> tuple[ASMKIndex, dict]:
    """The index of ``sets``, its build timed, saved to ``folder``; and what
    it holds and took."""
    base, build_s, build_cpu = timed(
        lambda: build_asmk_index(
            sets,
            words,
            quantizer=quantizer,
            quantizer_parameters=quantizer_parameters,
        )
    )
    base.save(folder)
    return base, {
        "n_images": base.n_images,
        "n_descriptors": int(sets.descriptors.shape[0]),
        "n_entries": base.n_entries,
        "entries_per_image": base.n_entries / base.n_images,
        "build_s": build_s,
        "build_cpu_s": build_cpu,
        "build_cpu_ms_per_image": 1000 * build_cpu / base.n_images,
    }


def build_base(
    descriptors: str,
    codebook: str,
    folder: str,
    queries: str,
    n_queries: int,
    quantizer: str,
    quantizer_parameters: str | None,
) -> dict:
    """The base index of the real images, saved to ``folder``, and the first
    ``n_queries`` images' descriptors saved to ``queries``."""
    sets = (
        vlad.DescriptorSets.load(descriptors) if descriptors else _bundled_descriptors()
    )
    words = vlad.Codebook.load(codebook)
    _, built = base_index(sets, words, folder, quantizer, quantizer_parameters)
    sets.between(0, min(n_queries, len(sets))).save(queries)
    return built


def build_database(base_folder: str, n_images: int, folder: str, seed: int) -> dict:
    """The folder of a database of about ``n_images`` (whole copies of the
    base index), written and merged; seconds of each step."""
    base = load_asmk_index(base_folder)
    rng = np.random.default_rng(seed)
    (segment,) = base.segments
    n_copies = max(1, n_images // base.n_images)
    names = [f"{copy}/{name}" for copy in range(n_copies) for name in base.names]

    def stacked():
        copies = [segment] + [
            copied_segment(segment, copy * base.n_images, rng)
            for copy in range(1, n_copies)
        ]
        return ASMKIndex.from_segments(
            base.codebook,
            names,
            copies,
            binary=base.binary,
            source=base.source,
            quantizer=base.quantizer,
            quantizer_parameters=base.quantizer_parameters,
        )

    index, copy_s, _ = timed(stacked)
    start = time.perf_counter()
    index.save(folder)
    save_s = time.perf_counter() - start
    n_entries = index.n_entries
    del index  # its copies' memory, before the merge
    merged, merge_s, merge_cpu = timed(lambda: merge_asmk_index(folder))
    size = sum(
        path.stat().st_size for path in Path(folder).rglob("*") if path.is_file()
    )
    return {
        "n_images": merged.n_images,
        "n_entries": n_entries,
        "copy_s": copy_s,
        "save_s": save_s,
        "merge_s": merge_s,
        "merge_cpu_s": merge_cpu,
        "folder_bytes": size,
        "bytes_per_image": size / merged.n_images,
    }


def measure_search(
    folder: str, queries: str, assignments: list[int], k: int = 100
) -> dict:
    """Open ``folder`` memory-mapped and search the queries of ``queries``
    (a descriptors file) with each number of words per query descriptor."""
    opened, open_s, _ = timed(lambda: load_asmk_index(folder, mmap=True))
    sets = vlad.DescriptorSets.load(queries)
    opened.search(sets.between(0, 1), k)  # compiled loops, quantizer, first pages
    rows = {}
    for words in assignments:
        _, wall, cpu = timed(
            lambda words=words: opened.search(sets, k, multiple_assignment=words)
        )
        rows[str(words)] = {
            "ms_per_query": 1000 * wall / len(sets),
            "cpu_ms_per_query": 1000 * cpu / len(sets),
        }
    return {"open_s": open_s, "n_queries": len(sets), "assignments": rows}


#: The steps run as child processes, each measured alone.
_STEPS = {"base": build_base, "database": build_database, "search": measure_search}


def _in_child(step: str, work: Path, **arguments) -> dict:
    """``_STEPS[step](**arguments)`` in a child process: its result, and its
    peak resident set size (MiB) as ``peak_rss_mib``."""
    report = work / f"{step}.json"
    call = json.dumps({"step": step, "arguments": arguments, "report": str(report)})
    peak_mib, _ = peak_rss(["-m", "benchmarks.asmk_scale", "--child", call], vlad=False)
    return {**json.loads(report.read_text()), "peak_rss_mib": peak_mib}


def scale_rows(
    descriptors: str | None,
    codebook: str,
    sizes: list[int],
    work: Path,
    *,
    n_queries: int = 20,
    assignments: tuple[int, ...] = (5,),
    quantizer: str = "Flat",
    quantizer_parameters: str | None = None,
) -> dict:
    """The base index's build, then one row per database size."""
    base_folder, queries = work / "base", work / "queries.npz"
    base = _in_child(
        "base",
        work,
        descriptors=descriptors,
        codebook=codebook,
        folder=str(base_folder),
        queries=str(queries),
        n_queries=n_queries,
        quantizer=quantizer,
        quantizer_parameters=quantizer_parameters,
    )
    result = {
        "n_words": vlad.Codebook.load(codebook).n_clusters,
        "quantizer": quantizer,
        "quantizer_parameters": quantizer_parameters,
        "base": base,
        "rows": [],
    }
    for size in [base["n_images"], *sizes]:
        row = {"n_images": base["n_images"], "n_entries": base["n_entries"]}
        folder = base_folder
        if size != base["n_images"]:
            folder = work / f"index-{size}"
            built = _in_child(
                "database",
                work,
                base_folder=str(base_folder),
                n_images=size,
                folder=str(folder),
                seed=size,
            )
            row = {**built, "build_peak_rss_mib": built.pop("peak_rss_mib")}
        searched = _in_child(
            "search",
            work,
            folder=str(folder),
            queries=str(queries),
            assignments=list(assignments),
        )
        row.update(searched, search_peak_rss_mib=searched.pop("peak_rss_mib"))
        if folder != base_folder:
            shutil.rmtree(folder)
        result["rows"].append(row)
        print(_row_line(result, row), flush=True)
    return result


def _row_line(result: dict, row: dict) -> str:
    cells = [f"{result['n_words']:,} words", f"{row['n_images']:,} images"]
    for words, timing in row["assignments"].items():
        cells.append(
            f"MA {words}: {timing['cpu_ms_per_query']:,.0f} CPU ms "
            f"({timing['ms_per_query']:,.0f} ms)"
        )
    cells.append(f"open {1000 * row['open_s']:.0f} ms")
    cells.append(f"peak {row['search_peak_rss_mib']:,.0f} MiB")
    if "bytes_per_image" in row:
        cells.append(f"{row['bytes_per_image']:,.0f} B/image")
        cells.append(f"merge {row['merge_s']:.1f} s")
        cells.append(f"build peak {row['build_peak_rss_mib']:,.0f} MiB")
    return " | ".join(cells)


def _bundled_descriptors() -> vlad.DescriptorSets:
    """The photos of data/, described with vlad's defaults."""
    sets, _ = vlad.extract_images(DATA, n_jobs=1)
    return sets


def main(argv: list[str] | None = None) -> None:
    """Run the benchmark (or, with ``--child``, one of its steps)."""
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--child":
        call = json.loads(argv[1])
        measured = _STEPS[call["step"]](**call["arguments"])
        Path(call["report"]).write_text(json.dumps(measured))
        return
    parser = argparse.ArgumentParser(prog="python -m benchmarks.asmk_scale")
    parser.add_argument("--descriptors", help="descriptors file of vlad extract")
    parser.add_argument("--codebook", required=True, help="codebook of vlad fit")
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--multiple-assignment", type=int, nargs="+", default=[5])
    parser.add_argument("--quantizer", default="Flat")
    parser.add_argument("--quantizer-parameters")
    parser.add_argument(
        "--work", help="folder for the indexes (default: a temporary one)"
    )
    parser.add_argument("--json", help="write the measurements here")
    arguments = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(dir=arguments.work) as work:
        result = scale_rows(
            arguments.descriptors and str(Path(arguments.descriptors).resolve()),
            str(Path(arguments.codebook).resolve()),
            arguments.sizes,
            Path(work),
            n_queries=arguments.queries,
            assignments=tuple(arguments.multiple_assignment),
            quantizer=arguments.quantizer,
            quantizer_parameters=arguments.quantizer_parameters,
        )
    result["cores"] = os.cpu_count()
    if arguments.json:
        Path(arguments.json).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
