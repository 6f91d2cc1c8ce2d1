"""``vlad info``: what any file or folder vlad writes holds."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import click

from vlad._info import describe_file
from vlad.cli._reporting import library_errors, printable

__all__ = ["info"]


@click.command(short_help="Show what a file or folder vlad wrote holds.")
@click.argument("file", type=click.Path(exists=True, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
def info(file: Path, as_json: bool) -> None:
    """Show what FILE holds: a codebook or descriptor sets (.npz), vectors
    (.npy, or the .names.txt and .json beside it, or a folder of shards), an
    index folder (vlad index, VLAD or ASMK), search results (.json, .csv or
    pairs .txt), an evaluation (vlad evaluate --json), a page (--html) or its
    folder, a picture (vlad show-matches), or hloc's local or global features
    (.h5).

    The file, its kind, shapes and fingerprint are what vlad computes, never
    what the file's record claims; control characters in names and records
    are shown escaped.

    \b
    Example:
        vlad info codebook.npz
    """
    with library_errors():
        summary = describe_file(file)
    if as_json:
        # JSON escapes control characters itself ("\u001b").
        click.echo(json.dumps(summary, indent=2))
    else:
        for line in _lines(summary):
            click.echo(printable(line))


def _lines(summary: dict, indent: str = "") -> Iterator[str]:
    """``key: value`` lines, nested dicts indented below their key."""
    for key, value in summary.items():
        if isinstance(value, dict) and value:
            yield f"{indent}{key}:"
            yield from _lines(value, indent + "  ")
        elif isinstance(value, list) and any(isinstance(v, dict) for v in value):
            yield f"{indent}{key}:"
            for item in value:
                if isinstance(item, dict):
                    item = ", ".join(f"{k}: {v}" for k, v in item.items())
                yield f"{indent}  - {item}"
        elif isinstance(value, list):
            yield f"{indent}{key}: " + (", ".join(map(str, value)) or "none")
        else:
            yield f"{indent}{key}: {'none' if value is None or value == {} else value}"
