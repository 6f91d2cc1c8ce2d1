"""VLAD with a faiss IVF-PQ index and synthetic distractors: ranking quality
(mAP, recall@1) and CPU time per query, the peer of
:mod:`benchmarks.asmk_million`.

Usage, from the repository root::

    OMP_WAIT_POLICY=PASSIVE python -m benchmarks.vlad_million \\
        --descriptors desc.npz --ground-truth realviews/ground_truth.json \\
        --sizes 10000 100000 --json vlad-million.json

The real images of ``--descriptors`` are encoded with vlad's defaults (a
codebook of 256 words fitted by :func:`vlad.fit_codebook` on them,
:func:`vlad.encode`). A distractor is a set of descriptors drawn at random,
without replacement, from the descriptors of the real images that belong to
no query's scene (named nowhere in the ground truth), as many as one of
those images holds; it is encoded the same way. As for ASMK's distractors,
whether they are easier or harder to tell from a query's scene than
photographs of other places would be is not known.

Vectors are PCA-whitened to ``--pca`` dimensions (:func:`vlad.search.
fit_whitening`, fitted on the real images and the first
:data:`WHITENING_SAMPLE` distractors), then indexed by
:func:`vlad.search.build_index` with the faiss ``--factory`` (its inverted
lists scaled to the database: ``{nlist}`` is replaced by the power of two
at most 4 sqrt(N) and N / 39, the vectors faiss's k-means asks for a list)
and ``--parameters``, and searched exactly (``Flat``) too. The 454 real
images alone are searched exactly, with and without whitening. Queries
are the ground truth's, ``k = 100``; times are CPU seconds of all threads.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np

import vlad
from benchmarks.measuring import timed
from vlad.evaluation import evaluate, load_ground_truth
from vlad.search import build_index, fit_whitening

__all__ = ["descriptor_distractors", "main", "vlad_rows"]

#: Distractors the whitening is fitted on, beside the real images.
WHITENING_SAMPLE = 4000
#: Distractors encoded at a time.
ENCODE_BATCH = 1000


def descriptor_distractors(
    pool: np.ndarray, counts: np.ndarray, rng: np.random.Generator
) -> vlad.DescriptorSets:
    """Images of ``counts[i]`` descriptors each, drawn without replacement
    from the rows of ``pool``."""
    counts = np.asarray(counts, np.int64)
    rows = np.concatenate(
        [rng.choice(pool.shape[0], count, replace=False) for count in counts]
    )
    offsets = np.zeros(counts.size + 1, np.int64)
    np.cumsum(counts, out=offsets[1:])
    return vlad.DescriptorSets(pool[rows], offsets)


def _quality(index, queries, names, truth) -> dict:
    results, wall, cpu = timed(lambda: index.search(queries, 100, query_names=names))
    mean = evaluate(results.rankings(), truth, ks=(1, 5)).mean
    return {
        "mAP": mean["mAP"],
        "recall@1": mean["recall@1"],
        "cpu_ms_per_query": 1000 * cpu / len(names),
        "ms_per_query": 1000 * wall / len(names),
    }


def vlad_rows(
    descriptors: str,
    ground_truth: str,
    sizes: list[int],
    *,
    pca: int = 256,
    factory: str = "IVF{nlist},PQ32",
    parameters: str | None = "nprobe=32",
    seed: int = 0,
    whitening_sample: int = WHITENING_SAMPLE,
    report=None,
) -> dict:
    """One row for the real images alone, then one per database size."""
    sets = vlad.DescriptorSets.load(descriptors)
    truth = load_ground_truth(ground_truth)
    codebook, _, fit_cpu = timed(lambda: vlad.fit_codebook(sets, 256))
    real, _, encode_cpu = timed(lambda: vlad.encode(sets, codebook))
    position = {name: row for row, name in enumerate(sets.names)}
    query_names = [name for name in truth if name in position]
    query_rows = [position[name] for name in query_names]
    named = {n for q, e in truth.items() for n in (q, *e.relevant, *e.junk)}
    pooled = [row for row, name in enumerate(sets.names) if name not in named]
    offsets = sets.offsets
    pool = np.concatenate(
        [sets.descriptors[offsets[row] : offsets[row + 1]] for row in pooled]
    )
    counts = np.diff(offsets)[pooled]
    rng = np.random.default_rng(seed)

    def encoded(n_images, whitening=None):
        """``n_images`` distractors' vectors, whitened a batch at a time."""
        blocks = []
        for start in range(0, n_images, ENCODE_BATCH):
            drawn = rng.choice(counts, min(ENCODE_BATCH, n_images - start))
            block = vlad.encode(descriptor_distractors(pool, drawn, rng), codebook)
            blocks.append(block if whitening is None else whitening.transform(block))
        return np.concatenate(blocks) if blocks else real[:0]

    sample, _, sample_cpu = timed(lambda: encoded(whitening_sample))
    whitening = fit_whitening(np.concatenate([real, sample]), pca)
    real_w = whitening.transform(real)
    queries = real[query_rows]
    result = {
        "n_words": 256,
        "pca": pca,
        "factory": factory,
        "parameters": parameters,
        "fit_cpu_s": fit_cpu,
        "encode_cpu_ms_per_image": 1000 * encode_cpu / len(sets),
        "distractor_encode_cpu_ms_per_image": 1000 * sample_cpu / whitening_sample,
        "rows": [
            {
                "n_images": len(sets),
                "index": "Flat, no whitening",
                **_quality(build_index(real, sets.names), queries, query_names, truth),
            },
            {
                "n_images": len(sets),
                "index": f"Flat, PCA-whitened to {pca}",
                **_quality(
                    build_index(real_w, sets.names),
                    real_w[query_rows],
                    query_names,
                    truth,
                ),
            },
        ],
    }
    for row in result["rows"]:
        print(row, flush=True)
    distractors = [whitening.transform(sample)]
    made = whitening_sample
    for size in sizes:
        wanted = max(0, size - len(sets) - made)
        extra, _, extra_cpu = timed(lambda wanted=wanted: encoded(wanted, whitening))
        distractors.append(extra)
        made = max(made, size - len(sets))
        database = np.concatenate([real_w, *distractors])[:size]
        names = [*sets.names] + [
            f"distractor-{i:07d}" for i in range(len(sets), database.shape[0])
        ]
        nlist = 1 << int(np.log2(min(4 * np.sqrt(size), size / 39)))
        index, _, build_cpu = timed(
            lambda database=database, names=names, nlist=nlist: build_index(
                database,
                names,
                factory=factory.format(nlist=nlist),
                parameters=parameters,
            )
        )
        exact = {
            "n_images": database.shape[0],
            "index": f"Flat, PCA-whitened to {pca}",
            **_quality(
                build_index(database, names), real_w[query_rows], query_names, truth
            ),
        }
        row = {
            "n_images": database.shape[0],
            "index": factory.format(nlist=nlist),
            "encode_cpu_s": extra_cpu,
            "index_build_cpu_s": build_cpu,
            **_quality(index, real_w[query_rows], query_names, truth),
        }
        result["rows"] += [exact, row]
        print(exact, row, sep="\n", flush=True)
        if report is not None:
            report(result)
    return result


def main(argv: list[str] | None = None) -> None:
    """Run the benchmark."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.vlad_million")
    parser.add_argument("--descriptors", required=True, help="of vlad extract")
    parser.add_argument("--ground-truth", required=True, help="its queries' truth")
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--pca", type=int, default=256)
    parser.add_argument("--factory", default="IVF{nlist},PQ32")
    parser.add_argument("--parameters", default="nprobe=32")
    parser.add_argument("--json", help="write the measurements here")
    arguments = parser.parse_args(sys.argv[1:] if argv is None else argv)

    def report(result):
        if arguments.json:
            Path(arguments.json).write_text(json.dumps(result, indent=2) + "\n")

    result = vlad_rows(
        arguments.descriptors,
        arguments.ground_truth,
        arguments.sizes,
        pca=arguments.pca,
        factory=arguments.factory,
        parameters=arguments.parameters,
        report=report,
    )
    result["cores"] = os.cpu_count()
    report(result)


if __name__ == "__main__":
    main()
