"""The distribution's metadata, as pyproject.toml declares it: the project's
links point into its repository, at files that exist."""

from __future__ import annotations

from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")  # Python 3.11

ROOT = Path(__file__).resolve().parents[1]


def project() -> dict:
    with open(ROOT / "pyproject.toml", "rb") as file:
        return tomllib.load(file)["project"]


def test_the_links_are_the_repository_s_files():
    urls = project()["urls"]
    assert sorted(urls) == ["Changelog", "Documentation", "Homepage", "Source"]
    source = urls["Source"]
    assert source.startswith("https://") and urls["Homepage"] == source
    for name, path in [
        ("Documentation", "docs/index.md"),
        ("Changelog", "CHANGELOG.md"),
    ]:
        assert urls[name] == f"{source}/blob/main/{path}"
        assert (ROOT / path).is_file()


def test_the_repository_is_named_after_the_distribution():
    assert project()["urls"]["Source"].rsplit("/", 1)[1] == project()["name"]
