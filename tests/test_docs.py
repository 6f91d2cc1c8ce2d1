"""The documentation: README.md and docs/*.md.

Every Python example in them runs as a doctest, every relative link leads to a
file and anchor, docs/index.md lists every page, docs/cli.md is what
docs/generate_cli.py makes of the commands' help and docs/api.md what
docs/generate_api.py makes of the public names' docstrings, which name every
parameter.
"""

from __future__ import annotations

import dataclasses
import doctest
import functools
import importlib.util
import inspect
import re
import sys
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


#: An ATX heading's text.
HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$", re.M)
#: An explicit HTML anchor, ``<a id="name">`` or ``<a name="name">``.
HTML_ANCHOR = re.compile(r"<a\s+(?:id|name)=\"([^\"]+)\"")


def load_generator(name: str = "generate_cli"):
    """docs/NAME.py as a module (docs/ is not a package; its scripts import
    their shared docs/page_generator.py as a script's folder lets them)."""
    if str(DOCS) not in sys.path:
        sys.path.append(str(DOCS))
    spec = importlib.util.spec_from_file_location(name, DOCS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading: its text lower-cased, punctuation
    other than ``-`` and ``_`` dropped, spaces made hyphens."""
    heading = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    heading = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return heading.replace(" ", "-")


@functools.cache
def anchors(path: Path) -> frozenset[str]:
    """The anchors of a Markdown page: its headings', numbered as GitHub
    numbers repeats (``name``, ``name-1``, ...), and explicit HTML ones."""
    text = path.read_text(encoding="utf-8")
    found = set(HTML_ANCHOR.findall(text))
    seen: dict[str, int] = {}
    for heading in HEADING.findall(FENCED_BLOCK.sub("", text)):
        slug = github_slug(heading)
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return frozenset(found)


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
    """Every link that is not a URL names an existing file, and its anchor
    (``page.md#heading`` or ``#heading``) one of that page's headings."""
    text = without_code(path.read_text(encoding="utf-8"))
    targets = INLINE_LINK.findall(text) + REFERENCE_LINK.findall(text)
    missing = []
    for target in targets:
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):
            continue
        file_part, _, anchor = target.split("?", 1)[0].partition("#")
        linked = path.parent / file_part if file_part else path
        if not linked.exists():
            missing.append(target)
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            missing.append(target)
    assert not missing, f"links in {path.name} to missing files or anchors: {missing}"


#: Folders of one machine: a page that shows them (a generated page's
#: commands, a measurement's) means nothing to a reader.
MACHINE_FOLDERS = re.compile(r"(?<![\w.])/(?:work|tmp|home|root|Users|scratch)/")


@pytest.mark.parametrize("path", PAGES, ids=PAGE_IDS)
def test_pages_show_no_folder_of_a_machine(path):
    """Commands name their files by placeholders (``DATA/``, ``DATASET``)."""
    found = [
        f"{number}: {line.strip()[:80]}"
        for number, line in enumerate(path.read_text(encoding="utf-8").split("\n"), 1)
        if MACHINE_FOLDERS.search(line)
    ]
    assert not found, f"{path.name} shows a machine's folders:\n" + "\n".join(found)


def test_github_slug():
    assert github_slug("Stage by stage: assign, aggregate, normalize") == (
        "stage-by-stage-assign-aggregate-normalize"
    )
    assert github_slug("`vlad.search.VectorIndex.search`") == (
        "vladsearchvectorindexsearch"
    )
    assert github_slug("`vlad.__version__`") == "vlad__version__"
    assert github_slug("[Files](formats.md): on disk") == "files-on-disk"


def test_index_lists_every_page():
    """docs/index.md is the table of contents: it links every page of docs/,
    and the README links to it."""
    text = without_code((DOCS / "index.md").read_text(encoding="utf-8"))
    linked = {
        target.split("#", 1)[0]
        for target in INLINE_LINK.findall(text) + REFERENCE_LINK.findall(text)
    }
    pages = {page.name for page in DOCS.glob("*.md")} - {"index.md"}
    unlisted = sorted(pages - linked)
    assert not unlisted, f"pages missing from docs/index.md: {unlisted}"
    readme = without_code((ROOT / "README.md").read_text(encoding="utf-8"))
    assert "docs/index.md" in INLINE_LINK.findall(readme)


def test_cli_reference_is_current():
    """docs/cli.md is what the generator makes of the commands' --help now."""
    generator = load_generator()
    expected = generator.render_cli_reference()
    current = (DOCS / "cli.md").read_text(encoding="utf-8")
    assert current == expected, "docs/cli.md is stale: run python docs/generate_cli.py"


def test_cli_reference_covers_every_command():
    import click

    from vlad.cli._main import main

    text = (DOCS / "cli.md").read_text(encoding="utf-8")
    for name in main.list_commands(click.Context(main)):
        assert f"## `vlad {name}`" in text
        assert f"Usage: vlad {name} [OPTIONS]" in text


def test_api_reference_is_current():
    """docs/api.md is what the generator makes of the docstrings now."""
    generator = load_generator("generate_api")
    expected = generator.render_api_reference()
    current = (DOCS / "api.md").read_text(encoding="utf-8")
    assert current == expected, "docs/api.md is stale: run python docs/generate_api.py"


def public_objects() -> list[str]:
    """The dotted names of every public class and function, and of the public
    methods and properties of the classes, as docs/api.md describes them."""
    generator = load_generator("generate_api")
    found = []
    for package, module, names in generator.public_packages():
        for name in names:
            value = getattr(module, name)
            if not generator.is_described(value):
                continue
            found.append(f"{package}.{name}")
            if isinstance(value, type):
                found += [
                    f"{package}.{name}.{member}"
                    for member, _ in generator.public_members(value)
                ]
    return found


#: numpydoc's checks for a missing docstring (GL08), a missing summary
#: (SS01), and a Parameters section that leaves out a parameter of the
#: signature (PR01) or names one it does not have (PR02).
DOCSTRING_CHECKS = ("GL08", "SS01", "PR01", "PR02")


@pytest.mark.parametrize("name", public_objects())
def test_public_docstring(name):
    """Each public name has a summary and documents exactly its parameters.

    A dataclass documents its fields, which are its parameters, under
    Attributes (numpydoc's place for them) instead of Parameters.
    """
    from numpydoc.docscrape import NumpyDocString
    from numpydoc.validate import Validator, validate

    errors = [
        (code, message)
        for code, message in validate(name)["errors"]
        if code in DOCSTRING_CHECKS
    ]
    value = Validator._load_obj(name)
    if dataclasses.is_dataclass(value) and isinstance(value, type):
        documented = [
            item.name
            for item in NumpyDocString(inspect.getdoc(value) or "")["Attributes"]
        ]
        if documented == [field.name for field in dataclasses.fields(value)]:
            errors = [(code, message) for code, message in errors if code != "PR01"]
    assert not errors, f"{name}: {errors}"
