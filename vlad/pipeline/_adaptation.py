"""A codebook adapted to image folders, the images described as they are read.

Memory holds one image's descriptors and the per-centre sums, never every
image's descriptors.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping

from vlad.core._adaptation import CodebookAdapter
from vlad.core._codebook import Codebook
from vlad.core._pool import Progress
from vlad.formats._descriptor_files import descriptor_file_in
from vlad.images._extractors import check_same_kind, extractor_for_codebook
from vlad.pipeline._batch import (
    BatchReport,
    PathOrPaths,
    check_any_read,
    extract_in_order,
    readable_descriptors,
    walk_batch,
)
from vlad.pipeline._extraction import read_descriptor_sets

__all__ = ["adapt_codebook_to_images"]


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
        As in :func:`vlad.pipeline.read_descriptor_sets`.
    codebook : Codebook or path-like
        A codebook or a file written by :meth:`Codebook.save`.
    descriptor_options : mapping, optional
        Options of :class:`vlad.SiftOptions` (or of
        :class:`vlad.images.LearnedOptions`) that replace the codebook's
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
        :func:`vlad.pipeline.read_descriptor_sets`.

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
        images, report = walk_batch(inputs)
        results = extract_in_order(
            images, options, n_jobs, progress, n_features=codebook.n_features
        )
        for descriptors in readable_descriptors(results, report):
            adapter.add(descriptors)
        check_any_read(report, inputs)
        record = options.record()
    adapted = adapter.adapted()
    adapted.metadata["descriptor"] = record
    return adapted, report
