"""A codebook file from images or descriptors, as ``vlad fit`` writes it:
fitted afresh (one vocabulary or several), or adapted from another codebook."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence

from vlad.core._codebook import DEFAULT_N_CLUSTERS, Codebook
from vlad.core._pool import Progress
from vlad.errors import VladError
from vlad.pipeline._adaptation import adapt_codebook_to_images
from vlad.pipeline._batch import BatchReport
from vlad.pipeline._vocabularies import (
    fit_codebook_to_images,
    fit_vocabularies_to_images,
)

__all__ = ["write_adapted_codebook", "write_codebook"]

PathOrPaths = str | os.PathLike | Sequence[str | os.PathLike]


def write_codebook(
    inputs: PathOrPaths,
    output: str | os.PathLike,
    n_clusters: int = DEFAULT_N_CLUSTERS,
    *,
    n_vocabularies: int = 1,
    sample: int | None = 100_000,
    per_image: int | None = None,
    seed: int | None = 0,
    descriptor_options: Mapping | None = None,
    kmeans_options: Mapping | None = None,
    extractor: Callable | str | None = None,
    n_jobs: int | None = None,
    progress: Progress | None = None,
    kmeans_progress: Progress | None = None,
    overwrite: bool = False,
) -> tuple[Codebook, BatchReport]:
    """Fit a codebook on the descriptors of images and write it.

    Parameters
    ----------
    inputs : path-like or sequence of path-like
        Image files and folders, or one descriptors file, as in
        :func:`vlad.fit_codebook_to_images`.
    output : path-like
        The codebook file (``.npz``), written atomically.
    n_clusters : int, default=DEFAULT_N_CLUSTERS
        Centres of each vocabulary.
    n_vocabularies : int, default=1
        Vocabularies fitted in one pass with seeds ``seed``, ``seed + 1``...
        (:func:`vlad.fit_vocabularies_to_images`), kept in
        one codebook.
    sample, per_image, seed, descriptor_options, kmeans_options, extractor
        As in :func:`vlad.fit_codebook_to_images`.
    n_jobs : int, optional
        Processes that describe the images.
    progress : callable, optional
        ``progress(n_done, n_total)``, called as images are described.
    kmeans_progress : callable, optional
        ``progress(n_done, n_total)`` of k-means's iterations (those of every
        vocabulary), as :func:`vlad.fit_codebook` calls it.
    overwrite : bool, default=False
        Replace an existing ``output``.

    Returns
    -------
    codebook : Codebook
        The codebook written.
    report : BatchReport
        Images skipped or without descriptors.

    Raises
    ------
    VladError
        ``n_vocabularies`` is not an integer >= 1.
    ValueError, OSError
        As the images are described, the codebook fitted and written.

    See Also
    --------
    vlad.fit_codebook_to_images, write_adapted_codebook

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import vlad
    >>> from vlad.pipeline import write_codebook
    >>> path = pathlib.Path(tempfile.mkdtemp(), "codebook.npz")
    >>> codebook, report = write_codebook("data", path, 4, n_jobs=1)
    >>> codebook.n_clusters, len(report.names)
    (4, 8)
    >>> vlad.Codebook.load(path).fingerprint == codebook.fingerprint
    True
    """
    if (
        isinstance(n_vocabularies, bool)
        or not isinstance(n_vocabularies, int)
        or n_vocabularies < 1
    ):
        raise VladError(
            f"n_vocabularies must be an integer >= 1; got {n_vocabularies!r}"
        )
    settings = {
        "sample": sample,
        "per_image": per_image,
        "seed": seed,
        "descriptor_options": descriptor_options,
        "kmeans_options": kmeans_options,
        "extractor": extractor,
        "n_jobs": n_jobs,
        "progress": progress,
        "kmeans_progress": kmeans_progress,
    }
    if n_vocabularies == 1:
        codebook, report = fit_codebook_to_images(inputs, n_clusters, **settings)
    else:
        codebook, report = fit_vocabularies_to_images(
            inputs, n_clusters, n_vocabularies, **settings
        )
    codebook.save(output, overwrite=overwrite)
    return codebook, report


def write_adapted_codebook(
    inputs: PathOrPaths,
    codebook: Codebook | str | os.PathLike,
    output: str | os.PathLike,
    *,
    descriptor_options: Mapping | None = None,
    extractor: Callable | str | None = None,
    n_jobs: int | None = None,
    progress: Progress | None = None,
    overwrite: bool = False,
) -> tuple[Codebook, BatchReport]:
    """Adapt a codebook to the descriptors of images and write it.

    Each centre moves to the mean of the descriptors nearest to it; the
    images are described as ``codebook``'s were, except for the
    ``descriptor_options`` given
    (:func:`vlad.adapt_codebook_to_images`).

    Parameters
    ----------
    inputs : path-like or sequence of path-like
        Image files and folders, or one descriptors file.
    codebook : Codebook or path-like
        The codebook adapted.
    output : path-like
        The adapted codebook's file (``.npz``), written atomically.
    descriptor_options, extractor, n_jobs, progress
        As in :func:`write_codebook`.
    overwrite : bool, default=False
        Replace an existing ``output``.

    Returns
    -------
    codebook : Codebook
        The adapted codebook written; its ``metadata["adaptation"]`` says from
        what, on how many descriptors.
    report : BatchReport
        Images skipped or without descriptors.

    See Also
    --------
    vlad.adapt_codebook, write_codebook

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from vlad.pipeline import write_adapted_codebook, write_codebook
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> generic, _ = write_codebook("data/astronaut.jpg", root / "generic.npz", 4)
    >>> adapted, report = write_adapted_codebook(
    ...     "data", root / "generic.npz", root / "adapted.npz", n_jobs=1
    ... )
    >>> adapted.n_clusters, len(report.names)
    (4, 8)
    """
    adapted, report = adapt_codebook_to_images(
        inputs,
        codebook,
        descriptor_options=descriptor_options,
        extractor=extractor,
        n_jobs=n_jobs,
        progress=progress,
    )
    adapted.save(output, overwrite=overwrite)
    return adapted, report
