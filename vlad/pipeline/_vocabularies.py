"""Codebooks fitted on image folders: one vocabulary, or several at once.

The images are read once, as a stream (see :mod:`vlad.pipeline._batch`), and a
descriptors file or folder an image at a time: memory holds one image's
descriptors and one uniform sample per vocabulary, never every image's
descriptors (all are kept when fewer).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

import numpy as np

from vlad.core._codebook import DEFAULT_N_CLUSTERS, Codebook, fit_codebook
from vlad.core._descriptors import DescriptorSets
from vlad.core._kmeans_progress import part_progress
from vlad.core._pool import Progress
from vlad.core._sampling import DescriptorReservoir
from vlad.core._validation import check_positive_int, check_seed
from vlad.core._vocabularies import fit_vocabularies, stack_vocabularies
from vlad.formats._descriptor_files import descriptor_file_in
from vlad.images._extractors import resolve_extractor
from vlad.pipeline._batch import (
    BatchReport,
    PathOrPaths,
    check_any_read,
    extract_in_order,
    readable_descriptors,
    walk_batch,
)
from vlad.pipeline._extraction import read_descriptor_sets

__all__ = ["fit_codebook_to_images", "fit_vocabularies_to_images"]


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
    kmeans_progress: Progress | None = None,
) -> tuple[Codebook, BatchReport]:
    """Fit a codebook on the descriptors of images (or of a descriptors file).

    Images are described as they are read, their descriptors kept in a uniform
    sample (:class:`vlad.core.DescriptorReservoir`), so memory holds
    the sample, never every image's descriptors (all are kept when fewer).
    :func:`fit_vocabularies_to_images` of one vocabulary.

    Parameters
    ----------
    inputs : path-like or sequence of path-like
        As in :func:`vlad.pipeline.read_descriptor_sets`.
    n_clusters, seed, kmeans_options
        As in :func:`vlad.fit_codebook` (a dict of keywords); ``seed`` also samples.
    sample : int or None, default=100_000
        Descriptors k-means is fitted on, a uniform sample; None: all, in memory.
    per_image : int or None, default=None
        Offer at most this many descriptors of each image (drawn at random)
        to the sample; None offers all.
    descriptor_options, extractor, n_jobs, progress
        As in :func:`vlad.extract_images`, for images; ``n_jobs`` also for
        k-means.
    kmeans_progress : callable, optional
        The ``progress`` of :func:`vlad.fit_codebook`: k-means iterations.

    Returns
    -------
    codebook : Codebook
        ``metadata["descriptor"]`` records how the descriptors were made, so that
        :func:`vlad.encode_images` makes the same kind.
    report : BatchReport

    See Also
    --------
    vlad.fit_codebook : The same on descriptors in memory.
    """
    return fit_vocabularies_to_images(
        inputs,
        n_clusters,
        1,
        sample=sample,
        per_image=per_image,
        seed=seed,
        descriptor_options=descriptor_options,
        kmeans_options=kmeans_options,
        extractor=extractor,
        n_jobs=n_jobs,
        progress=progress,
        kmeans_progress=kmeans_progress,
    )


def fit_vocabularies_to_images(
    inputs: PathOrPaths,
    n_clusters: int = DEFAULT_N_CLUSTERS,
    n_vocabularies: int = 2,
    *,
    sample: int | None = 100_000,
    per_image: int | None = None,
    seed: int | None = 0,
    descriptor_options: Mapping | None = None,
    extractor: Callable | str | None = None,
    kmeans_options: Mapping | None = None,
    n_jobs: int | None = None,
    progress: Progress | None = None,
    kmeans_progress: Progress | None = None,
) -> tuple[Codebook, BatchReport]:
    """Fit several vocabularies on the descriptors of images in one pass.

    Vocabulary ``i`` is fitted as :func:`fit_codebook_to_images` fits with
    ``seed + i``: on its own uniform sample (one reservoir per vocabulary, all
    filled from one reading of the images) and with its own k-means start, so
    it is that function's codebook.

    Parameters
    ----------
    inputs, n_clusters, sample, per_image, descriptor_options, extractor, \
kmeans_options, n_jobs, progress
        As in :func:`fit_codebook_to_images`. Memory holds ``n_vocabularies``
        samples of ``sample`` descriptors.
    n_vocabularies : int, default=2
        Number of vocabularies, each of ``n_clusters`` centres.
    seed : int or None, default=0
        Seed of vocabulary 0; vocabulary ``i`` has ``seed + i``.
    kmeans_progress : callable, optional
        As in :func:`fit_codebook_to_images`: the iterations of every
        vocabulary, one after the other.

    Returns
    -------
    codebook : Codebook
        The vocabularies stacked (see :func:`vlad.stack_vocabularies`); with
        one vocabulary, that vocabulary's codebook itself.
    report : BatchReport

    See Also
    --------
    vlad.fit_vocabularies : The same on descriptors in memory.
    """
    n_vocabularies = check_positive_int(n_vocabularies, "n_vocabularies")
    seed = check_seed(seed)
    # The seed given (and its successors) wins over one in kmeans_options.
    kmeans = {
        field: value
        for field, value in (kmeans_options or {}).items()
        if field != "seed"
    } | {"n_jobs": n_jobs}
    if sample is None:
        sets, report = read_descriptor_sets(
            inputs,
            descriptor_options,
            extractor=extractor,
            n_jobs=n_jobs,
            progress=progress,
        )
        codebook = fit_vocabularies(
            sets,
            n_clusters,
            n_vocabularies,
            seed=seed,
            sample=None,
            progress=kmeans_progress,
            **kmeans,
        )
        return codebook, report
    sample = check_positive_int(sample, "sample")
    seeds = [None if seed is None else seed + index for index in range(n_vocabularies)]
    if descriptor_file_in(inputs) is not None:
        sets, report = read_descriptor_sets(
            inputs, descriptor_options, extractor=extractor, lazy=True
        )
        blocks: Iterable[np.ndarray] = (sets[index] for index in range(len(sets)))
        metadata = sets.metadata
    else:
        options = resolve_extractor(descriptor_options, extractor)
        images, report = walk_batch(inputs)
        results = extract_in_order(images, options, n_jobs, progress)
        blocks = readable_descriptors(results, report)
        metadata = options.record()
    reservoirs: list[DescriptorReservoir] = []
    for descriptors in blocks:
        if not reservoirs:  # a callable's width is known from its first result
            reservoirs = [
                DescriptorReservoir(
                    sample, descriptors.shape[1], per_image=per_image, seed=each
                )
                for each in seeds
            ]
        for reservoir in reservoirs:
            reservoir.add(descriptors)
    check_any_read(report, inputs)
    codebooks = [
        fit_codebook(
            DescriptorSets.from_list(
                [reservoir.sample], n_features=reservoir.n_features, metadata=metadata
            ),
            n_clusters,
            sample=sample,
            progress=part_progress(kmeans_progress, index, n_vocabularies),
            **{**kmeans, "seed": each},
        )
        for index, (reservoir, each) in enumerate(zip(reservoirs, seeds, strict=True))
    ]
    if n_vocabularies == 1:
        return codebooks[0], report
    return stack_vocabularies(codebooks), report
