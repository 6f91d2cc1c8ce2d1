"""Run vlad's search variants on the retrieval benchmark and tabulate them.

::

    python -m benchmarks.retrieval.run DATASET [--work DIR] [--clusters 256]
        [--power 1.0] [--pca 64] [--depth 20 --depth 100] [--min-keypoints 20]
        [--asmk-words 4096] [--asmk-multiple-assignment 5]
        [--asmk-stop-fraction 0.3] [--json PATH]

``DATASET`` is a folder built by :mod:`benchmarks.retrieval.build`.
Descriptors are extracted once into ``--work`` (default ``DATASET/work``) and
reused; the codebook is fitted on the database's descriptors only. Each
variant indexes the database vectors, searches every query (the top 100),
optionally re-ranks, and is evaluated with :func:`vlad.evaluation.evaluate`:
mAP and Recall@k overall, per tier and per transform. Product-quantised
indexes (faiss ``PQ{m}x{bits}``) give mAP against bytes per image. The ASMK
variants index the database's descriptors with a vocabulary of
``--asmk-words`` words fitted on them (seed 0; ``0`` leaves them out), as
``vlad index --method asmk`` does, and search the queries' descriptors, each
assigned to its ``--asmk-multiple-assignment`` nearest words, the
commonest words of ``--asmk-stop-fraction`` left out (none by default).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import vlad
from benchmarks.files import atomic_write
from benchmarks.options import descriptor_parameter, spec_argument
from benchmarks.report import machine_info
from vlad.asmk import build_asmk_index
from vlad.core import DEFAULT_N_CLUSTERS, POWER
from vlad.evaluation import evaluate, load_ground_truth
from vlad.search import QueryExpansion, build_index
from vlad.verification import rerank_spatially

__all__ = [
    "Prepared",
    "dataset_counts",
    "main",
    "prepare",
    "run_asmk_variants",
    "run_variants",
]

#: Results per query: deep enough for mAP on a database of a few hundred.
K = 100
#: faiss product quantisers: sub-vectors x bits each. Few bits, because
#: k-means on a small database cannot train 256 centroids per sub-vector.
PQ_FACTORIES = ("PQ8x4", "PQ16x4", "PQ32x4", "PQ16x6", "PQ32x6", "PQ64x6")
#: Words of the ASMK variants' vocabulary unless told otherwise.
ASMK_WORDS = 4096


@dataclass
class Prepared:
    """Descriptors, codebook and vectors of one benchmark folder."""

    database: vlad.DescriptorSets
    queries: vlad.DescriptorSets
    database_vectors: np.ndarray
    query_vectors: np.ndarray
    ground_truth: dict
    seconds: dict


def prepare(
    dataset: Path,
    work: Path,
    clusters: int,
    power: float,
    n_jobs: int | None,
    descriptor_options: dict | None = None,
) -> Prepared:
    """Extract (or reuse) descriptors, fit the codebook, encode both sides."""
    work.mkdir(parents=True, exist_ok=True)
    seconds = {}
    sets = {}
    for part in ("database", "queries"):
        cache = work / f"{part}.npz"
        start = time.perf_counter()
        if cache.exists():
            sets[part] = vlad.DescriptorSets.load(cache)
        else:
            sets[part], _ = vlad.extract_images(
                dataset / part, descriptor_options, n_jobs=n_jobs
            )
            sets[part].save(cache)
        seconds[f"descriptors of {part}"] = time.perf_counter() - start
    start = time.perf_counter()
    codebook = vlad.fit_codebook(sets["database"], clusters, seed=0)
    seconds["codebook"] = time.perf_counter() - start
    options = vlad.EncodingOptions(power=power)
    start = time.perf_counter()
    database_vectors = vlad.encode(sets["database"], codebook, options)
    query_vectors = vlad.encode(sets["queries"], codebook, options)
    seconds["encoding"] = time.perf_counter() - start
    return Prepared(
        sets["database"],
        sets["queries"],
        database_vectors,
        query_vectors,
        load_ground_truth(dataset / "ground_truth.json"),
        seconds,
    )


def _variant(
    prepared: Prepared,
    label: str,
    *,
    pca: int | None = None,
    factory: str | None = None,
    expansion: QueryExpansion | None = None,
    depth: int | None = None,
    n_jobs: int | None = None,
) -> dict:
    row = {
        "variant": label,
        "pca": pca,
        "factory": factory,
        "query_expansion": None if expansion is None else expansion.record(),
        "spatial_depth": depth,
    }
    try:
        index = build_index(
            prepared.database_vectors, prepared.database.names, pca=pca, factory=factory
        )
    except ValueError as error:  # too few database vectors for PCA or faiss
        return row | {"skipped": str(error)}
    measured = _searched(
        prepared,
        lambda: index.search(
            prepared.query_vectors,
            K,
            query_names=prepared.queries.names,
            expansion=expansion,
        ),
        depth,
        n_jobs,
    )
    return row | {"bytes_per_image": index.bytes_per_image} | measured


def _searched(prepared: Prepared, search, depth: int | None, n_jobs) -> dict:
    """Times of ``search()`` and of the spatial verification of its first
    ``depth`` results (none without), per query, and their evaluation."""
    start = time.perf_counter()
    results = search()
    search_seconds = time.perf_counter() - start
    spatial_seconds = 0.0
    if depth:
        start = time.perf_counter()
        results = rerank_spatially(
            results, prepared.queries, prepared.database, depth=depth, n_jobs=n_jobs
        )
        spatial_seconds = time.perf_counter() - start
    evaluation = evaluate(results.rankings(), prepared.ground_truth, ks=(1, 5, 10))
    n_queries = len(prepared.queries)
    return {
        "ms_per_query_search": 1000 * search_seconds / n_queries,
        "ms_per_query_spatial": 1000 * spatial_seconds / n_queries,
        "queries_without_results": results.n_empty,
        "evaluation": evaluation.to_dict(),
    }


def asmk_codebook(prepared: Prepared, words: int) -> vlad.Codebook:
    """A vocabulary of ``words`` words fitted on the database's descriptors
    (seed 0, with faiss where it is installed), its seconds recorded."""
    start = time.perf_counter()
    codebook = vlad.fit_codebook(prepared.database, words, seed=0)
    prepared.seconds[f"ASMK codebook K={words}"] = time.perf_counter() - start
    return codebook


def _asmk_variant(
    prepared: Prepared,
    codebook: vlad.Codebook,
    label: str,
    *,
    binary: bool,
    multiple_assignment: int | None,
    stop_fraction: float = 0.0,
    depth: int | None = None,
    n_jobs: int | None = None,
) -> dict:
    row = {
        "variant": label,
        "asmk_words": codebook.n_clusters,
        "binary": binary,
        "spatial_depth": depth,
    }
    start = time.perf_counter()
    index = build_asmk_index(prepared.database, codebook, binary=binary)
    build_seconds = time.perf_counter() - start
    if multiple_assignment is None:
        multiple_assignment = index.default_multiple_assignment
    row["multiple_assignment"] = multiple_assignment
    row["stop_fraction"] = stop_fraction
    measured = _searched(
        prepared,
        lambda: index.search(
            prepared.queries,
            K,
            query_names=prepared.queries.names,
            multiple_assignment=multiple_assignment,
            stop_fraction=stop_fraction,
        ),
        depth,
        n_jobs,
    )
    return (
        row
        | {
            "bytes_per_image": round(index.nbytes / index.n_images),
            "build_seconds": build_seconds,
        }
        | measured
    )


def run_asmk_variants(
    prepared: Prepared,
    words: int,
    depth: int,
    n_jobs: int | None,
    multiple_assignment: int | None = None,
    stop_fraction: float = 0.0,
) -> list[dict]:
    """ASMK*, ASMK, and ASMK with spatial verification of the top ``depth``,
    with one vocabulary of ``words`` words, each query descriptor assigned to
    its ``multiple_assignment`` nearest words (default: the index's), the
    stop list of ``stop_fraction`` left out."""
    codebook = asmk_codebook(prepared, words)
    name = f"{words} words" + (
        f", multiple assignment {multiple_assignment}"
        if multiple_assignment is not None
        else ""
    )
    if stop_fraction:
        name += f", stop fraction {stop_fraction:g}"
    kernel = {
        "multiple_assignment": multiple_assignment,
        "stop_fraction": stop_fraction,
    }
    return [
        _asmk_variant(prepared, codebook, f"ASMK* ({name})", binary=True, **kernel),
        _asmk_variant(prepared, codebook, f"ASMK ({name})", binary=False, **kernel),
        _asmk_variant(
            prepared,
            codebook,
            f"ASMK ({name}) + spatial (top {depth})",
            binary=False,
            depth=depth,
            n_jobs=n_jobs,
            **kernel,
        ),
    ]


def run_variants(
    prepared: Prepared, pca: int, depths: Sequence[int], n_jobs: int | None
) -> list[dict]:
    """Plain VLAD, + whitening, + query expansion, + spatial verification of
    the top ``depth`` for each of ``depths``, all together (spatial at the
    shallowest depth), and product-quantised codes."""
    qe = QueryExpansion()
    rows = [
        _variant(prepared, "VLAD"),
        _variant(prepared, f"+ whitening (PCA {pca})", pca=pca),
        _variant(prepared, "+ query expansion", expansion=qe),
        _variant(prepared, "+ whitening + QE", pca=pca, expansion=qe),
    ]
    for depth in depths:
        rows.append(
            _variant(prepared, f"+ spatial (top {depth})", depth=depth, n_jobs=n_jobs)
        )
    rows.append(
        _variant(
            prepared,
            f"+ whitening + QE + spatial (top {min(depths)})",
            pca=pca,
            expansion=qe,
            depth=min(depths),
            n_jobs=n_jobs,
        )
    )
    for factory in PQ_FACTORIES:
        rows.append(
            _variant(
                prepared, f"+ whitening, faiss {factory}", pca=pca, factory=factory
            )
        )
    return rows


def _percent(value) -> str:
    return "   -  " if value is None else f"{100 * value:6.2f}"


def format_rows(rows: list[dict]) -> str:
    """The variants as a Markdown table: overall and per tier."""
    tiers = sorted(
        {
            tag
            for row in rows
            if "evaluation" in row
            for tag in row["evaluation"]["by_tag"]
        }
        & {"easy", "hard"}
    )
    header = ["variant", "bytes/image", "mAP", "R@1", "R@10"]
    header += [f"{tier} mAP" for tier in tiers] + ["ms/query"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        if "skipped" in row:
            lines.append(f"| {row['variant']} | skipped: {row['skipped']} |")
            continue
        mean = row["evaluation"]["mean"]
        by_tag = row["evaluation"]["by_tag"]
        cells = [
            row["variant"],
            str(row["bytes_per_image"]),
            _percent(mean["mAP"]),
            _percent(mean["recall@1"]),
            _percent(mean["recall@10"]),
        ]
        cells += [_percent(by_tag[tier]["mAP"]) for tier in tiers]
        cells.append(f"{row['ms_per_query_search'] + row['ms_per_query_spatial']:.2f}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def format_by_transform(row: dict) -> str:
    """One variant's mAP and Recall@1 per transform tag."""
    if "skipped" in row:
        return f"{row['variant']}: skipped: {row['skipped']}"
    by_tag = row["evaluation"]["by_tag"]
    lines = [
        f"{row['variant']}: per transform",
        "| transform | queries | mAP | R@1 |",
        "|---|---|---|---|",
    ]
    for tag in sorted(by_tag):
        if tag in ("easy", "hard"):
            continue
        values = by_tag[tag]
        lines.append(
            f"| {tag} | {values['n_queries']} | {_percent(values['mAP'])} | "
            f"{_percent(values['recall@1'])} |"
        )
    return "\n".join(lines)


def dataset_counts(dataset: Path) -> dict | None:
    """The counts the build recorded in ``dataset.json``, if it is there."""
    record = dataset / "dataset.json"
    if not record.is_file():
        return None
    return json.loads(record.read_text(encoding="utf-8")).get("counts")


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.retrieval.run")
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--work", type=Path)
    parser.add_argument("--clusters", type=int, default=DEFAULT_N_CLUSTERS)
    spec_argument(parser, POWER)
    parser.add_argument("--pca", type=int, default=64)
    parser.add_argument(
        "--depth",
        type=int,
        action="append",
        help=f"results verified spatially; repeat for several (default: 20 and {K})",
    )
    spec_argument(parser, descriptor_parameter("min_keypoints"))
    parser.add_argument(
        "--asmk-words",
        type=int,
        default=ASMK_WORDS,
        help=f"words of the ASMK variants' vocabulary (default {ASMK_WORDS}; 0: none)",
    )
    parser.add_argument(
        "--asmk-multiple-assignment",
        type=int,
        default=None,
        help="nearest words of each query descriptor in the ASMK searches "
        "(default: the index's, 5 for ASMK*, 3 for ASMK)",
    )
    parser.add_argument(
        "--asmk-stop-fraction",
        type=float,
        default=0.0,
        help="the ASMK searches leave out the commonest words holding at most "
        "this fraction of the index's entries (default 0: none)",
    )
    parser.add_argument("--jobs", type=int, default=None)
    parser.add_argument("--json", type=Path)
    arguments = parser.parse_args(argv)
    work = arguments.work or arguments.dataset / "work"
    prepared = prepare(
        arguments.dataset,
        work,
        arguments.clusters,
        arguments.power,
        arguments.jobs,
        {"min_keypoints": arguments.min_keypoints},
    )
    depths = arguments.depth = arguments.depth or [20, K]
    rows = run_variants(prepared, arguments.pca, depths, arguments.jobs)
    if arguments.asmk_words:
        rows += run_asmk_variants(
            prepared,
            arguments.asmk_words,
            min(depths),
            arguments.jobs,
            arguments.asmk_multiple_assignment,
            arguments.asmk_stop_fraction,
        )
    print(
        f"{len(prepared.database)} database images, {len(prepared.queries)} queries, "
        f"K={arguments.clusters}, power={arguments.power}, "
        f"min_keypoints={arguments.min_keypoints}; images without descriptors: "
        f"{int((prepared.database.lengths == 0).sum())} database, "
        f"{int((prepared.queries.lengths == 0).sum())} queries"
    )
    print(format_rows(rows))
    print()
    print(format_by_transform(rows[0]))
    print()
    for row in rows:
        if row["variant"].startswith(("+ whitening + QE + spatial", "ASMK")):
            print()
            print(format_by_transform(row))
    if arguments.json:
        report = {
            "machine": machine_info(),
            "dataset": str(arguments.dataset),
            "dataset_counts": dataset_counts(arguments.dataset),
            "settings": vars(arguments) | {"dataset": None, "work": None, "json": None},
            "preparation_seconds": prepared.seconds,
            "variants": rows,
        }
        with atomic_write(arguments.json) as handle:
            handle.write((json.dumps(report, indent=1, default=str) + "\n").encode())
    return 0


if __name__ == "__main__":
    sys.exit(main())
