"""The package's layout: public names, module sizes, private helpers kept
private, and what ``vlad --help`` loads."""

from __future__ import annotations

import ast
import importlib
import pathlib
import subprocess
import sys

import pytest

import vlad
from vlad._lazy import declared_exports

PACKAGE = pathlib.Path(vlad.__file__).parent
MODULES = sorted(
    path
    for path in PACKAGE.rglob("*.py")
    if path.name not in ("__init__.py", "__main__.py", "_version.py")
)
MAX_LINES = 600


def module_name(path: pathlib.Path) -> str:
    return ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)


@pytest.mark.parametrize("path", MODULES, ids=module_name)
def test_every_module_says_what_it_exports(path):
    name = module_name(path)
    if name == "vlad.backends.numba._kernels":
        pytest.importorskip("numba")
    if name == "vlad.backends.torch._layer":
        pytest.importorskip("torch")
    if name == "vlad.backends.keras._layer":
        pytest.importorskip("keras")  # and a back-end: keras fails without one
    module = importlib.import_module(name)
    assert isinstance(module.__all__, list) and module.__all__
    missing = [name for name in module.__all__ if not hasattr(module, name)]
    assert not missing, f"{module.__name__}.__all__ names what it lacks: {missing}"
    assert module.__doc__, f"{module.__name__} has no docstring"


@pytest.mark.parametrize("path", MODULES, ids=module_name)
def test_no_module_is_too_long(path):
    n_lines = len(path.read_text().splitlines())
    assert n_lines <= MAX_LINES, f"{module_name(path)} has {n_lines} lines"


def _imported_names(tree: ast.Module):
    """``(module, name)`` of every ``from module import name`` in the file."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                yield node.module, alias.name
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, None


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=module_name)
def test_nothing_private_is_imported_from_another_module(path):
    """A private helper (a name with a leading underscore) stays in its module;
    private modules (``vlad/verification/_spatial.py``) implement the package and are
    imported across it, never from outside (see the public names' test)."""
    tree = ast.parse(path.read_text())
    for module, name in _imported_names(tree):
        if not module.startswith("vlad") or name is None:
            continue
        if not name.startswith("_") or name == "__version__":
            continue
        submodule = PACKAGE.parent.joinpath(*module.split("."), name)
        assert submodule.with_suffix(".py").is_file() or submodule.is_dir(), (
            f"imports the private {module}.{name}"
        )


def test_the_top_level_names_resolve():
    for name in vlad.__all__:
        assert getattr(vlad, name) is not None
    assert set(vlad.__all__) <= set(dir(vlad))


def test_the_command_line_loads_no_heavy_or_optional_module():
    """``python -X importtime -m vlad --help`` loads neither the benchmark
    harness nor scikit-learn, OpenCV, numba, JAX or matplotlib."""
    process = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "vlad", "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "Usage: vlad" in process.stdout
    loaded = {
        line.split("|")[-1].strip()
        for line in process.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }
    assert "vlad.cli._main" in loaded
    for forbidden in ("benchmarks", "sklearn", "cv2", "numba", "jax", "matplotlib"):
        found = sorted(
            name for name in loaded
            if name == forbidden or name.startswith(forbidden + ".")
        )  # fmt: skip
        assert not found, f"vlad --help loads {found[:3]}"


#: Names that moved out of vlad.search, by the sub-package that holds them now.
MOVED_FROM_SEARCH = {
    "vlad.asmk": ["ASMKIndex", "build_asmk_index", "load_asmk_index"],
    "vlad.verification": ["VERIFICATION_PRESETS", "rerank_spatially"],
}


@pytest.mark.parametrize(
    ("package", "name"),
    [(package, name) for package, names in MOVED_FROM_SEARCH.items() for name in names],
)
def test_names_that_left_vlad_search_are_deprecated_aliases(package, name):
    import vlad.search

    with pytest.warns(DeprecationWarning, match=f"use {package}.{name}"):
        alias = getattr(vlad.search, name)
    assert alias is getattr(importlib.import_module(package), name)
    assert name not in vlad.search.__all__


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("__init__.py")), ids=str)
def test_public_names_are_written_once(path):
    """A sub-package's ``__all__`` is its TYPE_CHECKING block's names (and
    those it defines): no second list to fall out of step with it."""
    source = path.read_text()
    if "attach_declared" not in source:
        pytest.skip("no public names read lazily")
    assert "__all__ = [" not in source and "attach(" not in source
    module = importlib.import_module(module_name(path).removesuffix(".__init__"))
    declared = declared_exports(source, module.__name__)
    assert set(declared) <= set(module.__all__)
