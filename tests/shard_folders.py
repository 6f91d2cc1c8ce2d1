"""Folders of shards in the tests: their files' bytes, one shard's file, and
runs interrupted after their first shard."""

from __future__ import annotations

from pathlib import Path

__all__ = ["folder_bytes", "interrupt_after_the_first_shard", "shard_file"]


def folder_bytes(folder: Path) -> dict[str, bytes]:
    """Every file of a folder and its bytes, by name."""
    return {path.name: path.read_bytes() for path in sorted(folder.iterdir())}


def shard_file(folder: Path, index: int, suffix: str) -> Path:
    """The one file of shard ``index`` whose name ends in ``suffix``."""
    (path,) = folder.glob(f"part-{index:05d}-????????????????{suffix}")
    return path


def interrupt_after_the_first_shard(monkeypatch) -> None:
    """Make every run write its first shard, then stop as Ctrl-C stops it
    (``KeyboardInterrupt``) before writing any other; ``monkeypatch.undo()``
    lets runs finish again."""
    from vlad.formats._shards import ShardWriter

    write = ShardWriter.write

    def interrupted_after_the_first(writer, index, *args, **kwargs):
        if index > 0:
            raise KeyboardInterrupt
        write(writer, index, *args, **kwargs)

    monkeypatch.setattr(ShardWriter, "write", interrupted_after_the_first)
