"""Reading back a folder of shards in the tests: its files' bytes, one
shard's file."""

from __future__ import annotations

from pathlib import Path

__all__ = ["folder_bytes", "shard_file"]


def folder_bytes(folder: Path) -> dict[str, bytes]:
    """Every file of a folder and its bytes, by name."""
    return {path.name: path.read_bytes() for path in sorted(folder.iterdir())}


def shard_file(folder: Path, index: int, suffix: str) -> Path:
    """The one file of shard ``index`` whose name ends in ``suffix``."""
    (path,) = folder.glob(f"part-{index:05d}-????????????????{suffix}")
    return path
