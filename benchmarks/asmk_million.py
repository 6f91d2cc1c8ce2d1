"""ASMK* with synthetic distractors up to a million images: ranking quality
(mAP, recall@1) and cost (CPU and wall-clock time per query, open time,
index bytes, build time, peak and anonymous memory).

Usage, from the repository root::

    OMP_WAIT_POLICY=PASSIVE python -m benchmarks.asmk_million \\
        --descriptors desc.npz --codebook cb65536.npz \\
        --ground-truth realviews/ground_truth.json \\
        --quantizer IVF1024,Flat --quantizer-parameters nprobe=32 \\
        --sizes 10000 100000 1000000 --multiple-assignment 5 3 1 \\
        --stop-fractions 0 0.3 --work /data/scratch --json million.json

The *base* index is the ASMK* index (binary, the library's defaults) of the
real images of ``--descriptors``, whose ground truth ``--ground-truth``
(``{"query": {"relevant": [...], "junk": [...]}}``, as the real-view
benchmark's) names the queries: each query's own descriptors are searched
(``k = 100``) and the rankings scored by :func:`vlad.evaluation.evaluate`,
junk left out, as the real-view benchmark scores them.

A database of N images is the base index and N - n_base synthetic
*distractors*. A distractor is made of entries (word, sign-bit code) drawn
at random from the pool of every entry of the base index, word and code
together, until it holds as many entries, on distinct words (one entry per
word and image, as the index requires), as a real image drawn at random: the
posting lists grow with real codes, in the proportions of the real images'
words. Whether such distractors are easier or harder to tell apart from
the relevant images than real photographs of other places would be is not
known: their codes are real, but no distractor is a consistent view of
anything.

The distractors are made in chunks of ``--chunk`` images, each an
:class:`vlad.asmk.ASMKSegment` numbered where the previous one stops,
saved as an index folder of its own (its first segment holds no entries,
only the numbers of the images before it), so that building holds one chunk
in memory whatever N. The database is then the base index's segment and
every chunk's, opened memory-mapped and stacked by
:meth:`vlad.asmk.ASMKIndex.from_segments` without a copy. Where the disk
holds the index twice over (and ``--no-folder`` is not given), the stacked
index is also saved as one folder (the chunks deleted) and merged in place
(:func:`vlad.asmk.merge_asmk_index`), and that folder is searched; else
the stacked segments are.

Each step (base build, distractors, folder, search) runs in a child process
of its own, whose peak resident set size (``VmHWM``) and peak anonymous
memory (``RssAnon``, sampled every 20 ms by the parent: the memory other
than mapped files) are reported. The search opens the index memory-mapped
(the bytes it read, ``rchar`` of ``/proc/self/io``, say that it reads none
of the entries), runs one warm-up query, then searches every query with
each ``--stop-fractions`` stop list in turn (``stop_fraction`` of
:meth:`vlad.asmk.ASMKIndex.search`), and with each ``--multiple-assignment``
for each. Times are CPU seconds of all
threads (of which the kernel's: page faults, reading the mapped index from
disk when it does not fit in memory) and wall-clock seconds; on a shared
machine the CPU time is the steadier.

At each size of ``--asmk-package-sizes`` (sizes of ``--sizes``), the
``asmk`` package (``pip install asmk``) is measured on the same database, as
the peer where it fits in memory (:mod:`benchmarks.asmk_package`): its
inverted file filled with the database's entries (build CPU seconds, peak
memory), each query searched with it end to end with the first
``--multiple-assignment`` (mAP, recall, CPU time per query), and its
rankings compared with vlad's, with the database's quantizer and with the
exact one the package uses (the row's ``asmk_package``).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

import vlad
from benchmarks.asmk_package import (
    package_codebook,
    package_inverted_file,
    package_search,
    ranking_agreement,
)
from benchmarks.asmk_scale import base_index
from benchmarks.measuring import timed
from vlad.asmk import (
    ASMKIndex,
    ASMKSegment,
    load_asmk_index,
    merge_asmk_index,
)
from vlad.evaluation import evaluate, load_ground_truth

__all__ = [
    "build_base",
    "build_distractors",
    "distractor_entries",
    "distractor_segment",
    "entry_pool",
    "main",
    "measure_package",
    "measure_search",
    "million_rows",
    "open_database",
    "package_agreement",
    "stacked_index",
]

#: Distractors made, and saved, at a time.
CHUNK = 50_000
#: Distractors whose draws are deduplicated at a time (bounds temporaries).
DRAW_BATCH = 2048
#: The database's disk usage times this must be free to save it as one folder
#: (the folder written beside the chunks, then merged beside itself).
FOLDER_MARGIN = 2.2


def entry_pool(
    segment: ASMKSegment, pooled: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The word (int32) and code of every entry of ``segment`` whose image
    ``pooled`` selects (a boolean mask over its images; all by default): the
    pool distractors are drawn from."""
    words = np.repeat(np.arange(segment.n_words, dtype=np.int32), segment.word_counts())
    codes = np.asarray(segment.codes)
    if pooled is None:
        return words, codes
    kept = np.asarray(pooled, bool)[
        np.asarray(segment.entry_images) - segment.first_image
    ]
    return words[kept], codes[kept]


