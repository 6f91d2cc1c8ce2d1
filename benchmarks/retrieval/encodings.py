"""Encoding switches on the retrieval benchmark: one table to choose defaults.

::

    python -m benchmarks.retrieval.encodings DATASET [--work DIR]
        [--only LABEL ...] [--json PATH]

Each variant extracts descriptors (cached in ``--work`` per extraction
setting), fits a codebook on the database's descriptors, encodes the database
and the queries, and searches exactly (:func:`vlad.search.build_index`, no
re-ranking); it is evaluated with :func:`vlad.evaluation.evaluate`. The table
gives mAP overall and per tier, Recall@1, the vector's size, and the time to
turn one query image into a vector: extraction and encoding, each per image.
A variant is a change from the library's defaults, so the first row is what a
user gets without options.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

import vlad
from benchmarks.files import atomic_write
from benchmarks.report import machine_info
from benchmarks.retrieval.run import K, dataset_counts
from vlad.core import DEFAULT_N_CLUSTERS
from vlad.evaluation import evaluate, load_ground_truth
from vlad.search import build_index

__all__ = ["VARIANTS", "EncodingVariant", "format_table", "main", "run_variant"]


@dataclass(frozen=True)
class EncodingVariant:
    """One pipeline: extraction, codebook and encoding settings.

    ``extraction`` holds keyword arguments of :func:`vlad.extract_images`'s
    ``descriptor_options``; ``codebook`` those of :func:`vlad.fit_codebook`
    (``n_clusters`` among them); ``encoding`` those of :func:`vlad.encode`.
    ``adapt`` moves the fitted centres to the means of the database's
    descriptors (:func:`vlad.adapt_codebook`); ``vocabularies`` fits that many
    (:func:`vlad.fit_vocabularies`); ``index`` holds keyword arguments of
    :func:`vlad.search.build_index` (``pca``, ``whiten``).
    """

    label: str
    extraction: dict = field(default_factory=dict)
    codebook: dict = field(default_factory=dict)
    encoding: dict = field(default_factory=dict)
    adapt: bool = False
    vocabularies: int = 1
    index: dict = field(default_factory=dict)

    def record(self) -> dict:
        """JSON-serialisable settings."""
        return {
            "extraction": self.extraction,
            "codebook": self.codebook,
            "encoding": self.encoding,
            "adapt": self.adapt,
            "vocabularies": self.vocabularies,
            "index": self.index,
        }


#: What vlad 0.3 did by default where the defaults have changed since.
BEFORE = {"min_keypoints": 0}
BEFORE_CODEBOOK = {"n_clusters": 64, "backend": "sklearn"}
RN = {"residual_norm": True, "power": 0.2}
WHITENED = {"pca": 64, "whiten": 1.0}

#: The switches alone, then combinations; each a change from the defaults.
VARIANTS = (
    EncodingVariant("defaults"),
    EncodingVariant(
        "0.3 defaults (K=64, min_keypoints 0, scikit-learn k-means)",
        extraction=BEFORE,
        codebook=BEFORE_CODEBOOK,
    ),
    EncodingVariant("K=64", codebook={"n_clusters": 64}),
    EncodingVariant("K=128", codebook={"n_clusters": 128}),
    EncodingVariant("K=512", codebook={"n_clusters": 512}),
    EncodingVariant("min_keypoints 0", extraction=BEFORE),
    EncodingVariant("min_keypoints 50", extraction={"min_keypoints": 50}),
    EncodingVariant("scikit-learn k-means", codebook={"backend": "sklearn"}),
    EncodingVariant("spherical k-means", codebook={"spherical": True}),
    EncodingVariant("adapted codebook", adapt=True),
    EncodingVariant("power 0.5", encoding={"power": 0.5}),
    EncodingVariant("power 0.2", encoding={"power": 0.2}),
    EncodingVariant("residual norm", encoding={"residual_norm": True}),
    EncodingVariant("residual norm + power 0.2", encoding=RN),
    EncodingVariant("multiple assignment (2)", encoding={"assignment": "multiple"}),
    EncodingVariant(
        "multiple assignment (4)", encoding={"assignment": "multiple", "n_nearest": 4}
    ),
    EncodingVariant(
        "soft assignment (4)", encoding={"assignment": "soft", "n_nearest": 4}
    ),
    EncodingVariant("no intra", encoding={"intra": False}),
    EncodingVariant("SIFT (not RootSIFT)", extraction={"root_sift": False}),
    EncodingVariant("ORB", extraction={"features": "orb"}),
    EncodingVariant("whitened (PCA 64)", index=WHITENED),
    EncodingVariant(
        "K=64, whitened (PCA 64)", codebook={"n_clusters": 64}, index=WHITENED
    ),
    EncodingVariant(
        "K=64, 4 vocabularies, whitened (PCA 64)",
        codebook={"n_clusters": 64},
        vocabularies=4,
        index=WHITENED,
    ),
    EncodingVariant(
        "K=64 + power 0.5", codebook={"n_clusters": 64}, encoding={"power": 0.5}
    ),
    EncodingVariant(
        "K=64 + residual norm + power 0.2", codebook={"n_clusters": 64}, encoding=RN
    ),
    EncodingVariant(
        "K=64, adapted + residual norm + power 0.2",
        codebook={"n_clusters": 64},
        encoding=RN,
        adapt=True,
    ),
)


def _extraction_key(extraction: dict) -> str:
    record = vlad.SiftOptions(**extraction).record()
    record.pop("opencv_version")
    text = json.dumps(record, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _descriptors(
    dataset: Path, work: Path, extraction: dict, n_jobs: int | None
) -> tuple[dict, dict]:
    """Database and query descriptor sets for one extraction setting, cached,
    and the seconds extraction took per image (measured on the first run)."""
    folder = work / f"extraction-{_extraction_key(extraction)}"
    folder.mkdir(parents=True, exist_ok=True)
    timing_file = folder / "seconds.json"
    sets = {}
    seconds = json.loads(timing_file.read_text()) if timing_file.is_file() else {}
    for part in ("database", "queries"):
        cache = folder / f"{part}.npz"
        if cache.exists():
            sets[part] = vlad.DescriptorSets.load(cache)
            continue
        start = time.perf_counter()
        sets[part], _ = vlad.extract_images(
            dataset / part, extraction or None, n_jobs=n_jobs
        )
        seconds[part] = (time.perf_counter() - start) / len(sets[part])
        sets[part].save(cache)
    with atomic_write(timing_file) as handle:
        handle.write(json.dumps(seconds).encode())
    return sets, seconds


def run_variant(
    variant: EncodingVariant,
    dataset: Path,
    work: Path,
    ground_truth: dict,
    n_jobs: int | None,
    n_clusters: int = DEFAULT_N_CLUSTERS,
) -> dict:
    """Extract, fit, encode, search and evaluate one variant (``n_clusters``
    centres unless it says otherwise)."""
    sets, extraction_seconds = _descriptors(dataset, work, variant.extraction, n_jobs)
    database, queries = sets["database"], sets["queries"]
    settings = {"n_clusters": n_clusters, "seed": 0} | variant.codebook
    start = time.perf_counter()
    if variant.vocabularies > 1:
        codebook = vlad.fit_vocabularies(
            database, n_vocabularies=variant.vocabularies, **settings
        )
    else:
        codebook = vlad.fit_codebook(database, **settings)
    if variant.adapt:
        codebook = vlad.adapt_codebook(codebook, database)
    fit_seconds = time.perf_counter() - start
    database_vectors = vlad.encode(
        database, codebook, n_jobs=n_jobs, **variant.encoding
    )
    start = time.perf_counter()
    query_vectors = vlad.encode(queries, codebook, n_jobs=n_jobs, **variant.encoding)
    encode_seconds = (time.perf_counter() - start) / len(queries)
    index = build_index(database_vectors, database.names, **variant.index)
    results = index.search(query_vectors, K, query_names=queries.names)
    evaluation = evaluate(results.rankings(), ground_truth, ks=(1, 5, 10))
    return {
        "variant": variant.label,
        "settings": variant.record(),
        "dimensions": index.dimension,
        "bytes_per_image": index.bytes_per_image,
        "images_without_descriptors": {
            "database": int(np.sum(database.lengths == 0)),
            "queries": int(np.sum(queries.lengths == 0)),
        },
        "seconds": {
            "fit": fit_seconds,
            "extract_per_image": extraction_seconds.get("queries"),
            "encode_per_image": encode_seconds,
        },
        "evaluation": evaluation.to_dict(),
    }


def time_from_images(
    dataset: Path, work: Path, variants: list, repeats: int, n_jobs: int | None
) -> dict:
    """Seconds per query image of :func:`vlad.encode_images` (reading,
    extraction and encoding) for each variant, the variants alternating in
    each of ``repeats`` rounds; the median of each.

    The codebooks are fitted on the database's cached descriptors first.
    """
    codebooks = {}
    for variant in variants:
        sets, _ = _descriptors(dataset, work, variant.extraction, n_jobs)
        settings = {"n_clusters": DEFAULT_N_CLUSTERS, "seed": 0} | variant.codebook
        codebooks[variant.label] = vlad.fit_codebook(sets["database"], **settings)
    n_images = len(vlad.find_images(dataset / "queries"))
    seconds = {variant.label: [] for variant in variants}
    for _ in range(repeats):
        for variant in variants:
            start = time.perf_counter()
            vlad.encode_images(
                dataset / "queries",
                codebooks[variant.label],
                descriptor_options=variant.extraction or None,
                n_jobs=n_jobs,
                **variant.encoding,
            )
            seconds[variant.label].append((time.perf_counter() - start) / n_images)
    return {label: statistics.median(values) for label, values in seconds.items()}


def _percent(value) -> str:
    return "-" if value is None else f"{100 * value:.2f}"


def _ms(value) -> str:
    return "-" if value is None else f"{1000 * value:.2f}"


def format_table(rows: list[dict]) -> str:
    """The variants as a Markdown table."""
    header = [
        "variant",
        "dims",
        "mAP",
        "easy mAP",
        "hard mAP",
        "R@1",
        "no descriptors (db/queries)",
        "extract ms/image",
        "encode ms/image",
    ]
    lines = ["| " + " | ".join(header) + " |", "|---|" + "---:|" * (len(header) - 1)]
    for row in rows:
        evaluation = row["evaluation"]
        by_tag = evaluation["by_tag"]
        empty = row["images_without_descriptors"]
        cells = [
            row["variant"],
            str(row["dimensions"]),
            _percent(evaluation["mean"]["mAP"]),
            _percent(by_tag.get("easy", {}).get("mAP")),
            _percent(by_tag.get("hard", {}).get("mAP")),
            _percent(evaluation["mean"]["recall@1"]),
            f"{empty['database']} / {empty['queries']}",
            _ms(row["seconds"]["extract_per_image"]),
            _ms(row["seconds"]["encode_per_image"]),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.retrieval.encodings")
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--work", type=Path)
    parser.add_argument(
        "--only", action="append", help="run only variants of these labels"
    )
    parser.add_argument("--clusters", type=int, default=DEFAULT_N_CLUSTERS)
    parser.add_argument("--jobs", type=int, default=None)
    parser.add_argument(
        "--time",
        action="append",
        metavar="LABEL",
        help="also time vlad.encode_images on the queries for these variants "
        "(alternating, --repeats rounds)",
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", type=Path)
    arguments = parser.parse_args(argv)
    work = arguments.work or arguments.dataset / "work"
    ground_truth = load_ground_truth(arguments.dataset / "ground_truth.json")
    chosen = [
        variant
        for variant in VARIANTS
        if not arguments.only or variant.label in arguments.only
    ]
    rows = []
    for variant in chosen:
        rows.append(
            run_variant(
                variant,
                arguments.dataset,
                work,
                ground_truth,
                arguments.jobs,
                arguments.clusters,
            )
        )
        print(format_table(rows[-1:]).splitlines()[-1], flush=True)
    print(format_table(rows))
    timed = {}
    if arguments.time:
        by_label = {variant.label: variant for variant in VARIANTS}
        timed = time_from_images(
            arguments.dataset,
            work,
            [by_label[label] for label in arguments.time],
            arguments.repeats,
            arguments.jobs,
        )
        for label, value in timed.items():
            print(f"vlad.encode_images, {label}: {1000 * value:.1f} ms per image")
    if arguments.json:
        report = {
            "machine": machine_info(),
            "dataset_counts": dataset_counts(arguments.dataset),
            "variants": rows,
            "encode_images_seconds_per_image": timed,
            "repeats": arguments.repeats,
        }
        with atomic_write(arguments.json) as handle:
            handle.write((json.dumps(report, indent=1, default=str) + "\n").encode())
    return 0


if __name__ == "__main__":
    sys.exit(main())
