"""Many images at once: descriptors, codebooks and VLAD vectors of image folders.

Images are read and described on a pool of threads (OpenCV releases the GIL
while it decodes and extracts), one OpenCV thread per job, so results do not
depend on the number of jobs. A file that cannot be read is skipped with a
warning and listed in the :class:`BatchReport`; an image without keypoints
keeps its place with no descriptors, so its VLAD vector is zero.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import logging
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

import numpy as np

from vlad._version import __version__
from vlad.core.aggregators import require_aggregator
from vlad.core.chunked_encoding import encode_in_chunks
from vlad.core.codebook import DEFAULT_N_CLUSTERS, Codebook, fit_codebook
from vlad.core.descriptors import DescriptorSets
from vlad.core.encoding import encode
from vlad.core.options import EncodingOptions
from vlad.core.parallel import resolve_n_jobs
from vlad.core.sampling import DescriptorReservoir
from vlad.formats.descriptor_files import descriptor_file_in, read_descriptor_file
from vlad.images.extractors import (
    Extractor,
    check_same_kind,
    checked_widths,
    descriptor_options_for,
    extractor_for_codebook,
    resolve_extractor,
)
from vlad.images.files import ImageFile, ImageReadError, walk_images
from vlad.images.pool import Progress, describe_image_with_keypoints, map_in_order

__all__ = [
    "ENCODE_CHUNK_IMAGES",
    "BatchReport",
    "EncodedImages",
    "check_any_read",
    "check_same_kind",
    "descriptor_options_for",
    "encode_images",
    "extract_images",
    "extract_in_order",
    "fit_codebook_to_images",
    "keep_readable",
    "path_list",
    "read_descriptor_sets",
    "vectors_record",
    "walk_batch",
]

logger = logging.getLogger(__name__)

#: Images whose descriptors :func:`encode_images` holds in memory at once (at the
#: default 2000 keypoints, up to 1 MB each).
ENCODE_CHUNK_IMAGES = 64
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
    """

    n_found: int
    names: list[str]
    skipped: dict[str, str]
    empty: list[str]

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


@dataclasses.dataclass
class EncodedImages:
    """VLAD vectors of a batch of images and how they were made.

    Attributes
    ----------
    vectors : ndarray of shape (n_images, n_clusters * n_features)
        One row per name of ``report.names``.
    report : BatchReport
    codebook : Codebook
    inputs : list of str
        The folders and files encoded.
    descriptor : dict
        How the descriptors were made (``DescriptorSets.metadata``).
    encoding : EncodingOptions
        How the vectors were encoded.
    """

    vectors: np.ndarray
    report: BatchReport
    codebook: Codebook
    inputs: list[str]
    descriptor: dict
    encoding: EncodingOptions

    @property
    def names(self) -> list[str]:
        """Image name of each row of ``vectors``."""
        return self.report.names

    def record(self) -> dict:
        """JSON-serialisable description, as written to ``vectors.json``."""
        return {
            **vectors_record(
                len(self.vectors),
                self.inputs,
                self.codebook,
                self.descriptor,
                self.encoding,
            ),
            **self.report.record(),
        }


