"""The package's floors: every part of vlad imports only from the floors below
its own, ``vlad.core`` (the lowest sub-package) from no other sub-package (only
the leaf modules ``vlad.errors``, ``vlad._version``, ``vlad._lazy`` and
``vlad._extras``, which import nothing of vlad), and no two parts import each
other; the benchmarks (``benchmarks/``) are clients of vlad's public names
alone; imports inside functions count."""

from __future__ import annotations

import ast
import importlib
import pathlib

import pytest

import vlad
from vlad.core.aggregators import AGGREGATORS, BACKEND_AGGREGATORS

PACKAGE = pathlib.Path(vlad.__file__).parent
#: The benchmarks of the checkout, beside the package.
BENCHMARKS = PACKAGE.parent / "benchmarks"

#: Each part of the package (a sub-package, a top-level module, or ``vlad``
#: itself, its ``__init__``) and its floor: a part imports only from parts on
#: lower floors.
FLOORS = {
    "_version": -1,
    "errors": -1,
    "_lazy": -1,
    "_extras": -1,
    "core": 0,
    "formats": 1,
    "backends": 1,
    "datasets": 1,
    "images": 2,
    "search": 3,
    "estimators": 3,
    "asmk": 4,
    "verification": 4,
    "evaluation": 4,
    "pipeline": 5,
    "pages": 5,
    "_info": 6,
    "cli": 7,
    "vlad": 8,
    "__main__": 9,
}


