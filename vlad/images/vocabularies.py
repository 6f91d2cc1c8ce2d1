"""Vocabularies from image folders: adapted to them, or several fitted at once.

Both read the images once, as a stream (see :mod:`vlad.images.batch`): memory
holds one image's descriptors and the per-centre sums (adaptation) or one
uniform sample per vocabulary (fitting), never every image's descriptors.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping

import numpy as np

from vlad.core.adaptation import CodebookAdapter
from vlad.core.codebook import DEFAULT_N_CLUSTERS, Codebook, fit_codebook
from vlad.core.descriptors import DescriptorSets
from vlad.core.sampling import DescriptorReservoir
from vlad.core.validation import check_positive_int, check_seed
from vlad.core.vocabularies import fit_vocabularies, stack_vocabularies
from vlad.formats.descriptor_files import descriptor_file_in
from vlad.images.batch import (
    BatchReport,
    PathOrPaths,
    check_any_read,
    check_same_kind,
    extract_in_order,
    keep_readable,
    read_descriptor_sets,
    walk_batch,
)
from vlad.images.extractors import (
    Extractor,
    extractor_for_codebook,
    resolve_extractor,
)
from vlad.images.pool import Progress

__all__ = ["adapt_codebook_to_images", "fit_vocabularies_to_images"]


def adapt_codebook_to_images(
    inputs: PathOrPaths,
    codebook: Codebook | str | os.PathLike,
    *,
    descriptor_options: Mapping | None = None,
    extractor: Callable | str | None = None,
    n_jobs: int | None = None,
    progress: Progress | None = None,
) -> tuple[Codebook, BatchReport]:
    """Adapt a codebook to the descriptors of images (or of a descriptors file).

    Each centre moves to the mean of the descriptors nearest to it
    (:func:`vlad.adapt_codebook`), the images described as they are read.

    Parameters
    ----------
    inputs : path-like or sequence of path-like
        As in :func:`vlad.images.batch.read_descriptor_sets`.
    codebook : Codebook or path-like
        A codebook or a file written by :meth:`Codebook.save`.
    descriptor_options : mapping, optional
        Options of :class:`vlad.SiftOptions` that replace the codebook's
        (images are described as the codebook's descriptors were); only for
        images.
    extractor : callable or str, optional
        As in :func:`vlad.extract_images`, for a codebook fitted on such
        descriptors.
    n_jobs, progress
        As in :func:`vlad.extract_images`; ``n_jobs`` also bounds the threads
        of assignment.

    Returns
    -------
    codebook : Codebook
        The adapted codebook (see :meth:`vlad.CodebookAdapter.adapted`), whose
        ``metadata["descriptor"]`` records how these descriptors were made.
    report : BatchReport

    Raises
    ------
    ValueError
        Descriptors of another kind or dimension than the codebook's, no
        image readable, no descriptors at all, or as
        :func:`vlad.images.batch.read_descriptor_sets`.

    See Also
    --------
    vlad.adapt_codebook : The same on descriptors in memory.

    Examples
    --------
    >>> import vlad
    >>> generic = vlad.fit_codebook(vlad.datasets.make_descriptor_sets(20, 50), 4)
    >>> adapted, report = vlad.adapt_codebook_to_images(
    ...     "data", generic, descriptor_options={"max_keypoints": 100}, n_jobs=1
    ... )
    >>> record = adapted.metadata["adaptation"]
    >>> record["from"] == generic.fingerprint, record["n_descriptors"] > 0
    (True, True)
    >>> adapted.n_clusters, len(report.names)
    (4, 8)
    """
    if not isinstance(codebook, Codebook):
        codebook = Codebook.load(codebook)
    adapter = CodebookAdapter(codebook, n_jobs=n_jobs)
    if descriptor_file_in(inputs) is not None:
        sets, report = read_descriptor_sets(
            inputs, descriptor_options, extractor=extractor
        )
        check_same_kind(sets.metadata, codebook)
        adapter.add(sets.descriptors)
        record = sets.metadata or codebook.metadata.get("descriptor") or {}
    else:
        options = extractor_for_codebook(codebook, descriptor_options, extractor)
        report = _stream(
            inputs, options, n_jobs, progress, adapter.add, codebook.n_features
        )
        record = options.record()
    adapted = adapter.adapted()
    adapted.metadata["descriptor"] = record
    return adapted, report


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
) -> tuple[Codebook, BatchReport]:
    """Fit several vocabularies on the descriptors of images in one pass.

    Vocabulary ``i`` is fitted as :func:`vlad.fit_codebook_to_images` fits
    with ``seed + i``: on its own uniform sample (one reservoir per
    vocabulary, all filled from one reading of the images) and with its own
    k-means start, so it is that function's codebook.

    Parameters
    ----------
    inputs, n_clusters, sample, per_image, descriptor_options, extractor, \
kmeans_options, n_jobs, progress
        As in :func:`vlad.fit_codebook_to_images`. Memory holds
        ``n_vocabularies`` samples of ``sample`` descriptors.
    n_vocabularies : int, default=2
        Number of vocabularies, each of ``n_clusters`` centres.
    seed : int or None, default=0
        Seed of vocabulary 0; vocabulary ``i`` has ``seed + i``.

    Returns
    -------
    codebook : Codebook
        The vocabularies stacked (see :func:`vlad.stack_vocabularies`).
    report : BatchReport

    See Also
    --------
    vlad.fit_vocabularies : The same on descriptors in memory.
    """
    n_vocabularies = check_positive_int(n_vocabularies, "n_vocabularies")
    seed = check_seed(seed)
    seeds = [None if seed is None else seed + index for index in range(n_vocabularies)]
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
            **(kmeans_options or {}),
        )
        return codebook, report
    sample = check_positive_int(sample, "sample")
    if descriptor_file_in(inputs) is not None:
        sets, report = read_descriptor_sets(
            inputs, descriptor_options, extractor=extractor
        )
        n_features, metadata = sets.n_features, sets.metadata
        reservoirs = _reservoirs(sample, n_features, per_image, seeds)
        for index in range(len(sets)):
            for reservoir in reservoirs:
                reservoir.add(sets[index])
    else:
        options = resolve_extractor(descriptor_options, extractor)
        metadata = options.record()
        reservoirs = []

        def add(descriptors: np.ndarray) -> None:
            if not reservoirs:  # a callable's width is known from its first result
                reservoirs.extend(
                    _reservoirs(sample, descriptors.shape[1], per_image, seeds)
                )
            for reservoir in reservoirs:
                reservoir.add(descriptors)

        report = _stream(inputs, options, n_jobs, progress, add)
        n_features = reservoirs[0].n_features
    codebooks = [
        fit_codebook(
            DescriptorSets.from_list(
                [reservoir.sample], n_features=n_features, metadata=metadata
            ),
            n_clusters,
            sample=sample,
            seed=vocabulary_seed,
            **(kmeans_options or {}),
        )
        for reservoir, vocabulary_seed in zip(reservoirs, seeds, strict=True)
    ]
    if n_vocabularies == 1:
        return codebooks[0], report
    return stack_vocabularies(codebooks), report


def _reservoirs(
    sample: int, n_features: int, per_image: int | None, seeds: list
) -> list[DescriptorReservoir]:
    """One reservoir per vocabulary, seeded as fit_codebook_to_images seeds its."""
    return [
        DescriptorReservoir(sample, n_features, per_image=per_image, seed=seed)
        for seed in seeds
    ]


def _stream(
    inputs, options: Extractor, n_jobs, progress, consume, n_features=None
) -> BatchReport:
    """Describe the images of ``inputs`` in order, passing each readable one's
    descriptors to ``consume``; the report of the batch (``ValueError`` at an
    image whose descriptors are not ``n_features`` wide)."""
    images, report = walk_batch(inputs)
    results = extract_in_order(images, options, n_jobs, progress, n_features=n_features)
    for descriptors in _readable(results, report):
        consume(descriptors)
    check_any_read(report, inputs)
    return report


def _readable(results, report: BatchReport) -> Iterator[np.ndarray]:
    """The descriptors of each readable image of ``results``, as
    :func:`keep_readable` reports them, one image at a time."""
    for result in results:
        for _, descriptors in keep_readable([result], report):
            yield descriptors
