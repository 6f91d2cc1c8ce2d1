"""What the scripts that generate pages share: write the page, or with
``--check`` say whether it is up to date (docs/generate_cli.py,
docs/generate_api.py)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path


def write_or_check(
    page: Path,
    render: Callable[[], str],
    *,
    script: str,
    source: str,
    argv: list[str] | None = None,
) -> int:
    """Rewrite ``page`` with ``render()`` when it differs, or with ``--check``
    write nothing and return 1 when it differs.

    Parameters
    ----------
    page : Path
        The generated page.
    render : callable
        Returns the page's text.
    script : str
        The generating script's file name, for the stale page's message.
    source : str
        What the page is made from, for ``--help``.
    argv : list of str, optional
        The command line's arguments (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        The exit status: 0, or 1 for a stale page with ``--check``.
    """
    parser = argparse.ArgumentParser(description=f"Write docs/{page.name}.")
    parser.add_argument(
        "--check",
        action="store_true",
        help=f"write nothing; exit 1 when docs/{page.name} differs from {source}",
    )
    arguments = parser.parse_args(argv)
    expected = render()
    current = page.read_text(encoding="utf-8") if page.is_file() else None
    if arguments.check:
        if current != expected:
            print(f"{page} is stale: run python docs/{script}", file=sys.stderr)
            return 1
        return 0
    if current != expected:
        page.write_text(expected, encoding="utf-8")
        print(f"wrote {page}", file=sys.stderr)
    return 0
