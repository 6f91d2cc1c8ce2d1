"""Progress of k-means (vlad.core._kmeans_progress and the back-ends): every
back-end reports its iterations, and the centres are the same with or
without progress."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import vlad
from vlad.core._kmeans_progress import part_progress, printed_iterations

HAS_FAISS = importlib.util.find_spec("faiss") is not None
needs_faiss = pytest.mark.skipif(not HAS_FAISS, reason="faiss not installed")

#: fit_codebook keywords of each way k-means runs, and the most it runs.
FITS = {
    "sklearn lloyd": ({"backend": "sklearn", "algorithm": "lloyd"}, 100),
    "sklearn minibatch": (
        {"backend": "sklearn", "algorithm": "minibatch", "max_iter": 3},
        (3 * 3000) // 1024,
    ),
    "sklearn spherical": ({"backend": "sklearn", "spherical": True}, 100),
    "faiss": ({"backend": "faiss", "max_iter": 10}, 10),
    "faiss spherical": ({"backend": "faiss", "spherical": True, "max_iter": 10}, 10),
}


@pytest.fixture(scope="module")
def descriptors():
    """Overlapping clusters, so that k-means takes a few iterations, and one
    duplicated row block, so that faiss splits an empty cluster."""
    rng = np.random.default_rng(4)
    rows = rng.normal(size=(3000, 12)).astype(np.float32)
    rows[:40] = rows[0]
    return rows


@pytest.mark.parametrize(
    ("settings", "n_total"),
    [
        pytest.param(*values, id=name, marks=[needs_faiss] if "faiss" in name else [])
        for name, values in FITS.items()
    ],
)
def test_iterations_are_reported_and_the_centres_are_the_same(
    descriptors, settings, n_total
):
    calls = []
    reported = vlad.fit_codebook(
        descriptors,
        24,
        seed=3,
        n_jobs=1,
        progress=lambda n_done, total: calls.append((n_done, total)),
        **settings,
    )
    plain = vlad.fit_codebook(descriptors, 24, seed=3, n_jobs=1, **settings)
    np.testing.assert_array_equal(reported.centers, plain.centers)
    assert calls[0] == (0, n_total) and calls[-1] == (n_total, n_total)
    assert {total for _, total in calls} == {n_total}
    done = [n_done for n_done, _ in calls]
    assert done == sorted(done) and len(calls) > 3
    if settings["backend"] == "faiss":  # every iteration runs, one call each
        assert done == list(range(n_total + 1))


def test_vocabularies_count_their_iterations_one_after_the_other(descriptors):
    calls = []
    vlad.fit_vocabularies(
        descriptors,
        8,
        3,
        backend="sklearn",
        max_iter=5,
        progress=lambda n_done, total: calls.append((n_done, total)),
    )
    assert calls[0] == (0, 15) and calls[-1] == (15, 15)
    done = [n_done for n_done, _ in calls]
    assert done == sorted(done) and {total for _, total in calls} == {15}
    assert {5, 10} <= set(done)


def test_part_progress_maps_each_part_into_the_whole():
    calls = []
    part = part_progress(lambda *call: calls.append(call), 2, 4)
    part(0, 10)
    part(7, 10)
    assert calls == [(20, 40), (27, 40)]
    assert part_progress(None, 0, 2) is None


def test_scikit_learn_lines_become_progress_and_other_output_passes(capsys):
    calls = []
    with printed_iterations(lambda *call: calls.append(call), 100):
        print("Initialization complete")
        print("Iteration 0, inertia 12.5.")
        print("a line of someone else's", end="")
        print(" output")
        print("Iteration 1, inertia 11.0.")
        print("Converged at iteration 1: strict convergence.")
        print("no line break at the end", end="")
    assert calls == [(0, 100), (1, 100), (2, 100), (100, 100)]
    assert capsys.readouterr().out == (
        "a line of someone else's output\nno line break at the end"
    )
    with printed_iterations(None, 10):
        print("Iteration 0, inertia 1.")
    assert capsys.readouterr().out == "Iteration 0, inertia 1.\n"
