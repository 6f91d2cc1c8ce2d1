"""The optional extras (vlad._extras): the packages each holds are
pyproject.toml's, and the errors for a missing one give a command that
installs it from a clone as from PyPI; no text names an install that finds
nothing today."""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path

import pytest

from vlad._extras import EXTRAS, install_command

tomllib = pytest.importorskip("tomllib")  # Python 3.11

ROOT = Path(__file__).resolve().parents[1]


def optional_dependencies() -> dict[str, list[str]]:
    with open(ROOT / "pyproject.toml", "rb") as file:
        return tomllib.load(file)["project"]["optional-dependencies"]


def test_the_extras_are_pyproject_s():
    declared = optional_dependencies()
    assert {extra: list(packages) for extra, packages in EXTRAS.items()} == {
        extra: packages
        for extra, packages in declared.items()
        if extra not in ("all", "test")
    }
    # "all" is the runtime extras but torch and keras (and the tools).
    [everything] = declared["all"]
    assert everything == "vlad-toolkit[numba,jax,faiss,html,dask,hloc]"


@pytest.mark.parametrize(
    ("extra", "command"),
    [
        ("faiss", "pip install 'faiss-cpu>=1.7.4'"),
        ("jax", "pip install 'jax>=0.4.30' 'jaxlib>=0.4.30'"),
        ("dask", "pip install 'dask[distributed]>=2023.1'"),
    ],
)
def test_the_install_command_names_the_packages(extra, command):
    assert install_command(extra) == command


def test_missing_keras_says_to_install_it_and_a_back_end(monkeypatch):
    monkeypatch.setitem(sys.modules, "keras", None)
    monkeypatch.delitem(sys.modules, "vlad.backends.keras._layer", raising=False)
    with pytest.raises(ImportError) as caught:
        importlib.import_module("vlad.backends.keras._layer")
    message = str(caught.value)
    assert message.startswith(
        "this requires Keras 3 and a back-end (JAX, TensorFlow or PyTorch); "
        "install it with: pip install 'keras>=3' and one of jax, torch or "
        "tensorflow ("
    )


def texts() -> list[Path]:
    """What users read: the README, the docs, the changelog, the package's
    and the benchmarks' sources."""
    return [
        ROOT / "README.md",
        ROOT / "CHANGELOG.md",
        *sorted((ROOT / "docs").glob("*.md")),
        *sorted((ROOT / "vlad").rglob("*.py")),
        *sorted((ROOT / "benchmarks").rglob("*.py")),
        *sorted((ROOT / "benchmarks").rglob("*.md")),
    ]


def current_text(path: Path) -> str:
    """The text of ``path``; of the changelog, its unreleased section."""
    text = path.read_text(encoding="utf-8")
    if path.name == "CHANGELOG.md":
        text = text.split("\n## ", 2)[1]
    return text


@pytest.mark.parametrize("path", texts(), ids=lambda path: str(path.relative_to(ROOT)))
def test_no_install_line_finds_nothing_today(path):
    """``vlad[...]`` installs another project; ``vlad-toolkit`` is not on PyPI
    yet, so that only the README's Install section may name its future
    command."""
    text = current_text(path)
    assert not re.search(r"\bvlad\[", text)
    if path.name != "README.md":
        assert not re.search(r"pip install ['\"]?vlad-toolkit", text)
