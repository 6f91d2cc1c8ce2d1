"""Held-out quantisation error of a codebook fitted on other images, before and
after adapting it to these (``vlad.adapt_codebook``).

The photos of ``data/`` are split into two halves of four images. A codebook
is fitted on one half; the other half's descriptors are split at random into
an adaptation set and a held-out set. The table gives the mean squared
distance of the held-out descriptors to their nearest centre with the codebook
as fitted, adapted (one or several passes), and fitted afresh on the
adaptation set, for each half in turn and a few K.

Run: ``python benchmarks/adaptation.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

import vlad

__all__ = ["main", "quantisation_error"]

DATA = Path(__file__).resolve().parents[1] / "data"


def quantisation_error(codebook: vlad.Codebook, descriptors: np.ndarray) -> float:
    """Mean squared Euclidean distance of each descriptor to its nearest centre."""
    labels = vlad.assign(descriptors, codebook.centers)
    residuals = descriptors.astype(np.float64) - codebook.centers[labels]
    return float(np.mean(np.sum(residuals**2, axis=1)))


def main() -> None:
    sets, _ = vlad.extract_images(DATA, n_jobs=2)
    halves = [list(range(0, 4)), list(range(4, 8))]
    rng = np.random.default_rng(0)
    print("| fitted on | K | as fitted | adapted x1 | adapted x3 | fitted afresh |")
    print("|---|---|---|---|---|---|")
    for source, target in (halves, halves[::-1]):
        source_descriptors = np.concatenate([sets[t] for t in source])
        target_descriptors = np.concatenate([sets[t] for t in target])
        rows = rng.permutation(len(target_descriptors))
        adapt_rows, held_out_rows = np.array_split(rows, 2)
        adapt_set = target_descriptors[np.sort(adapt_rows)]
        held_out = target_descriptors[np.sort(held_out_rows)]
        names = ", ".join(sets.names[t] for t in source)
        for n_clusters in (16, 64):
            fitted = vlad.fit_codebook(source_descriptors, n_clusters, seed=0)
            adapted = vlad.adapt_codebook(fitted, adapt_set)
            again = adapted
            for _ in range(2):
                again = vlad.adapt_codebook(again, adapt_set)
            afresh = vlad.fit_codebook(adapt_set, n_clusters, seed=0)
            errors = [
                quantisation_error(codebook, held_out)
                for codebook in (fitted, adapted, again, afresh)
            ]
            cells = " | ".join(f"{error:.4f}" for error in errors)
            print(f"| {names} | {n_clusters} | {cells} |")
    print(
        f"\n{len(sets)} images, {len(sets.descriptors)} RootSIFT descriptors; "
        "error: mean squared distance to the nearest centre",
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
