"""A query's ASMK* scores from numba's single pass over the lists and from
the NumPy blocks, against each other and against the kernel's definition, for
codes of every width (read as 8-byte integers, or as bytes)."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from asmk_reference import reference_scores, scores_by_row
from hypothesis import given, settings
from hypothesis import strategies as st

import vlad
from vlad.asmk import build_asmk_index
from vlad.asmk._scoring import query_scores

pytest.importorskip("numba")


def numpy_only(monkeypatch):
    """numba as if it were not installed."""
    monkeypatch.setitem(sys.modules, "numba", None)


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    n_features=st.sampled_from([8, 10, 16, 24, 96, 128]),
    alpha=st.sampled_from([1.0, 2.5, 3.0, 9.0]),
    threshold=st.sampled_from([-1.0, -0.2, 0.0, 0.3]),
    idf=st.booleans(),
)
def test_compiled_and_numpy_scores_agree_on_segments(
    seed, n_features, alpha, threshold, idf
):
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((5, n_features)).astype(np.float32)
    database = [
        rng.standard_normal((int(length), n_features)).astype(np.float32)
        for length in rng.integers(0, 9, 7)
    ]
    index = build_asmk_index(
        database[:3], vlad.Codebook(centers), alpha=alpha, threshold=threshold,
        idf=idf,
    )  # fmt: skip
    index.add(database[3:])
    words = np.array([0, 2, 3, 4], np.int64)
    codes = rng.integers(0, 256, (4, (n_features + 7) // 8), np.uint8)
    weights = index._statistics_now().weights
    arguments = (index.segments, index.n_images, words, codes, weights)
    settings_ = {
        "binary": True,
        "alpha": alpha,
        "threshold": threshold,
        "n_features": n_features,
    }
    compiled = query_scores(*arguments, **settings_)
    with pytest.MonkeyPatch.context() as monkeypatch:
        numpy_only(monkeypatch)
        plain = query_scores(*arguments, **settings_)
    np.testing.assert_allclose(compiled, plain, rtol=1e-6, atol=1e-12)


@pytest.mark.parametrize("n_features", [8, 10, 24, 128])
def test_numpy_scores_match_the_definition(monkeypatch, n_features):
    numpy_only(monkeypatch)
    rng = np.random.default_rng(n_features)
    centers = rng.standard_normal((6, n_features)).astype(np.float32)
    database = [
        rng.standard_normal((length, n_features)).astype(np.float32)
        for length in (7, 0, 12, 3)
    ]
    query = rng.standard_normal((9, n_features)).astype(np.float32)
    index = build_asmk_index(database[:2], vlad.Codebook(centers), threshold=-0.5)
    index.add(database[2:])
    result = index.search([query], k=4, multiple_assignment=3)[0]
    expected = reference_scores(database, query, centers, 3, True, 3.0, -0.5)
    found = scores_by_row(result, len(database))
    for score, reference in zip(found, expected, strict=True):
        assert (score is None) == (reference is None)
        if reference is not None:
            assert score == pytest.approx(reference, abs=1e-5)
