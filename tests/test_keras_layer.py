"""The Keras NetVLAD layer on each Keras back-end installed.

Keras picks its back-end once, when it is first imported, from KERAS_BACKEND:
each back-end runs tests/keras_layer_checks.py in an interpreter of its own.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: Each Keras 3 back-end and the package it needs.
BACKENDS = {"jax": "jax", "torch": "torch", "tensorflow": "tensorflow"}


@pytest.mark.slow
@pytest.mark.parametrize("backend", sorted(BACKENDS))
def test_the_layer_on_a_backend(backend):
    for package in ("keras", BACKENDS[backend]):
        if importlib.util.find_spec(package) is None:
            pytest.skip(f"{package} not installed")
    completed = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
        + ["tests/keras_layer_checks.py", "vlad/backends/keras/_layer.py"],
        cwd=ROOT,
        env={**os.environ, "KERAS_BACKEND": backend},
        capture_output=True,
        text=True,
    )
    report = completed.stdout + completed.stderr
    assert completed.returncode == 0, report
    # Skipped there: only the comparison with PyTorch without it, and the
    # trace of intermediates off JAX; never the whole file.
    passed = re.search(r"(\d+) passed", report)
    assert passed and int(passed.group(1)) >= 20, report
