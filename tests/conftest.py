"""Shared fixtures, hypothesis strategies and an independent float64 reference."""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import tempfile
from pathlib import Path

# Idle OpenMP threads (scikit-learn's k-means, faiss) sleep instead of spinning,
# in this process and the ones it starts. Set before any OpenMP runtime loads.
# On a busy machine the spinning threads take the cores from the threads doing
# the work (k-means of a few thousand rows took a second instead of 10 ms);
# what a test checks, thread counts included, does not depend on it.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
# OpenBLAS's idle threads likewise sleep after a short spin (2**4 cycles, not
# 2**28). With another process on the second core, a small product on two
# threads waited for its partner: scikit-learn's randomised PCA of 500 x 200
# took 1.7 s instead of 0.02 s.
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")
# A run started in the background of a non-interactive shell inherits SIGINT
# ignored, and so would every vlad process the tests start to interrupt with
# Ctrl-C: handled here, it is back to the default in those processes.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

import numpy as np
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from photos import DATA, FAST_OPTIONS, fit_fast_codebook, make_messy_folder

import vlad

# Hypothesis profiles, chosen by the environment variable HYPOTHESIS_PROFILE:
# "default", few examples for a fast default run, and "thorough", which CI
# runs on the property tests (python -m pytest -m hypothesis) as a step of its
# own. Tests whose settings name their number of examples keep it in both.
settings.register_profile(
    "default",
    deadline=None,
    max_examples=20,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("thorough", settings.get_profile("default"), max_examples=200)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

DTYPES = [np.float32, np.float64]

#: The checkout's root. Tests build paths from it (or from photos.DATA), never
#: from the working directory, so that pytest gives the same results wherever
#: it is started.
ROOT = Path(__file__).resolve().parents[1]
# What pyproject's pythonpath does for this process, for the processes that the
# tests start (python -m vlad, python -c "import vlad"): they import this
# checkout's vlad from any working directory.
os.environ["PYTHONPATH"] = os.pathsep.join(
    [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
)


def aggregator_param(name: str, *, slow: tuple[str, ...] = ()):
    """A pytest param for an aggregator, skipped when its dependency is missing
    and marked slow when it is one of ``slow``."""
    requires = {"numba": "numba", "jax": "jax", "torch": "torch"}.get(name)
    missing = requires is not None and importlib.util.find_spec(requires) is None
    marks = [pytest.mark.skipif(missing, reason=f"{requires} not installed")]
    if name in slow:
        marks.append(pytest.mark.slow)
    return pytest.param(name, marks=marks)


def reference_residuals(descriptors, labels, offsets, centers) -> np.ndarray:
    """Residual sums in float64 by weighted bincount, one feature at a time.

    Independent of every aggregator: no masks, no sorting, no scatter.
    """
    descriptors = np.asarray(descriptors, dtype=np.float64)
    centers = np.asarray(centers, dtype=np.float64)
    n_images = len(offsets) - 1
    n_clusters, n_features = centers.shape
    images = np.repeat(np.arange(n_images), np.diff(offsets))
    segments = images * n_clusters + np.asarray(labels)
    n_segments = n_images * n_clusters
    counts = np.bincount(segments, minlength=n_segments).reshape(n_images, n_clusters)
    sums = np.stack(
        [
            np.bincount(segments, weights=descriptors[:, f], minlength=n_segments)
            for f in range(n_features)
        ],
        axis=-1,
    ).reshape(n_images, n_clusters, n_features)
    return sums - counts[:, :, None] * centers[None]


def max_relative_error(result, reference) -> float:
    """Largest per-image ``|result_t - reference_t| / |reference_t|`` (L2 norms);
    images whose reference is zero must be exactly zero."""
    result = np.asarray(result, dtype=np.float64).reshape(len(reference), -1)
    reference = np.asarray(reference, dtype=np.float64).reshape(len(reference), -1)
    errors = np.linalg.norm(result - reference, axis=1)
    norms = np.linalg.norm(reference, axis=1)
    zero = norms == 0
    assert np.all(errors[zero] == 0), "a zero reference row is not exactly zero"
    return float(np.max(errors[~zero] / norms[~zero], initial=0.0))


@st.composite
def ragged_problems(draw, dtype=None):
    """(descriptors, labels, offsets, centers) with ragged images.

    Covers images with no descriptors, centres with no members, K = 1, F = 1,
    a single image and no descriptors at all.
    """
    n_images = draw(st.integers(1, 6))
    lengths = draw(st.lists(st.integers(0, 12), min_size=n_images, max_size=n_images))
    n_features = draw(st.integers(1, 5))
    n_clusters = draw(st.integers(1, 5))
    dtype = dtype or draw(st.sampled_from(DTYPES))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    offsets = np.zeros(n_images + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    n_rows = int(offsets[-1])
    scale = draw(st.sampled_from([1.0, 1e3]))
    descriptors = (rng.standard_normal((n_rows, n_features)) * scale).astype(dtype)
    centers = (rng.standard_normal((n_clusters, n_features)) * scale).astype(dtype)
    # Labels need not be nearest centres for aggregation; leave some centres empty.
    used = draw(st.integers(1, n_clusters))
    labels = rng.integers(0, used, size=n_rows).astype(np.intp)
    return descriptors, labels, offsets, centers


def pytest_collection_modifyitems(items):
    """The tests on a Dask cluster run last, one after another: the cluster
    (a scheduler and two worker processes, which spend CPU time while idle)
    is then up only while they run, not for the rest of the run."""
    items.sort(key=lambda item: "cluster_client" in getattr(item, "fixturenames", ()))


@pytest.fixture(scope="session")
def cluster_client():
    """The client of a Dask LocalCluster of two one-thread worker processes,
    shared by the tests that make shards on a cluster."""
    pytest.importorskip("distributed")
    from vlad.pipeline._cluster import dask_client

    with dask_client(n_workers=2) as client:
        assert client.nthreads() and set(client.nthreads().values()) == {1}
        assert len(client.nthreads()) == 2 and client.cluster.processes
        yield client


# Made once for the whole run and shared by the modules that used to make their
# own: tests must not change them.


@pytest.fixture(scope="session")
def photo_sets():
    """The bundled photos' descriptors at FAST_OPTIONS (keypoints included)."""
    sets, _ = vlad.extract_images(DATA, FAST_OPTIONS, n_jobs=2)
    return sets


@pytest.fixture(scope="session")
def messy(tmp_path_factory):
    """A folder of the bundled photos among bad files (photos.MESSY_NAMES)."""
    return make_messy_folder(tmp_path_factory.mktemp("messy") / "photos")


@pytest.fixture(scope="session")
def small_codebook():
    """A 4-centre codebook of the bundled photos at FAST_OPTIONS."""
    codebook, _ = vlad.fit_codebook_to_images(
        DATA, 4, descriptor_options=FAST_OPTIONS, n_jobs=2
    )
    return codebook


@pytest.fixture(scope="session")
def codebook_path():
    """A 16-centre codebook of the bundled photos at FAST_OPTIONS, readable by
    anyone (the hostile tests read it as another user)."""
    folder = Path(tempfile.mkdtemp(prefix="vlad-test-codebook-"))
    folder.chmod(0o755)
    path = fit_fast_codebook(folder / "codebook.npz")
    path.chmod(0o644)
    yield path
    shutil.rmtree(folder)
