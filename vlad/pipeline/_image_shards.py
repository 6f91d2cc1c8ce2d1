"""What the shard kinds of image folders share: a shard's images, their
identities (hashed into its key), their stream of descriptors, and the
manifest's counts of the images read, skipped and empty."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence

from vlad.core._pool import Progress
from vlad.errors import VladError
from vlad.images._extractors import Extractor
from vlad.images._files import ImageFile
from vlad.pipeline._batch import BatchReport, PathOrPaths, extract_in_order, path_list
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

    def image_counts(self, run: ShardRun) -> tuple[list[int], dict]:
        """The images each shard holds, and the manifest's fields that count
        the images found, read, skipped and empty.

        Raises
        ------
        ValueError
            None of the images could be read.
        """
        n_images = [len(shard["names"]) for shard in run.shards]
        if not sum(n_images):
            shown = ", ".join(str(path) for path in path_list(self.inputs))
            raise VladError(
                f"none of the {run.n_items} images in {shown} could be read"
            )
        skipped = [
            {"name": name, "reason": reason}
            for name, reason in self.walk_report.skipped.items()
        ] + [entry for shard in run.shards for entry in shard["skipped"]]
        empty = [name for shard in run.shards for name in shard["empty"]]
        return n_images, {
            "n_found": self.walk_report.n_found,
            "n_images": sum(n_images),
            "n_skipped": len(skipped),
            "n_empty": len(empty),
            "skipped": skipped,
            "empty": empty,
        }


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
