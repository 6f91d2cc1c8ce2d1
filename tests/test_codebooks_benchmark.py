"""The codebook benchmark (``python -m benchmarks.codebooks``), at its smoke size."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from benchmarks.codebooks import (
    CODEBOOK_METHODS,
    main,
    make_codebook_problem,
    quantisation_error,
)

#: The benchmarks' own tests: a CI step of their own, not the default run.
pytestmark = pytest.mark.benchmarks


def test_quantisation_error_is_the_brute_force_mean():
    rng = np.random.default_rng(0)
    descriptors = rng.normal(size=(70, 3)).astype(np.float32)
    centers = rng.normal(size=(4, 3)).astype(np.float32)
    expected = np.mean(
        [
            min(np.sum((row - c) ** 2) for c in centers)
            for row in descriptors.astype(float)
        ]
    )
    assert quantisation_error(descriptors, centers) == pytest.approx(expected, 1e-12)


def test_problem_is_sift_like():
    training, heldout = make_codebook_problem(500, 200, seed=1)
    assert training.shape == (500, 128) and heldout.shape == (200, 128)
    assert training.dtype == np.float32 and training.min() >= 0
    np.testing.assert_allclose(np.linalg.norm(heldout, axis=1), 1, rtol=1e-5)


def test_smoke_run_writes_every_method(tmp_path):
    path = tmp_path / "codebooks.json"
    result = CliRunner().invoke(
        main, ["--size", "smoke", "--threads", "1", "--json", str(path)]
    )
    assert result.exit_code == 0, result.output
    records = json.loads(path.read_text())
    assert [record["method"] for record in records] == list(CODEBOOK_METHODS)
    errors = {record["method"]: record["error"] for record in records}
    # On the same sample, Lloyd's error is near every other method's.
    for error in errors.values():
        assert 0 < error < 1.1 * errors["sklearn Lloyd"]
    assert "sklearn Lloyd" in result.output