def part_of(module: str) -> str:
    """The part of a module ``vlad.X...``: ``X``, or ``vlad`` for the package."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "vlad"


def package_modules() -> dict[str, pathlib.Path]:
    """Every module of the package, by name."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def vlad_imports(source: str, package: str) -> list[tuple[str, int]]:
    """``(module, line)`` of every import of a vlad module in ``source``, the
    text of a module of ``package``: relative imports resolved, ``from vlad
    import X`` read as importing ``vlad.X``, imports in functions included."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                module = ".".join(base + [module] if module else base)
            if module == "vlad":
                found += [(f"vlad.{alias.name}", node.lineno) for alias in node.names]
            else:
                found.append((module, node.lineno))
    return sorted(
        (module, line) for module, line in found if module.split(".")[0] == "vlad"
    )


def import_matrix() -> dict[str, dict[str, list[str]]]:
    """``matrix[a][b]``: the imports by which part ``a`` imports part ``b``."""
    matrix: dict[str, dict[str, list[str]]] = {}
    for name, path in package_modules().items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for module, line in vlad_imports(path.read_text(), package):
            if part_of(module) != part_of(name):
                imports = matrix.setdefault(part_of(name), {})
                imports.setdefault(part_of(module), []).append(
                    f"{name}:{line} imports {module}"
                )
    return matrix


def test_the_import_reader_sees_every_kind_of_import():
    source = (
        "import numpy\nimport vlad.core._codebook\nfrom vlad import datasets\n"
        "from ..formats import files\nfrom . import sift\nfrom .batch import x\n"
        "def f():\n    from vlad.search._index import load_index\n"
    )
    assert vlad_imports(source, "vlad.images") == [
        ("vlad.core._codebook", 2),
        ("vlad.datasets", 3),
        ("vlad.formats", 4),
        ("vlad.images", 5),
        ("vlad.images.batch", 6),
        ("vlad.search._index", 8),
    ]


def test_every_part_has_a_floor():
    parts = {part_of(name) for name in package_modules()}
    assert parts == set(FLOORS), (
        f"give each part of vlad a floor in FLOORS: {sorted(parts ^ set(FLOORS))}"
    )


def upward_imports(matrix: dict[str, dict[str, list[str]]]) -> list[str]:
    """The imports of ``matrix`` from a part on the same floor or above."""
    return [
        f"{line} (floor {FLOORS.get(source)} -> {FLOORS.get(target)})"
        for source, targets in matrix.items()
        for target, lines in targets.items()
        if FLOORS.get(target, 99) >= FLOORS.get(source, -1)
        for line in lines
    ]


def find_cycle(matrix: dict[str, dict[str, list[str]]]) -> list[str] | None:
    """Parts that import each other round a cycle, or None: a depth-first
    search, whatever the floors say."""
    state: dict[str, str] = {}

    def cycle_from(part: str, path: list[str]) -> list[str] | None:
        state[part] = "open"
        path = [*path, part]
        for target in sorted(matrix.get(part, {})):
            if state.get(target) == "open":
                return [*path[path.index(target) :], target]
            if target not in state:
                found = cycle_from(target, path)
                if found:
                    return found
        state[part] = "done"
        return None

    for part in sorted(matrix):
        if part not in state:
            cycle = cycle_from(part, [])
            if cycle:
                return cycle
    return None


def test_the_checks_find_what_they_look_for():
    matrix = {
        "core": {"formats": ["vlad.core._codebook:30 imports vlad.core._files"]},
        "formats": {"core": ["vlad.formats._vectors:25 imports vlad.core._finite"]},
    }
    assert upward_imports(matrix) == [
        "vlad.core._codebook:30 imports vlad.core._files (floor 0 -> 1)"
    ]
    assert find_cycle(matrix) == ["core", "formats", "core"]
    assert find_cycle({"cli": {"core": []}, "images": {"core": []}}) is None


#: The leaf modules under every floor: they import nothing of vlad.
LEAVES = ("_version", "errors", "_lazy", "_extras")


def test_core_imports_no_other_sub_package():
    matrix = import_matrix()
    reaching_up = {
        part: lines
        for part, lines in matrix.get("core", {}).items()
        if part not in LEAVES
    }
    assert not reaching_up, "\n".join(sum(reaching_up.values(), []))
    for leaf in LEAVES:
        assert not matrix.get(leaf), f"vlad.{leaf} imports {matrix[leaf]}"


def test_every_part_imports_only_from_lower_floors():
    upward = upward_imports(import_matrix())
    assert not upward, "\n".join(upward)


def test_no_two_parts_import_each_other():
    cycle = find_cycle(import_matrix())
    assert cycle is None, " -> ".join(cycle)


@pytest.mark.parametrize("name", sorted(BACKEND_AGGREGATORS))
def test_the_backend_aggregators_core_names_exist(name):
    """Core names them as strings: each names a function of a module that
    imports without its optional dependency."""
    backend = BACKEND_AGGREGATORS[name]
    entries = [backend.function, backend.loader] + [backend.fused] * bool(backend.fused)
    for entry in entries:
        module, function = entry.split(":")
        assert part_of(module) == "backends"
        assert callable(getattr(importlib.import_module(module), function)), entry
    assert AGGREGATORS[name].__name__ == backend.function.split(":")[1]


def private_imports(source: str, package: str) -> list[str]:
    """``"line: module"`` of every import in ``source`` (a module of
    ``package``) of a private part of vlad: a module any of whose names after
    ``vlad`` starts with ``_`` (``vlad.core._files``), a name starting with
    ``_`` imported from a vlad module (``from vlad.search import _spatial``),
    or a private module reached by attributes (``vlad.images._files.x``)."""
    found = [
        f"{line}: {module}"
        for module, line in vlad_imports(source, package)
        if any(part.startswith("_") for part in module.split(".")[1:])
    ]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and not node.level:
            module = node.module or ""
            if module.split(".")[0] == "vlad" and module != "vlad":
                found += [
                    f"{node.lineno}: {module}.{alias.name}"
                    for alias in node.names
                    if alias.name.startswith("_")
                ]
        elif isinstance(node, ast.Attribute):
            # ``vlad.images._files.find_images``: a private module reached
            # through attributes once ``vlad`` is imported.
            chain, inner = [node.attr], node.value
            while isinstance(inner, ast.Attribute):
                chain.append(inner.attr)
                inner = inner.value
            parts = chain[::-1]
            first = next(
                (n for n, part in enumerate(parts) if part.startswith("_")), None
            )
            if isinstance(inner, ast.Name) and inner.id == "vlad" and first is not None:
                if not parts[first].startswith("__"):  # vlad.__version__ is public
                    found.append(f"{node.lineno}: vlad.{'.'.join(parts[: first + 1])}")
    return sorted(set(found), key=lambda entry: int(entry.split(":")[0]))


def test_the_private_import_reader_sees_every_kind_of_import():
    source = (
        "import vlad\nimport vlad.core._files as files\nfrom vlad import _info\n"
        "from vlad.search import rerank_spatially, _matching\n"
        "from vlad.core.aggregators._segments import image_of_rows\n"
        "from vlad.verification._spatial import x\nfrom benchmarks import _x\n"
        "def f():\n    from vlad.pipeline._cluster import dask_client\n"
        "from vlad.evaluation import evaluate\n"
        "n = len(vlad.images._files.find_images('x'))\nv = vlad.__version__\n"
        "vlad.search.build_index\n"
    )
    assert private_imports(source, "benchmarks") == [
        "2: vlad.core._files",
        "3: vlad._info",
        "4: vlad.search._matching",
        "5: vlad.core.aggregators._segments",
        "6: vlad.verification._spatial",
        "9: vlad.pipeline._cluster",
        "11: vlad.images._files",
    ]


def test_the_benchmarks_import_only_public_names_of_vlad():
    """The benchmarks are clients of the library: what they need of it, users
    need too, and it is public (documented, tested, kept)."""
    found = []
    for path in sorted(BENCHMARKS.rglob("*.py")):
        parts = path.relative_to(BENCHMARKS.parent).with_suffix("").parts
        package = ".".join(parts if path.name == "__init__.py" else parts[:-1])
        found += [
            f"{path.relative_to(BENCHMARKS.parent)}:{entry}"
            for entry in private_imports(path.read_text(encoding="utf-8"), package)
        ]
    assert len(list(BENCHMARKS.rglob("*.py"))) > 20
    assert not found, "private vlad imports in benchmarks/:\n" + "\n".join(found)