def vectors_record(
    n_rows: int,
    inputs: PathOrPaths,
    codebook: Codebook,
    descriptor: Mapping | None,
    encoding: EncodingOptions,
) -> dict:
    """What a file or folder of VLAD vectors records of how they were made
    (format, shape, inputs, codebook, options), less the batch's report."""
    return {
        "format": "vlad vectors",
        "format_version": 1,
        "vlad_version": __version__,
        "shape": [n_rows, codebook.n_clusters * codebook.n_features],
        "inputs": [str(path) for path in path_list(inputs)],
        "codebook": {
            "fingerprint": codebook.fingerprint,
            "n_clusters": codebook.n_clusters,
            "n_features": codebook.n_features,
        },
        "descriptor": descriptor,
        "encoding": encoding.record(),
    }


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
        Folders (walked recursively, see :func:`vlad.images.files.find_images`) and
        image files.
    descriptor_options : mapping, optional
        Keyword arguments of :class:`vlad.images.sift.SiftOptions` (``features``,
        ``root_sift``, ``dense``, ``max_side``, ``max_keypoints``,
        ``min_keypoints``, ``max_pixels``); defaults for those left out.
    extractor : callable or str, optional
        Describe images with this instead of OpenCV: a callable from an RGB
        ``uint8`` array of shape (height, width, 3) to a floating-point array
        of shape (L, F), or its ``"package.module:function"`` name (see
        :mod:`vlad.images.callables`). An image on which it raises is skipped
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
        original image (OpenCV's features only).
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
        raise ValueError(
            f"descriptor options ({', '.join(sorted(descriptor_options))}) apply to "
            f"images, not to the descriptors already in {descriptor_file}"
        )
    sets = read_descriptor_file(descriptor_file, lazy=lazy)
    empty = [
        name
        for name, length in zip(sets.names, sets.lengths, strict=True)
        if length == 0
    ]
    return sets, BatchReport(len(sets), list(sets.names), {}, empty)


def fit_codebook_to_images(
    inputs: PathOrPaths,
    n_clusters: int = DEFAULT_N_CLUSTERS,
    *,
    sample: int | None = 100_000,
    per_image: int | None = None,
    seed: int | None = 0,
    descriptor_options: Mapping | None = None,
    kmeans_options: Mapping | None = None,
    extractor: Callable | str | None = None,
    n_jobs: int | None = None,
    progress: Progress | None = None,
) -> tuple[Codebook, BatchReport]:
    """Fit a codebook on the descriptors of images (or of a descriptors file).

    Images are described as they are read, their descriptors kept in a uniform
    sample (:class:`vlad.core.sampling.DescriptorReservoir`), so memory holds
    the sample, never every image's descriptors (all are kept when fewer).

    Parameters
    ----------
    inputs : path-like or sequence of path-like
        As in :func:`read_descriptor_sets`.
    n_clusters, seed, kmeans_options
        As in :func:`vlad.fit_codebook` (a dict of keywords); ``seed`` also samples.
    sample : int or None, default=100_000
        Descriptors k-means is fitted on, a uniform sample; None: all, in memory.
    per_image : int or None, default=None
        Offer at most this many descriptors of each image (drawn at random)
        to the sample; None offers all.
    descriptor_options, extractor, n_jobs, progress
        As in :func:`extract_images`, for images; ``n_jobs`` also for k-means.

    Returns
    -------
    codebook : Codebook
        ``metadata["descriptor"]`` records how the descriptors were made, so that
        :func:`encode_images` makes the same kind.
    report : BatchReport

    See Also
    --------
    vlad.fit_codebook : The same on descriptors in memory.
    """
    kmeans = {**(kmeans_options or {}), "seed": seed, "n_jobs": n_jobs}
    if sample is None:
        sets, report = read_descriptor_sets(
            inputs,
            descriptor_options,
            extractor=extractor,
            n_jobs=n_jobs,
            progress=progress,
        )
        return fit_codebook(sets, n_clusters, sample=None, **kmeans), report
    if descriptor_file_in(inputs) is not None:
        sets, report = read_descriptor_sets(
            inputs, descriptor_options, extractor=extractor, lazy=True
        )
        blocks: Iterable[np.ndarray] = (sets[i] for i in range(len(sets)))
        metadata = sets.metadata
    else:
        options = resolve_extractor(descriptor_options, extractor)
        images, report = walk_batch(inputs)
        results = extract_in_order(images, options, n_jobs, progress)
        blocks = (
            descriptors
            for chunk in _chunks(results, ENCODE_CHUNK_IMAGES)
            for _, descriptors in keep_readable(chunk, report)
        )
        metadata = options.record()
    reservoir = None
    for descriptors in blocks:
        if reservoir is None:  # a callable's width is known from its first result
            reservoir = DescriptorReservoir(
                sample, descriptors.shape[1], per_image=per_image, seed=seed
            )
        reservoir.add(descriptors)
    check_any_read(report, inputs)
    training = DescriptorSets.from_list(
        [reservoir.sample], n_features=reservoir.n_features, metadata=metadata
    )
    return fit_codebook(training, n_clusters, sample=sample, **kmeans), report


def encode_images(
    inputs: PathOrPaths,
    codebook: Codebook | str | os.PathLike,
    options: EncodingOptions | None = None,
    *,
    descriptor_options: Mapping | None = None,
    extractor: Callable | str | None = None,
    n_jobs: int | None = None,
    progress: Progress | None = None,
    **settings,
) -> EncodedImages:
    """VLAD vectors of every image in folders and files (or of a descriptors file).

    Descriptors are made the way the codebook's were (as recorded in
    ``codebook.metadata["descriptor"]``), except for the options given, and
    encoded a chunk of :data:`ENCODE_CHUNK_IMAGES` images at a time, so memory
    holds the vectors but never every image's descriptors.

    Parameters
    ----------
    inputs : path-like or sequence of path-like
        As in :func:`read_descriptor_sets`.
    codebook : Codebook or path-like
        A codebook or a file written by :meth:`Codebook.save`.
    options : EncodingOptions, optional
        The aggregator and the normalisation, as in :func:`vlad.encode`.
    descriptor_options : mapping, optional
        Options of :class:`vlad.SiftOptions` that replace the codebook's.
        ``max_side``, ``max_keypoints`` and ``min_keypoints`` may differ from
        the codebook's; ``features``, ``root_sift`` and ``dense`` may not.
    extractor : callable or str, optional
        The callable the codebook's descriptors were made with (see
        :func:`extract_images`); required for such a codebook, refused for
        another's.
    n_jobs, progress
        As in :func:`extract_images`; ``n_jobs`` also bounds the threads of
        :func:`vlad.encode`.
    **settings
        Fields of :class:`EncodingOptions` replacing those of ``options``.

    Returns
    -------
    EncodedImages
        ``vectors`` of shape (n_images, n_clusters * n_features), in row order of
        ``names``; an image without descriptors has a zero row.

    Raises
    ------
    ValueError
        Descriptors of another kind or dimension than the codebook's, a file
        that is not a codebook, bad settings, or as :func:`read_descriptor_sets`.
    ImportError
        The aggregator's optional dependency is not installed.

    See Also
    --------
    vlad.encode : The same on descriptors in memory.

    Examples
    --------
    >>> import vlad
    >>> codebook, _ = vlad.fit_codebook_to_images("data", 4, n_jobs=1)
    >>> result = vlad.encode_images("data", codebook, power=0.5, n_jobs=1)
    >>> result.vectors.shape, result.names[0], result.encoding.power
    ((8, 512), 'astronaut.jpg', 0.5)
    """
    # Bad settings, n_jobs or a missing optional dependency fail here, before
    # any image is read.
    options = EncodingOptions.resolve(options, **settings)
    resolve_n_jobs(n_jobs)
    if isinstance(options.aggregator, str):
        require_aggregator(options.aggregator)
    if not isinstance(codebook, Codebook):
        codebook = Codebook.load(codebook)
    input_list = [str(path) for path in path_list(inputs)]
    if descriptor_file_in(inputs) is not None:
        sets, report = read_descriptor_sets(
            inputs, descriptor_options, extractor=extractor, lazy=True
        )
        check_same_kind(sets.metadata, codebook)
        vectors = encode_in_chunks(
            sets, codebook, options, chunk_images=ENCODE_CHUNK_IMAGES, n_jobs=n_jobs
        )
        return EncodedImages(
            vectors, report, codebook, input_list, sets.metadata, options
        )
    sift_options = extractor_for_codebook(codebook, descriptor_options, extractor)
    images, report = walk_batch(inputs)
    # SIFT descriptors are float32, and so are their vectors.
    vectors = np.zeros(
        (len(images), codebook.n_clusters * codebook.n_features), dtype=np.float32
    )
    results = extract_in_order(
        images, sift_options, n_jobs, progress, n_features=codebook.n_features
    )
    for chunk in _chunks(results, ENCODE_CHUNK_IMAGES):
        start = len(report.names)
        blocks = [descriptors for _, descriptors in keep_readable(chunk, report)]
        if blocks:
            sets = DescriptorSets.from_list(blocks, n_features=codebook.n_features)
            vectors[start : start + len(blocks)] = encode(
                sets, codebook, options, n_jobs=n_jobs
            )
    check_any_read(report, inputs)
    return EncodedImages(
        vectors[: len(report.names)],
        report,
        codebook,
        input_list,
        sift_options.record(),
        options,
    )


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
        raise ValueError(
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


def _describe_file(
    image: ImageFile, *, options: Extractor
) -> tuple[ImageFile, Features | ImageReadError]:
    """An image and its keypoints and descriptors, or the error that kept it
    from being read."""
    try:
        return image, describe_image_with_keypoints(image.path, options)
    except ImageReadError as error:
        return image, error


def extract_in_order(
    images: Sequence[ImageFile],
    options: Extractor,
    n_jobs: int | None,
    progress: Progress | None,
    *,
    n_features: int | None = None,
) -> Iterator[tuple[ImageFile, Features | ImageReadError]]:
    """:func:`_describe_file` of each image, in order, on ``n_jobs`` threads;
    ``ValueError`` at the first image whose descriptors are not ``n_features``
    wide (the codebook's), or as wide as the first image's when None."""
    describe = functools.partial(_describe_file, options=options)
    results = map_in_order(describe, images, n_jobs, progress)
    whose = "the codebook's" if n_features else ""
    return checked_widths(results, n_features, options.kind, whose)


def _chunks(items: Iterable, size: int) -> Iterator[list]:
    """Consecutive lists of ``size`` items (the last may be shorter)."""
    iterator = iter(items)
    while chunk := list(itertools.islice(iterator, size)):
        yield chunk
