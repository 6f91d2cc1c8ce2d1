"""The documentation: README.md and docs/*.md.

Every Python example in them runs as a doctest, every relative link leads to a
file, and docs/cli.md is what docs/generate_cli.py makes of the commands' help.
"""

from __future__ import annotations

import doctest
import importlib.util
import re
from pathlib import Path

import pytest
from threadpoolctl import threadpool_limits

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]
PAGE_IDS = [page.relative_to(ROOT).as_posix() for page in PAGES]

#: A fenced code block: its opening fence's info string, and its body.
FENCED_BLOCK = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", re.M | re.S)
#: Inline links and images ``[text](target)``, and reference definitions.
INLINE_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_LINK = re.compile(r"^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s.*)?$", re.M)


def without_code(text: str) -> str:
    """``text`` without fenced blocks and inline code, where links are not links."""
    text = FENCED_BLOCK.sub("", text)
    return re.sub(r"`[^`\n]*`", "", text)


def load_generator():
    """docs/generate_cli.py as a module (docs/ is not a package)."""
    spec = importlib.util.spec_from_file_location(
        "generate_cli", DOCS / "generate_cli.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_pages_found():
    assert (ROOT / "README.md").is_file()
    assert (DOCS / "index.md").is_file()
    assert len(PAGES) >= 7


@pytest.mark.parametrize("path", PAGES, ids=PAGE_IDS)
def test_examples_run(path, monkeypatch):
    """Every ``>>>`` example of the page gives the output it shows."""
    monkeypatch.chdir(ROOT)
    # scikit-learn's k-means (in the examples that fit codebooks) runs on
    # OpenMP threads that wait for each other at every iteration: on a busy
    # two-core machine a fit of a few milliseconds then takes most of a second.
    # One OpenMP thread keeps the examples quick; vlad's own threads, BLAS and
    # OpenCV are left as they are.
    with threadpool_limits(limits=1, user_api="openmp"):
        failures, _ = doctest.testfile(
            str(path),
            module_relative=False,
            optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE,
            globs={},
            verbose=False,
        )
    assert failures == 0, f"{failures} example(s) of {path.name} failed (see above)"


@pytest.mark.parametrize("path", PAGES, ids=PAGE_IDS)
def test_python_blocks_are_doctests(path):
    """No Python block escapes testing: each is written as ``>>>`` examples."""
    text = path.read_text(encoding="utf-8")
    untested = [
        body.splitlines()[0] if body.strip() else "(empty)"
        for info, body in FENCED_BLOCK.findall(text)
        if info.strip().split(" ")[0].lower() in ("python", "py", "pycon")
        and ">>>" not in body
    ]
    assert not untested, f"Python blocks without >>> in {path.name}: {untested}"


@pytest.mark.parametrize("path", PAGES, ids=PAGE_IDS)
def test_relative_links_exist(path):
    """Every link that is not a URL or an anchor names an existing file."""
    text = without_code(path.read_text(encoding="utf-8"))
    targets = INLINE_LINK.findall(text) + REFERENCE_LINK.findall(text)
    missing = []
    for target in targets:
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I) or target.startswith("#"):
            continue
        file_part = target.split("#", 1)[0].split("?", 1)[0]
        if not (path.parent / file_part).exists():
            missing.append(target)
    assert not missing, f"links in {path.name} to missing files: {missing}"


def test_cli_reference_is_current():
    """docs/cli.md is what the generator makes of the commands' --help now."""
    generator = load_generator()
    expected = generator.render_cli_reference()
    current = (DOCS / "cli.md").read_text(encoding="utf-8")
    assert current == expected, "docs/cli.md is stale: run python docs/generate_cli.py"


def test_cli_reference_covers_every_command():
    import click

    from vlad.cli.main import main

    text = (DOCS / "cli.md").read_text(encoding="utf-8")
    for name in main.list_commands(click.Context(main)):
        assert f"## `vlad {name}`" in text
        assert f"Usage: vlad {name} [OPTIONS]" in text
