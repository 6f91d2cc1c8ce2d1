"""A batch of images read in order: described on a pool of threads, reported.

Images are read and described on a pool of threads (OpenCV releases the GIL
while it decodes and extracts), one OpenCV thread per job, so results do not
depend on the number of jobs; learned features are decoded on the threads and
described in batches on the device (:mod:`vlad.images._learned`). A file that
cannot be read is skipped with a warning and listed in the
:class:`BatchReport`; an image without keypoints keeps its place with no
descriptors, so its VLAD vector is zero.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

import numpy as np

from vlad.core._pool import Progress
from vlad.errors import VladError
from vlad.images._describe import describe_files
from vlad.images._extractors import Extractor, checked_widths
from vlad.images._files import ImageFile, ImageReadError, walk_images

__all__ = [
    "BatchReport",
    "Features",
    "PathOrPaths",
    "check_any_read",
    "extract_in_order",
    "keep_readable",
    "path_list",
    "readable_descriptors",
    "walk_batch",
]

logger = logging.getLogger(__name__)

PathOrPaths = str | os.PathLike | Sequence[str | os.PathLike]
#: Keypoints ``(L, 4)`` and descriptors ``(L, 128)`` of one image.
Features = tuple[np.ndarray, np.ndarray]


@dataclasses.dataclass
class BatchReport:
    """What became of the images of a batch.

    Attributes
    ----------
    n_found : int
        Images found in the inputs, and sub-folders that could not be walked
        (so ``n_found == len(names) + len(skipped)``).
    names : list of str
        Images that have a row in the result, in row order.
    skipped : dict of str to str
        Images that could not be read, and sub-folders (named with a final
        ``/``) that could not be listed or loop back, and why (one line each).
    empty : list of str
        Images among ``names`` without descriptors (their vectors are zero).
    source : Path or None
        The descriptors file (or folder of shards) the batch was read from;
        None when its images were described.
    """

    n_found: int
    names: list[str]
    skipped: dict[str, str]
    empty: list[str]
    source: Path | None = None

    def record(self) -> dict:
        """JSON-serialisable summary, as written to ``vectors.json``."""
        return {
            "n_found": self.n_found,
            "n_images": len(self.names),
            "n_skipped": len(self.skipped),
            "n_empty": len(self.empty),
            "skipped": [
                {"name": name, "reason": reason}
                for name, reason in self.skipped.items()
            ],
            "empty": list(self.empty),
        }


def path_list(inputs: PathOrPaths) -> list:
    """``inputs`` as a list of paths."""
    if isinstance(inputs, (str, os.PathLike)):
        return [inputs]
    return list(inputs)


def walk_batch(
    inputs: PathOrPaths, *, line_breaks: bool = False
) -> tuple[list[ImageFile], BatchReport]:
    """The images of ``inputs`` and a report that lists (and logs) the
    sub-folders that could not be walked (see :func:`walk_images`)."""
    images, problems = walk_images(inputs, line_breaks=line_breaks)
    for name, reason in problems.items():
        logger.warning("skipped %s: %s", name, reason)
    return images, BatchReport(len(images) + len(problems), [], problems, [])


def check_any_read(report: BatchReport, inputs: PathOrPaths) -> None:
    """Raise ``ValueError`` if no image of the batch could be read."""
    if not report.names:
        shown = ", ".join(str(path) for path in path_list(inputs))
        name, reason = next(iter(report.skipped.items()), ("", "none found"))
        raise VladError(
            f"none of the {report.n_found} images in {shown} could be read "
            f"(such as {name}: {reason})"
        )


def keep_readable(
    results: Iterable[tuple[ImageFile, Features | ImageReadError]],
    report: BatchReport,
) -> list[Features]:
    """Keypoints and descriptors of the readable images among ``results``, in
    order.

    Adds their names to ``report.names``, records (and logs) the unreadable ones
    in ``report.skipped`` and those without descriptors in ``report.empty``
    (logged only at debug level: one line for them all is the caller's).
    """
    kept = []
    for image, features in results:
        if isinstance(features, ImageReadError):
            logger.warning("skipped %s: %s", image.name, features.reason)
            report.skipped[image.name] = features.reason
            continue
        descriptors = features[1]
        if len(descriptors) == 0:
            # One line for them all comes with the report (report.empty).
            logger.debug("no keypoints in %s", image.name)
            report.empty.append(image.name)
        logger.debug("%s: %d descriptors", image.name, len(descriptors))
        report.names.append(image.name)
        kept.append(features)
    return kept


def extract_in_order(
    images: Sequence[ImageFile],
    options: Extractor,
    n_jobs: int | None,
    progress: Progress | None,
    *,
    n_features: int | None = None,
) -> Iterator[tuple[ImageFile, Features | ImageReadError]]:
    """Each image and its keypoints and descriptors (or the error that kept
    it from being read), in order, on ``n_jobs`` threads (see
    :func:`vlad.images._describe.describe_files`); ``ValueError`` at the
    first image whose descriptors are not ``n_features`` wide (the
    codebook's), or as wide as the first image's when None."""
    results = describe_files(images, options, n_jobs, progress)
    whose = "the codebook's" if n_features else ""
    return checked_widths(results, n_features, options.kind, whose)


def readable_descriptors(
    results: Iterable[tuple[ImageFile, Features | ImageReadError]],
    report: BatchReport,
) -> Iterator[np.ndarray]:
    """The descriptors of each readable image of ``results``, as
    :func:`keep_readable` reports them, one image at a time."""
    for result in results:
        for _, descriptors in keep_readable([result], report):
            yield descriptors
