"""Descriptors of many images at once, or read from a descriptors file.

:func:`extract_images` describes every image of folders and files;
:func:`read_descriptor_sets` does that, or reads the descriptors a file or a
folder of shards already holds.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from vlad.core._descriptors import DescriptorSets
from vlad.core._pool import Progress
from vlad.errors import VladError
from vlad.formats._descriptor_files import descriptor_file_in, read_descriptor_file
from vlad.images._extractors import resolve_extractor
from vlad.pipeline._batch import (
    BatchReport,
    PathOrPaths,
    check_any_read,
    extract_in_order,
    keep_readable,
    walk_batch,
)

__all__ = ["extract_images", "read_descriptor_sets"]


def extract_images(
    inputs: PathOrPaths,
    descriptor_options: Mapping | None = None,
    *,
    extractor: Callable | str | None = None,
    n_jobs: int | None = None,
    progress: Progress | None = None,
) -> tuple[DescriptorSets, BatchReport]:
    """Local descriptors (SIFT by default) of every image in folders and files.

    Parameters
    ----------
    inputs : path-like or sequence of path-like
        Folders (walked recursively, see :func:`vlad.images.find_images`) and
        image files.
    descriptor_options : mapping, optional
        Keyword arguments of :class:`vlad.images.SiftOptions` (``features``,
        ``root_sift``, ``dense``, ``max_side``, ``max_keypoints``,
        ``min_keypoints``, ``max_pixels``), or with ``features="aliked"`` of
        :class:`vlad.images.LearnedOptions` (learned features: ``weights``,
        ``device``, ``detection_threshold``...); defaults for those left out.
    extractor : callable or str, optional
        Describe images with this instead of OpenCV: a callable from an RGB
        ``uint8`` array of shape (height, width, 3) to a floating-point array
        of shape (L, F), or its ``"package.module:function"`` name (see
        :mod:`vlad.images._callables`). An image on which it raises is skipped
        and reported; one for which it returns anything else stops the batch.
        ``descriptor_options`` may then hold ``max_pixels`` only.
    n_jobs : int or None, default=None
        Worker threads; None or -1 uses every core (as :func:`vlad.assign`).
        The result does not depend on it.
    progress : callable, optional
        Called as ``progress(n_done, n_total)`` after each image.

    Returns
    -------
    sets : DescriptorSets
        One set per readable image, named as in ``report.names``; ``metadata``
        records ``descriptor_options`` (or the extractor's name); ``keypoints``
        holds where each descriptor was taken, in the pixel coordinates of the
        original image (OpenCV's and learned features; a learned keypoint's
        detection score takes the place of its size).
    report : BatchReport

    Raises
    ------
    FileNotFoundError
        An input does not exist.
    ValueError
        No images in the inputs, none of them readable, or bad options.

    Examples
    --------
    >>> import vlad
    >>> options = {"max_keypoints": 50}
    >>> sets, report = vlad.extract_images("data", options, n_jobs=1)
    >>> len(sets), sets.n_features, report.skipped
    (8, 128, {})
    >>> sets.keypoints_of(0).shape == (len(sets[0]), 4)
    True
    """
    options = resolve_extractor(descriptor_options, extractor)
    images, report = walk_batch(inputs)
    features = keep_readable(
        extract_in_order(images, options, n_jobs, progress), report
    )
    check_any_read(report, inputs)
    keypoints = [block for block, _ in features]
    sets = DescriptorSets.from_list(
        [descriptors for _, descriptors in features],
        report.names,
        n_features=features[0][1].shape[1],
        metadata=options.record(),
        keypoints=None if keypoints[0] is None else keypoints,
    )
    return sets, report


def read_descriptor_sets(
    inputs: PathOrPaths,
    descriptor_options: Mapping | None = None,
    *,
    extractor: Callable | str | None = None,
    n_jobs: int | None = None,
    progress: Progress | None = None,
    lazy: bool = False,
) -> tuple[DescriptorSets, BatchReport]:
    """Descriptor sets of images, or read from a descriptors file or folder.

    Parameters
    ----------
    inputs : path-like or sequence of path-like
        Image folders and files (see :func:`extract_images`), or a single
        descriptors file: an ``.npz`` written by :meth:`DescriptorSets.save` or
        ``vlad extract``, or an ``.npy`` of shape (L, F) (one image) or
        (T, L, F) (T images).
    descriptor_options, extractor, n_jobs, progress
        As in :func:`extract_images`; only for images.
    lazy : bool, default=False
        Open a folder of shards or an hloc ``.h5`` without reading it: the
        descriptors are read a shard (an image) at a time when used.

    Returns
    -------
    sets : DescriptorSets
        With keypoints when extracted from images or read from a file that
        holds them.
    report : BatchReport

    Raises
    ------
    ValueError
        Descriptor options given with a descriptors file, a file that holds no
        descriptor sets, or as :func:`extract_images`.
    """
    descriptor_file = descriptor_file_in(inputs)
    if descriptor_file is None:
        return extract_images(
            inputs,
            descriptor_options,
            extractor=extractor,
            n_jobs=n_jobs,
            progress=progress,
        )
    if extractor is not None:
        descriptor_options = {"extractor": extractor, **(descriptor_options or {})}
    if descriptor_options:
        raise VladError(
            f"descriptor options ({', '.join(sorted(descriptor_options))}) apply to "
            f"images, not to the descriptors already in {descriptor_file}"
        )
    sets = read_descriptor_file(descriptor_file, lazy=lazy)
    empty = [
        name
        for name, length in zip(sets.names, sets.lengths, strict=True)
        if length == 0
    ]
    return sets, BatchReport(len(sets), list(sets.names), {}, empty, descriptor_file)
