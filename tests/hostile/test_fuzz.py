"""Fuzzed arguments of the public functions: shapes, dtypes, values (NaN,
inf, huge and tiny finite ones) and parameters of every type.

Every call either returns finite results of the documented shape or raises
``ValueError`` / ``TypeError`` whose one-line message names the argument
(or the part of it) that is wrong. RuntimeWarnings are errors in this test
run, so an overflow that slips through fails here too. The number of
examples follows the suite's hypothesis profile (``HYPOTHESIS_PROFILE``, see
tests/conftest.py).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

import vlad

#: Values that break arithmetic: NaN, inf, the largest and the smallest.
EXTREMES = [np.nan, np.inf, -np.inf, 1e308, -1e308, 5e36, 3.4e38, 1e-40, 1e-310, 0.0]
#: Finite values that overflow squares and sums, or underflow them.
HUGE = [1e308, -1e308, 5e36, -5e36, 3.4e38, 1e-40, 1e-310, 1e154, 2.0**64]
DTYPES = [np.float32] * 4 + [np.float64] * 2 + [np.float16, np.int8, np.uint8, np.bool_]


def mostly(valid, invalid, odds: int = 4):
    """``valid`` drawn about ``odds`` times as often as ``invalid`` (and
    first: hypothesis favours the simplest choice)."""
    return st.sampled_from([True] * odds + [False]).flatmap(
        lambda chosen: valid if chosen else invalid
    )


FLAGS = mostly(st.booleans(), st.sampled_from([np.bool_(False), "no", None, 1, 0.0]))
POWERS = mostly(
    st.one_of(st.floats(1e-6, 1.0), st.sampled_from([0.5, 1.0, 1e-300])),
    st.one_of(
        st.floats(allow_nan=True, allow_infinity=True),
        st.sampled_from([0, -1, 2, True, "0.5", None]),
    ),
)
N_JOBS = mostly(
    st.sampled_from([None, -1, 1, 2, 10000]), st.sampled_from([0, -2, 1.5, True, "2"])
)
AGGREGATORS = mostly(
    st.sampled_from(
        ["auto", "loop", "masked", "ufunc-at", "ragged-cumsum", "sparse", "numba"]
    ),
    st.sampled_from(["fastest", 42, None]),
)


def _message_names(error: Exception, names: tuple[str, ...]) -> None:
    event(f"refused ({type(error).__name__}): {str(error)[:60]}")
    message = str(error)
    assert "\n" not in message, message
    assert any(name in message for name in names), message


@st.composite
def matrices(draw, max_rows=8, max_columns=4, columns=None):
    """A 2-D array, mostly of ordinary float32 values; sometimes with extreme
    values (NaN, inf, 1e308, 5e36, 1e-40...), another dtype, no columns, or
    of the wrong rank or kind (flat, 3-D, objects, strings)."""
    n_rows = draw(mostly(st.integers(1, max_rows), st.just(0)))
    if columns is None:
        columns = draw(mostly(st.integers(1, max_columns), st.just(0), odds=9))
    kind = draw(st.sampled_from(["ordinary"] * 3 + ["huge", "extreme", "twisted"]))
    ordinary = st.floats(-10, 10, allow_subnormal=False)
    element = {
        "huge": st.one_of(ordinary, st.sampled_from(HUGE), st.floats(width=32)),
        "extreme": st.one_of(ordinary, st.sampled_from(EXTREMES)),
    }.get(kind, ordinary)
    values = draw(
        st.lists(element, min_size=n_rows * columns, max_size=n_rows * columns)
    )
    dtype = draw(st.sampled_from(DTYPES))
    with np.errstate(all="ignore"):
        array = (
            np.array(values, dtype=np.float64).reshape(n_rows, columns).astype(dtype)
        )
    if kind != "twisted":
        return array
    twist = draw(st.sampled_from(["flat", "3d", "object", "strings"]))
    if twist == "flat":
        return array.ravel()
    if twist == "3d":
        return array[None]
    return array.astype(object if twist == "object" else str)


@st.composite
def offsets_for(draw, n_rows: int):
    """Offsets of ``n_rows`` rows: valid most of the time."""
    n_images = draw(st.integers(0, 3))
    cuts = sorted(
        draw(st.lists(st.integers(0, n_rows), min_size=n_images, max_size=n_images))
    )
    valid = [0, *cuts, n_rows]
    invalid = [valid[::-1], [1, n_rows], [0.0, float(n_rows)], [], [[0, n_rows]]]
    return draw(mostly(st.just(valid), st.sampled_from(invalid)))


@st.composite
def problems(draw, max_rows=8):
    """Descriptors and centres that mostly share their number of features."""
    descriptors = draw(matrices(max_rows=max_rows))
    columns = descriptors.shape[-1] if descriptors.ndim == 2 else None
    same = draw(mostly(st.just(columns), st.just(None)))
    centers = draw(matrices(max_rows=4, columns=same))
    return descriptors, centers


def _finite(array) -> bool:
    event("returned")
    return bool(np.isfinite(np.asarray(array, dtype=np.float64)).all())


@given(data=st.data())
def test_encode(data):
    descriptors, centers = data.draw(problems())
    n_rows = descriptors.shape[0] if descriptors.ndim == 2 else 0
    offsets = data.draw(offsets_for(n_rows))
    settings_ = {
        "power": data.draw(POWERS),
        "intra": data.draw(FLAGS),
        "l2": data.draw(FLAGS),
        "mass": data.draw(FLAGS),
        "aggregator": data.draw(AGGREGATORS),
    }
    n_jobs = data.draw(N_JOBS)
    try:
        sets = vlad.DescriptorSets(descriptors, offsets)
        vectors = vlad.encode(sets, centers, n_jobs=n_jobs, **settings_)
    except (TypeError, ValueError) as error:
        _message_names(
            error,
            ("descriptor", "offsets", "center", "centre", "feature", "power", "intra",
             "l2", "mass", "aggregator", "n_jobs", "codebook"),
        )  # fmt: skip
        return
    assert vectors.shape == (len(sets), centers.shape[0] * centers.shape[1])
    assert vectors.dtype in (np.float32, np.float64) and _finite(vectors)


@given(data=st.data())
def test_aggregate(data):
    descriptors, centers = data.draw(problems())
    n_rows = descriptors.shape[0] if descriptors.ndim == 2 else 0
    offsets = data.draw(offsets_for(n_rows))
    n_clusters = max(1, centers.shape[0]) if centers.ndim == 2 else 1
    labels = data.draw(
        st.one_of(
            st.lists(st.integers(0, n_clusters - 1), min_size=n_rows, max_size=n_rows),
            st.lists(st.integers(0, n_clusters - 1), min_size=n_rows, max_size=n_rows),
            st.lists(st.integers(0, n_clusters - 1), min_size=n_rows, max_size=n_rows),
            st.lists(st.integers(-2, 6), max_size=n_rows + 1),
            st.just([0.5] * n_rows),
        )
    )
    aggregator = data.draw(AGGREGATORS)
    try:
        residuals = vlad.aggregate(descriptors, labels, offsets, centers, aggregator)
    except (TypeError, ValueError) as error:
        _message_names(
            error, ("descriptor", "labels", "offsets", "center", "centre", "feature",
                    "aggregator", "overflow"),
        )  # fmt: skip
        return
    assert residuals.shape == (len(offsets) - 1, *centers.shape) and _finite(residuals)


@given(
    problem=problems(),
    chunk_bytes=mostly(st.sampled_from([1 << 20, 1, 7]), st.sampled_from([0, -1, 2.5])),
    n_jobs=N_JOBS,
)
def test_assign(problem, chunk_bytes, n_jobs):
    descriptors, centers = problem
    try:
        labels = vlad.assign(
            descriptors, centers, chunk_bytes=chunk_bytes, n_jobs=n_jobs
        )
    except (TypeError, ValueError) as error:
        _message_names(
            error,
            ("descriptor", "center", "centre", "feature", "chunk_bytes", "n_jobs"),
        )
        return
    assert labels.shape == (descriptors.shape[0],) and _finite(labels)
    assert labels.size == 0 or 0 <= labels.min() <= labels.max() < centers.shape[0]


@given(data=st.data())
def test_normalize(data):
    matrix = data.draw(matrices(max_rows=6))
    shape = data.draw(mostly(st.just("3d"), st.just("2d")))
    residuals = (
        matrix.reshape(1, *matrix.shape)
        if shape == "3d" and matrix.ndim == 2
        else matrix
    )
    counts = data.draw(st.sampled_from([None, "good", "negative", "float", "shape"]))
    if counts is not None and residuals.ndim == 3:
        good = np.ones(residuals.shape[:2], dtype=np.int64)
        counts = {
            "good": good,
            "negative": -good,
            "float": good * np.nan,
            "shape": good[:, :0],
        }[counts]
    elif counts is not None:
        counts = [[1]]
    try:
        vectors = vlad.normalize(
            residuals,
            power=data.draw(POWERS),
            intra=data.draw(FLAGS),
            l2=data.draw(FLAGS),
            counts=counts,
        )
    except (TypeError, ValueError) as error:
        _message_names(error, ("residuals", "counts", "power", "intra", "l2"))
        return
    assert vectors.shape == (
        residuals.shape[0],
        residuals.shape[1] * residuals.shape[2],
    )
    assert _finite(vectors)


@settings(max_examples=25)
@given(
    descriptors=matrices(max_rows=12),
    n_clusters=mostly(
        st.sampled_from([1, 2, 3]), st.sampled_from([0, -1, True, 2.0, None])
    ),
    sample=mostly(st.sampled_from([None, 5]), st.sampled_from([1, 0])),
    seed=mostly(st.sampled_from([0, None]), st.sampled_from([-1, 1.5])),
    algorithm=mostly(
        st.sampled_from(["auto", "lloyd", "minibatch"]),
        st.sampled_from(["full", "k-means"]),
    ),
    max_iter=mostly(st.just(3), st.sampled_from([0, None])),
)
def test_fit_codebook(descriptors, n_clusters, sample, seed, algorithm, max_iter):
    try:
        codebook = vlad.fit_codebook(
            descriptors,
            n_clusters,
            sample=sample,
            seed=seed,
            algorithm=algorithm,
            max_iter=max_iter,
        )
    except (TypeError, ValueError) as error:
        _message_names(
            error, ("descriptor", "feature", "n_clusters", "sample", "seed",
                    "algorithm", "max_iter", "centres", "at least"),
        )  # fmt: skip
        return
    assert codebook.centers.shape == (n_clusters, descriptors.shape[-1])
    assert _finite(codebook.centers)


@given(
    centers=matrices(max_rows=4),
    metadata=mostly(
        st.sampled_from([None, {}, {"seed": 1}]), st.sampled_from(["sift", [1], 3])
    ),
)
def test_codebook(centers, metadata):
    try:
        codebook = vlad.Codebook(centers, metadata)
    except (TypeError, ValueError) as error:
        _message_names(error, ("centers", "metadata"))
        return
    assert codebook.centers.ndim == 2 and _finite(codebook.centers)
    assert len(codebook.fingerprint) == 16


@given(
    descriptors=matrices(),
    names=mostly(
        st.just(None), st.sampled_from([["a"], ["a", "b", "c", "d", "e"], "abc"])
    ),
    data=st.data(),
)
def test_descriptor_sets(descriptors, names, data):
    n_rows = descriptors.shape[0] if descriptors.ndim == 2 else 0
    offsets = data.draw(offsets_for(n_rows))
    try:
        sets = vlad.DescriptorSets(descriptors, offsets, names)
    except (TypeError, ValueError) as error:
        _message_names(error, ("descriptor", "offsets", "names", "feature"))
        return
    assert len(sets) == len(offsets) - 1 == len(sets.names)
    assert sets.descriptors.shape == descriptors.shape
    event("returned")


@given(
    aggregator=AGGREGATORS,
    power=POWERS,
    intra=FLAGS,
    l2=FLAGS,
    mass=FLAGS,
)
def test_encoding_options(aggregator, power, intra, l2, mass):
    try:
        options = vlad.EncodingOptions(aggregator, power, intra, l2, mass)
    except (TypeError, ValueError) as error:
        _message_names(error, ("aggregator", "power", "intra", "l2", "mass"))
        return
    record = json.loads(json.dumps(options.record()))
    assert vlad.EncodingOptions.from_record(record) == options
    event("returned")


@pytest.mark.filterwarnings("ignore:Number of distinct clusters")
@settings(max_examples=20)
@given(
    n_clusters=mostly(st.sampled_from([1, 2]), st.sampled_from([0, "2"])),
    power=mostly(st.sampled_from([0.5, 1.0]), st.sampled_from([0.0, 2.0])),
    intra=FLAGS,
    descriptors=matrices(max_rows=10, columns=3),
)
def test_vlad_encoder(n_clusters, power, intra, descriptors):
    encoder = vlad.VLADEncoder(n_clusters, power=power, intra=intra, random_state=0)
    try:
        vectors = encoder.fit_transform([descriptors, descriptors])
    except (TypeError, ValueError) as error:
        _message_names(
            error, ("n_clusters", "power", "intra", "descriptor", "feature", "at least",
                    "centres", "X"),
        )  # fmt: skip
        return
    assert vectors.shape == (2, n_clusters * 3) and _finite(vectors)