def distractor_entries(
    pool_words: np.ndarray,
    counts: np.ndarray,
    n_words: int,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:
    """Entries drawn from the pool for images holding ``counts`` entries each.

    Each image's entries are drawn uniformly from the pool, with
    replacement, keeping the first of each word, until it holds
    ``counts[i]`` distinct words. Returns each entry's image (int32, from 0,
    increasing) and its row of the pool (int64).
    """
    counts = np.asarray(counts, np.int64)
    distinct = np.unique(pool_words).size
    if counts.size and counts.max() > distinct:
        raise ValueError(f"an image of {counts.max()} words from {distinct}")
    images, picks = [], []
    pending, factor = np.arange(counts.size), 1.25
    while pending.size:
        wanted = counts[pending]
        draws = np.ceil(wanted * factor).astype(np.int64) + 16
        image = np.repeat(np.arange(pending.size), draws)
        pick = rng.integers(0, pool_words.size, image.size)
        key = image * n_words + pool_words[pick]
        first = np.sort(np.unique(key, return_index=True)[1])
        image, pick = image[first], pick[first]
        starts = np.searchsorted(image, np.arange(pending.size))
        rank = np.arange(image.size) - starts[image]
        kept = rank < wanted[image]
        full = np.bincount(image[kept], minlength=pending.size) == wanted
        kept &= full[image]
        images.append(pending[image[kept]])
        picks.append(pick[kept])
        pending, factor = pending[~full], 2 * factor
    image, pick = np.concatenate(images), np.concatenate(picks)
    order = np.argsort(image, kind="stable")
    return image[order].astype(np.int32), pick[order]


def distractor_segment(
    pool_words: np.ndarray,
    pool_codes: np.ndarray,
    counts: np.ndarray,
    first_image: int,
    n_words: int,
    rng: np.random.Generator,
) -> ASMKSegment:
    """A segment of ``len(counts)`` distractors numbered from
    ``first_image``, image ``i`` holding ``counts[i]`` entries drawn from the
    pool (see :func:`distractor_entries`)."""
    images, picks = [], []
    for start in range(0, len(counts), DRAW_BATCH):
        image, pick = distractor_entries(
            pool_words, counts[start : start + DRAW_BATCH], n_words, rng
        )
        images.append(image + np.int32(first_image + start))
        picks.append(pick.astype(np.int32))
    image, pick = np.concatenate(images), np.concatenate(picks)
    del images, picks
    words = pool_words[pick]
    order = np.argsort(words, kind="stable")  # images stay increasing per word
    offsets = np.zeros(n_words + 1, np.int64)
    np.cumsum(np.bincount(words, minlength=n_words), out=offsets[1:])
    del words
    entry_images = image[order]
    del image
    pick = pick[order]
    del order
    return ASMKSegment(
        first_image,
        len(counts),
        offsets,
        entry_images,
        pool_codes[pick],
        np.asarray(counts, np.int32),
    )


def _settings(index: ASMKIndex) -> dict:
    """The kernel settings of ``index``, as :meth:`ASMKIndex.from_segments`
    takes them."""
    return {
        "binary": index.binary,
        "alpha": index.alpha,
        "threshold": index.threshold,
        "idf": index.idf,
        "source": index.source,
        "quantizer": index.quantizer,
        "quantizer_parameters": index.quantizer_parameters,
    }


def build_base(
    descriptors: str,
    codebook: str,
    ground_truth: str,
    folder: str,
    queries: str,
    quantizer: str,
    quantizer_parameters: str | None,
) -> dict:
    """The base index of the real images, saved to ``folder``, and the
    descriptors of the ground truth's queries saved to ``queries``."""
    sets = vlad.DescriptorSets.load(descriptors)
    words = vlad.Codebook.load(codebook)
    _, built = base_index(sets, words, folder, quantizer, quantizer_parameters)
    position = {name: row for row, name in enumerate(sets.names)}
    names = [name for name in load_ground_truth(ground_truth) if name in position]
    offsets = sets.offsets
    vlad.DescriptorSets.from_list(
        [
            sets.descriptors[offsets[position[name]] : offsets[position[name] + 1]]
            for name in names
        ],
        names,
        metadata=sets.metadata,
    ).save(queries)
    return {**built, "n_queries": len(names), "folder_bytes": _folder_bytes(folder)}


def _distractor_name(number: int) -> str:
    return f"distractor-{number:07d}"


def build_distractors(
    base_folder: str,
    n_images: int,
    folder: str,
    chunk: int,
    seed: int,
    excluded: list[str] = (),
) -> dict:
    """Distractors numbered from the base index's last image to
    ``n_images``, one index folder per chunk of ``chunk`` in ``folder``,
    drawn from the entries of the base's images not named by ``excluded``
    (and as many entries as one of them holds)."""
    base = load_asmk_index(base_folder, mmap=True)
    (segment,) = base.segments
    pooled = ~np.isin(np.array(base.names, dtype=object), list(excluded))
    pool_words, pool_codes = entry_pool(segment, pooled)
    real_counts = np.asarray(segment.image_entries)[pooled]
    rng = np.random.default_rng(seed)
    Path(folder).mkdir()
    start = time.perf_counter(), time.process_time()
    made = saved = 0.0
    n_entries = 0
    for number, first in enumerate(range(base.n_images, n_images, chunk)):
        count = min(chunk, n_images - first)
        distractors, _, cpu = timed(
            lambda first=first, count=count: distractor_segment(
                pool_words,
                pool_codes,
                rng.choice(real_counts, count),
                first,
                base.n_words,
                rng,
            )
        )
        made += cpu
        n_entries += distractors.n_entries
        before = ASMKSegment(
            0,
            first,
            np.zeros(base.n_words + 1, np.int64),
            np.zeros(0, np.int32),
            pool_codes[:0],
            np.zeros(first, np.int32),
        )
        names = [""] * first + [
            _distractor_name(i) for i in range(first, first + count)
        ]
        part = ASMKIndex.from_segments(
            base.codebook, names, [before, distractors], **_settings(base)
        )
        _, _, cpu = timed(
            lambda part=part, number=number: part.save(
                Path(folder) / f"chunk-{number:05d}"
            )
        )
        saved += cpu
        del part, distractors
    return {
        "n_images": n_images,
        "n_distractors": n_images - base.n_images,
        "n_pool_images": int(pooled.sum()),
        "n_pool_entries": int(pool_words.size),
        "n_entries": base.n_entries + n_entries,
        "distractor_entries_per_image": n_entries / max(1, n_images - base.n_images),
        "build_s": time.perf_counter() - start[0],
        "build_cpu_s": time.process_time() - start[1],
        "make_cpu_s": made,
        "save_cpu_s": saved,
        "chunks_bytes": _folder_bytes(folder),
    }


def stacked_index(base_folder: str, chunks_folder: str) -> ASMKIndex:
    """The base index and every chunk of ``chunks_folder`` (as
    :func:`build_distractors` wrote them), memory-mapped and stacked."""
    base = load_asmk_index(base_folder, mmap=True)
    segments, names = list(base.segments), list(base.names)
    for chunk in sorted(Path(chunks_folder).iterdir()):
        part = load_asmk_index(chunk, mmap=True)
        segment = part.segments[-1]
        segments.append(segment)
        names.extend(part.names[segment.first_image :])
    return ASMKIndex.from_segments(base.codebook, names, segments, **_settings(base))


def save_folder(base_folder: str, chunks_folder: str, folder: str) -> dict:
    """Save the stacked database as one folder, delete the chunks and merge
    the folder's segments in place; seconds of each step."""
    index = stacked_index(base_folder, chunks_folder)
    n_segments = index.n_segments
    _, save_s, save_cpu = timed(lambda index=index: index.save(folder))
    del index
    shutil.rmtree(chunks_folder)
    merged, merge_s, merge_cpu = timed(lambda: merge_asmk_index(folder))
    size = _folder_bytes(folder)
    return {
        "n_segments_saved": n_segments,
        "save_s": save_s,
        "save_cpu_s": save_cpu,
        "merge_s": merge_s,
        "merge_cpu_s": merge_cpu,
        "folder_bytes": size,
        "bytes_per_image": size / merged.n_images,
    }


def open_database(
    folder: str | None, base_folder: str, chunks_folder: str | None
) -> ASMKIndex:
    """The database memory-mapped: ``folder``, else the base index and the
    chunks of ``chunks_folder`` stacked, else the base index alone."""
    if folder is not None:
        return load_asmk_index(folder, mmap=True)
    if chunks_folder is not None:
        return stacked_index(base_folder, chunks_folder)
    return load_asmk_index(base_folder, mmap=True)


def _read_bytes() -> int:
    """Bytes this process has read through system calls (``rchar``)."""
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    raise RuntimeError("no rchar in /proc/self/io")


def measure_search(
    folder: str | None,
    base_folder: str,
    chunks_folder: str | None,
    queries: str,
    ground_truth: str,
    assignments: list[int],
    stop_fractions: list[float] = (0.0,),
    k: int = 100,
) -> dict:
    """Open the database memory-mapped (``folder``, or the base index and
    the chunks of ``chunks_folder`` stacked) and search the queries of
    ``queries`` with each stop list and each number of words per query
    descriptor (stop lists in turn, the numbers of words in turn for each);
    mAP, recall and times of each search."""
    read = _read_bytes()
    opened, open_s, open_cpu = timed(
        lambda: open_database(folder, base_folder, chunks_folder)
    )
    read = _read_bytes() - read
    sets = vlad.DescriptorSets.load(queries)
    truth = load_ground_truth(ground_truth)
    opened.search(sets.between(0, 1), k)  # compiled loops, quantizer, first pages
    rows = []
    for stop, words in itertools.product(stop_fractions, assignments):
        system = os.times().system
        results, wall, cpu = timed(
            lambda words=words, stop=stop: opened.search(
                sets, k, multiple_assignment=words, stop_fraction=stop
            )
        )
        system = os.times().system - system
        mean = evaluate(results.rankings(), truth, ks=(1, 5, 10)).mean
        rows.append(
            {
                "multiple_assignment": words,
                "stop_fraction": stop,
                "stop_words": results.record["stop_words"],
                "mAP": mean["mAP"],
                "recall@1": mean["recall@1"],
                "recall@5": mean["recall@5"],
                "ms_per_query": 1000 * wall / len(sets),
                "cpu_ms_per_query": 1000 * cpu / len(sets),
                "system_ms_per_query": 1000 * system / len(sets),
            }
        )
        print(f"  {opened.n_images:,} images: {rows[-1]}", file=sys.stderr, flush=True)
    entry_bytes = sum(
        segment.entry_images.nbytes + segment.codes.nbytes
        for segment in opened.segments
    )
    return {
        "n_images": opened.n_images,
        "n_segments": opened.n_segments,
        "open_s": open_s,
        "open_cpu_s": open_cpu,
        "open_read_bytes": read,
        "entry_bytes": entry_bytes,
        "n_queries": len(sets),
        "searches": rows,
    }


def measure_package(
    folder: str | None,
    base_folder: str,
    chunks_folder: str | None,
    queries: str,
    ground_truth: str,
    multiple_assignment: int,
    rankings: str,
    k: int = 100,
) -> dict:
    """The ``asmk`` package's inverted file of the entries of the database
    (opened as :func:`measure_search` opens it), built and searched with
    each query of ``queries`` end to end (:mod:`benchmarks.asmk_package`);
    mAP, recall and times, its rankings and scores written to ``rankings``
    (JSON)."""
    opened = open_database(folder, base_folder, chunks_folder)
    sets = vlad.DescriptorSets.load(queries)
    truth = load_ground_truth(ground_truth)
    inverted_file, build_s, build_cpu = timed(lambda: package_inverted_file(opened))
    codebook, index_s, index_cpu = timed(lambda: package_codebook(opened.codebook))

    def search(query_sets):
        return package_search(
            codebook,
            inverted_file,
            query_sets,
            k=k,
            multiple_assignment=multiple_assignment,
            alpha=opened.alpha,
            threshold=opened.threshold,
        )

    search(sets.between(0, 1))  # faiss's threads, the first pages
    (rows, scores), wall, cpu = timed(lambda: search(sets))
    names = [[opened.names[row] for row in ranked] for ranked in rows]
    mean = evaluate(dict(zip(sets.names, names, strict=True)), truth, ks=(1, 5, 10))
    mean = mean.mean
    Path(rankings).write_text(
        json.dumps(
            [
                {"query": query, "names": ranked, "scores": list(map(float, row))}
                for query, ranked, row in zip(sets.names, names, scores, strict=True)
            ]
        )
    )
    held = [
        array
        for lists in (inverted_file.ivf_vecs, inverted_file.ivf_image_ids)
        for array in lists
        if array is not None
    ]
    return {
        "n_images": opened.n_images,
        "n_entries": int(inverted_file.counts.sum()),
        "multiple_assignment": multiple_assignment,
        "build_s": build_s,
        "build_cpu_s": build_cpu,
        "build_us_per_entry": 1e6 * build_cpu / max(1, opened.n_entries),
        "codebook_cpu_s": index_cpu,
        "inverted_file_bytes": sum(array.nbytes for array in held),
        "mAP": mean["mAP"],
        "recall@1": mean["recall@1"],
        "recall@5": mean["recall@5"],
        "ms_per_query": 1000 * wall / len(sets),
        "cpu_ms_per_query": 1000 * cpu / len(sets),
        "n_queries": len(sets),
    }


#: Queries vlad searches at a time when its rankings are compared with the
#: package's (bounds the comparison's memory).
AGREEMENT_BATCH = 16


def package_agreement(
    folder: str | None,
    base_folder: str,
    chunks_folder: str | None,
    queries: str,
    rankings: str,
    multiple_assignment: int,
    k: int = 100,
    top: int = 10,
) -> dict:
    """vlad's rankings of the queries against the ``asmk`` package's
    (``rankings``, of :func:`measure_package`), with the database's own
    quantizer and, where that is not exact, with the exact one the package
    uses (:func:`benchmarks.asmk_package.ranking_agreement` of the first
    ``top`` images), one comparison per quantizer (``agreement``)."""
    opened = open_database(folder, base_folder, chunks_folder)
    sets = vlad.DescriptorSets.load(queries)
    theirs = [
        (query["names"], query["scores"])
        for query in json.loads(Path(rankings).read_text())
    ]
    indexes = [opened]
    if opened.quantizer != "Flat":
        exact = {**_settings(opened), "quantizer": "Flat", "quantizer_parameters": None}
        indexes.append(
            ASMKIndex.from_segments(
                opened.codebook, opened.names, opened.segments, **exact
            )
        )
    compared = []
    for index in indexes:
        ours = []
        for start in range(0, len(sets), AGREEMENT_BATCH):
            found = index.search(
                sets.between(start, min(start + AGREEMENT_BATCH, len(sets))),
                k,
                multiple_assignment=multiple_assignment,
            )
            ours += [(result.names, result.scores) for result in found]
        compared.append(
            {
                "quantizer": index.quantizer,
                "quantizer_parameters": index.quantizer_parameters,
                **ranking_agreement(ours, theirs, top),
            }
        )
    return {"agreement": compared}


#: The steps run as child processes, each measured alone.
_STEPS = {
    "base": build_base,
    "distractors": build_distractors,
    "folder": save_folder,
    "search": measure_search,
    "package": measure_package,
    "agreement": package_agreement,
}


def _status(pid: int | str) -> dict:
    """The memory lines (kB) of ``/proc/PID/status``."""
    fields = {}
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return fields
    for line in text.splitlines():
        name, _, value = line.partition(":")
        if name in ("VmHWM", "VmRSS", "RssAnon", "RssFile"):
            fields[name] = int(value.split()[0])
    return fields


def _in_child(step: str, work: Path, **arguments) -> dict:
    """``_STEPS[step](**arguments)`` in a child process: its result, its peak
    resident set size (``peak_rss_mib``) and its peak anonymous memory
    (``peak_anon_mib``, sampled every 20 ms)."""
    report = work / f"{step}.json"
    call = json.dumps({"step": step, "arguments": arguments, "report": str(report)})
    child = subprocess.Popen(
        [sys.executable, "-m", "benchmarks.asmk_million", "--child", call]
    )
    anon = 0
    stop = threading.Event()

    def sample():
        nonlocal anon
        while not stop.wait(0.02):
            anon = max(anon, _status(child.pid).get("RssAnon", 0))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    code = child.wait()
    stop.set()
    sampler.join()
    if code:
        raise RuntimeError(f"step {step} exited {code}")
    measured = json.loads(report.read_text())
    report.unlink()
    anon = max(anon, measured.pop("anon_kib"))
    return {**measured, "peak_anon_mib": anon / 1024}


def _folder_bytes(folder: str | os.PathLike) -> int:
    return sum(
        path.stat().st_size for path in Path(folder).rglob("*") if path.is_file()
    )


def million_rows(
    descriptors: str,
    codebook: str,
    ground_truth: str,
    sizes: list[int],
    work: Path,
    *,
    assignments: tuple[int, ...] = (5, 3, 1),
    stop_fractions: tuple[float, ...] = (0.0,),
    quantizer: str = "Flat",
    quantizer_parameters: str | None = None,
    chunk: int = CHUNK,
    folder: bool = True,
    package_sizes: tuple[int, ...] = (),
    report=None,
) -> dict:
    """The base index's build and search, then one row per database size;
    ``report(result)`` is called after each row. At each of
    ``package_sizes`` (sizes of ``sizes``), the ``asmk`` package is measured
    on the same database with the first of ``assignments``
    (:func:`measure_package`) and its rankings compared with vlad's
    (:func:`package_agreement`): the row's ``asmk_package``."""
    unknown = sorted(set(package_sizes) - set(sizes))
    if unknown:
        raise ValueError(f"package sizes {unknown} are not among the sizes {sizes}")
    base_folder, queries = work / "base", work / "queries.npz"
    base = _in_child(
        "base",
        work,
        descriptors=descriptors,
        codebook=codebook,
        ground_truth=ground_truth,
        folder=str(base_folder),
        queries=str(queries),
        quantizer=quantizer,
        quantizer_parameters=quantizer_parameters,
    )
    result = {
        "n_words": vlad.Codebook.load(codebook).n_clusters,
        "quantizer": quantizer,
        "quantizer_parameters": quantizer_parameters,
        "chunk": chunk,
        "base": base,
        "rows": [],
    }
    search = {
        "base_folder": str(base_folder),
        "queries": str(queries),
        "ground_truth": ground_truth,
        "assignments": list(assignments),
        "stop_fractions": list(stop_fractions),
    }
    named = sorted(
        {
            name
            for query, expected in load_ground_truth(ground_truth).items()
            for name in (query, *expected.relevant, *expected.junk)
        }
    )
    for size in [base["n_images"], *sizes]:
        row: dict = {"n_images": base["n_images"], "n_entries": base["n_entries"]}
        where = {"folder": None, "chunks_folder": None}
        if size > base["n_images"]:
            chunks = work / f"chunks-{size}"
            built = _in_child(
                "distractors",
                work,
                base_folder=str(base_folder),
                n_images=size,
                folder=str(chunks),
                chunk=chunk,
                seed=size,
                excluded=named,
            )
            row = {
                **built,
                "build_peak_rss_mib": built.pop("peak_rss_mib"),
                "build_peak_anon_mib": built.pop("peak_anon_mib"),
                "bytes_per_image": (built["chunks_bytes"] + base["folder_bytes"])
                / size,
            }
            free = shutil.disk_usage(work).free
            if folder and free > FOLDER_MARGIN * built["chunks_bytes"] + (4 << 30):
                where["folder"] = str(work / f"index-{size}")
                saved = _in_child(
                    "folder",
                    work,
                    base_folder=str(base_folder),
                    chunks_folder=str(chunks),
                    folder=where["folder"],
                )
                row.update(
                    saved,
                    folder_peak_rss_mib=saved.pop("peak_rss_mib"),
                    folder_peak_anon_mib=saved.pop("peak_anon_mib"),
                )
            else:
                where["chunks_folder"] = str(chunks)
        searched = _in_child("search", work, **where, **search)
        row.update(
            searched,
            search_peak_rss_mib=searched.pop("peak_rss_mib"),
            search_peak_anon_mib=searched.pop("peak_anon_mib"),
            searched="folder" if where["folder"] else (
                "stacked chunks" if where["chunks_folder"] else "base folder"
            ),
        )  # fmt: skip
        if size in package_sizes:
            row["asmk_package"] = _package_row(
                work, where, search, assignments[0], size
            )
        for place in where.values():
            if place is not None:
                shutil.rmtree(place)
        result["rows"].append(row)
        print(_row_line(result, row), flush=True)
        if report is not None:
            report(result)
    return result


def _package_row(
    work: Path, where: dict, search: dict, multiple_assignment: int, size: int
) -> dict:
    """The ``asmk`` package's measurements on the database at ``where``, and
    the agreement of its rankings with vlad's."""
    rankings = work / f"package-rankings-{size}.json"
    opened = {
        **where,
        "base_folder": search["base_folder"],
        "queries": search["queries"],
    }
    measured = _in_child(
        "package",
        work,
        **opened,
        ground_truth=search["ground_truth"],
        multiple_assignment=multiple_assignment,
        rankings=str(rankings),
    )
    compared = _in_child(
        "agreement",
        work,
        **opened,
        rankings=str(rankings),
        multiple_assignment=multiple_assignment,
    )
    rankings.unlink()
    print(_package_line(measured, compared["agreement"]), flush=True)
    return {**measured, "agreement": compared["agreement"]}


def _package_line(measured: dict, agreement: list[dict]) -> str:
    cells = [
        f"asmk package, {measured['n_images']:,} images, "
        f"MA {measured['multiple_assignment']}: mAP {measured['mAP']:.3f} "
        f"R@1 {measured['recall@1']:.3f} {measured['cpu_ms_per_query']:,.0f} CPU ms "
        f"({measured['ms_per_query']:,.0f} ms)",
        f"build {measured['build_cpu_s']:.1f} CPU s "
        f"({measured['build_us_per_entry']:.2f} us an entry)",
        f"peak {measured['peak_rss_mib']:,.0f} MiB, "
        f"anon {measured['peak_anon_mib']:,.0f} MiB",
    ]
    for compared in agreement:
        cells.append(
            f"vlad ({compared['quantizer']}) same top {compared['top']}: "
            f"{compared['same_order']}/{compared['n_queries']} "
            f"(as sets {compared['same_images']}), "
            f"scores within {compared['max_score_difference']:.1e}"
        )
    return " | ".join(cells)


def _row_line(result: dict, row: dict) -> str:
    cells = [f"{result['n_words']:,} words", f"{row['n_images']:,} images"]
    for timing in row["searches"]:
        cells.append(
            f"MA {timing['multiple_assignment']} stop {timing['stop_fraction']:g}: "
            f"mAP {timing['mAP']:.3f} R@1 {timing['recall@1']:.3f} "
            f"{timing['cpu_ms_per_query']:,.0f} CPU ms "
            f"({timing['ms_per_query']:,.0f} ms)"
        )
    cells.append(
        f"open {1000 * row['open_s']:.0f} ms, read {row['open_read_bytes']:,} B"
    )
    cells.append(f"search peak {row['search_peak_rss_mib']:,.0f} MiB")
    cells.append(f"anon {row['search_peak_anon_mib']:,.0f} MiB")
    if "bytes_per_image" in row:
        cells.append(f"{row['bytes_per_image']:,.0f} B/image")
        cells.append(f"build {row['build_cpu_s']:.0f} CPU s")
        cells.append(f"build peak {row['build_peak_rss_mib']:,.0f} MiB")
    return " | ".join(cells)


def _child(call: dict) -> None:
    measured = _STEPS[call["step"]](**call["arguments"])
    status = _status("self")
    measured["peak_rss_mib"] = status.get("VmHWM", 0) / 1024
    measured["anon_kib"] = status.get("RssAnon", 0)
    Path(call["report"]).write_text(json.dumps(measured))


def main(argv: list[str] | None = None) -> None:
    """Run the benchmark (or, with ``--child``, one of its steps)."""
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--child":
        _child(json.loads(argv[1]))
        return
    parser = argparse.ArgumentParser(prog="python -m benchmarks.asmk_million")
    parser.add_argument("--descriptors", required=True, help="of vlad extract")
    parser.add_argument("--codebook", required=True, help="codebook of vlad fit")
    parser.add_argument("--ground-truth", required=True, help="its queries' truth")
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--multiple-assignment", type=int, nargs="+", default=[5])
    parser.add_argument(
        "--stop-fractions",
        type=float,
        nargs="+",
        default=[0.0],
        help="stop lists searched with (each with every --multiple-assignment)",
    )
    parser.add_argument("--quantizer", default="Flat")
    parser.add_argument("--quantizer-parameters")
    parser.add_argument("--chunk", type=int, default=CHUNK)
    parser.add_argument(
        "--no-folder",
        action="store_true",
        help="search the stacked chunks, never one saved folder",
    )
    parser.add_argument(
        "--asmk-package-sizes",
        type=int,
        nargs="+",
        default=[],
        help="sizes (of --sizes) at which the asmk package is measured too, "
        "with the first --multiple-assignment (pip install asmk)",
    )
    parser.add_argument(
        "--work", help="folder for the indexes (default: a temporary one)"
    )
    parser.add_argument("--json", help="write the measurements here")
    arguments = parser.parse_args(argv)
    unknown = sorted(set(arguments.asmk_package_sizes) - set(arguments.sizes))
    if unknown:
        parser.error(f"--asmk-package-sizes {unknown} are not among --sizes")
    if arguments.asmk_package_sizes:
        try:
            import asmk.kernel  # noqa: F401 (its Cython extension too)
        except ImportError as error:
            parser.error(
                f"--asmk-package-sizes needs the asmk package (pip install asmk): "
                f"{error}"
            )

    def report(result):
        if arguments.json:
            Path(arguments.json).write_text(json.dumps(result, indent=2) + "\n")

    with tempfile.TemporaryDirectory(dir=arguments.work) as work:
        result = million_rows(
            str(Path(arguments.descriptors).resolve()),
            str(Path(arguments.codebook).resolve()),
            str(Path(arguments.ground_truth).resolve()),
            arguments.sizes,
            Path(work),
            assignments=tuple(arguments.multiple_assignment),
            stop_fractions=tuple(arguments.stop_fractions),
            quantizer=arguments.quantizer,
            quantizer_parameters=arguments.quantizer_parameters,
            chunk=arguments.chunk,
            folder=not arguments.no_folder,
            package_sizes=tuple(arguments.asmk_package_sizes),
            report=report,
        )
    result["cores"] = os.cpu_count()
    report(result)


if __name__ == "__main__":
    main()
