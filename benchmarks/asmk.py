"""The ASMK benchmark: build time, time per query and index bytes of ASMK*
and ASMK (:func:`vlad.asmk.build_asmk_index`).

Usage, from the repository root::

    python -m benchmarks.asmk                 # synthetic descriptors
    python -m benchmarks.asmk --descriptors descriptors.npz --codebook cb.npz

Times are wall-clock and CPU (all threads) seconds: on a shared machine the
CPU time is the steadier of the two. Bytes are those of the inverted file
(word offsets, image numbers, codes), per descriptor indexed and per image;
the codebook kept beside it is not counted.
"""

from __future__ import annotations

import argparse

import numpy as np

import vlad
from benchmarks.measuring import timed
from vlad.asmk import build_asmk_index

__all__ = ["benchmark_asmk", "main", "make_asmk_problem"]


def make_asmk_problem(
    n_images: int = 200,
    n_descriptors: int = 1000,
    n_words: int = 4096,
    n_features: int = 128,
    seed: int = 0,
) -> tuple[vlad.DescriptorSets, vlad.Codebook]:
    """Images of ``n_descriptors`` descriptors each, every descriptor a centre
    of a random codebook plus noise, and that codebook."""
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((n_words, n_features)).astype(np.float32)
    chosen = rng.integers(0, n_words, n_images * n_descriptors)
    noise = 0.3 * rng.standard_normal((chosen.shape[0], n_features))
    descriptors = (centers[chosen] + noise).astype(np.float32)
    offsets = np.arange(n_images + 1, dtype=np.int64) * n_descriptors
    return vlad.DescriptorSets(descriptors, offsets), vlad.Codebook(centers)


def benchmark_asmk(
    sets: vlad.DescriptorSets,
    codebook: vlad.Codebook,
    *,
    n_queries: int = 50,
    multiple_assignment: int = 5,
    k: int = 100,
) -> list[dict]:
    """One row per kernel (ASMK*, ASMK): seconds to build, milliseconds per
    query (the first ``n_queries`` images as queries), bytes."""
    queries = sets.between(0, min(n_queries, len(sets)))
    rows = []
    for binary in (True, False):
        index, build_wall, build_cpu = timed(
            lambda binary=binary: build_asmk_index(sets, codebook, binary=binary)
        )
        _, search_wall, search_cpu = timed(
            lambda index=index: index.search(
                queries, k, multiple_assignment=multiple_assignment
            )
        )
        rows.append(
            {
                "kernel": "ASMK*" if binary else "ASMK",
                "build_s": build_wall,
                "build_cpu_s": build_cpu,
                "ms_per_query": 1000 * search_wall / len(queries),
                "cpu_ms_per_query": 1000 * search_cpu / len(queries),
                "bytes_per_entry": index.bytes_per_entry,
                "bytes_per_descriptor": index.nbytes
                / max(1, sets.descriptors.shape[0]),
                "bytes_per_image": index.nbytes / max(1, len(sets)),
            }
        )
    return rows


def main(argv: list[str] | None = None) -> None:
    """Print the benchmark's table (Markdown)."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.asmk")
    parser.add_argument("--descriptors", help="descriptors file of vlad extract")
    parser.add_argument("--codebook", help="codebook of vlad fit (with --descriptors)")
    parser.add_argument("--images", type=int, default=200, help="synthetic images")
    parser.add_argument("--words", type=int, default=4096, help="synthetic words")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--multiple-assignment", type=int, default=5)
    arguments = parser.parse_args(argv)
    if arguments.descriptors:
        sets = vlad.DescriptorSets.load(arguments.descriptors)
        codebook = vlad.Codebook.load(arguments.codebook)
    else:
        sets, codebook = make_asmk_problem(arguments.images, n_words=arguments.words)
    rows = benchmark_asmk(
        sets,
        codebook,
        n_queries=arguments.queries,
        multiple_assignment=arguments.multiple_assignment,
    )
    print(
        f"{len(sets)} images, {sets.descriptors.shape[0]} descriptors, "
        f"{codebook.n_clusters} words, multiple assignment "
        f"{arguments.multiple_assignment}\n"
    )
    print(
        "| kernel | build s (CPU s) | ms per query (CPU ms) | bytes per entry "
        "| bytes per descriptor | bytes per image |"
    )
    print("|---|---|---|---|---|---|")
    for row in rows:
        print(
            f"| {row['kernel']} | {row['build_s']:.1f} ({row['build_cpu_s']:.1f}) "
            f"| {row['ms_per_query']:.1f} ({row['cpu_ms_per_query']:.1f}) "
            f"| {row['bytes_per_entry']} | {row['bytes_per_descriptor']:.1f} "
            f"| {row['bytes_per_image']:,.0f} |"
        )


if __name__ == "__main__":
    main()
