"""What the shard kinds of image folders share: a shard's images, their
identities (hashed into its key), their stream of descriptors, and the
manifest's counts of the images read, skipped and empty."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence

from vlad.core._pool import Progress
from vlad.images._extractors import Extractor
from vlad.images._files import ImageFile
from vlad.pipeline._batch import (
    BatchReport,
    PathOrPaths,
    check_any_read,
    extract_in_order,
)
from vlad.pipeline._shard_runs import ShardKind, ShardRun

__all__ = ["ImageShardKind", "image_identities"]


class ImageShardKind(ShardKind):
    """A kind of shard made from images described by ``extractor``.

    Subclasses set ``inputs`` (the folders and files walked), ``walk_report``
    (the sub-folders that could not be walked), ``extractor`` and
    ``width`` (the descriptors' width every image must have, or None).
    """

    inputs: PathOrPaths
    walk_report: BatchReport
    extractor: Extractor
    width: int | None

    def identities(self, items: list[ImageFile]) -> list:
        """Each image's name, size and modification time."""
        return image_identities(items)

    def stream(
        self,
        items: Sequence[ImageFile],
        n_jobs: int | None,
        progress: Progress | None,
    ) -> Iterator:
        """Each image and its features (or the error that kept it from being
        read), in order, on ``n_jobs`` threads."""
        return extract_in_order(
            items, self.extractor, n_jobs, progress, n_features=self.width
        )

    def batch_report(self, run: ShardRun) -> BatchReport:
        """What became of the run's images: those of every shard, in order,
        and the sub-folders that could not be walked.

        Raises
        ------
        ValueError
            None of the images could be read.
        """
        skipped = dict(self.walk_report.skipped)
        for shard in run.shards:
            skipped.update((item["name"], item["reason"]) for item in shard["skipped"])
        report = BatchReport(
            self.walk_report.n_found,
            [name for shard in run.shards for name in shard["names"]],
            skipped,
            [name for shard in run.shards for name in shard["empty"]],
        )
        check_any_read(report, self.inputs)
        return report

    def image_counts(self, run: ShardRun) -> tuple[list[int], dict]:
        """The images each shard holds, and the manifest's fields that count
        the images found, read, skipped and empty.

        Raises
        ------
        ValueError
            None of the images could be read.
        """
        counts = self.batch_report(run).record()
        return [len(shard["names"]) for shard in run.shards], counts


def image_identities(images: list[ImageFile]) -> list:
    """Each image's name, size and modification time (None if gone)."""
    identities = []
    for image in images:
        try:
            status = os.stat(image.path)
            identities.append([image.name, status.st_size, status.st_mtime_ns])
        except OSError:
            identities.append([image.name, None, None])
    return identities
