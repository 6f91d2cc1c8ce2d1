"""VLAD vectors of many images at once, or of a descriptors file.

Descriptors are encoded a chunk of :data:`ENCODE_CHUNK_IMAGES` images at a
time, so memory holds the vectors but never every image's descriptors.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping

import numpy as np

from vlad._version import __version__
from vlad.core._chunked_encoding import encode_in_chunks
from vlad.core._codebook import Codebook
from vlad.core._descriptors import DescriptorSets
from vlad.core._encoding import encode
from vlad.core._options import EncodingOptions
from vlad.core._parallel import resolve_n_jobs
from vlad.core._pool import Progress
from vlad.core.aggregators import require_aggregator
from vlad.formats._descriptor_files import descriptor_file_in
from vlad.images._extractors import check_same_kind, extractor_for_codebook
from vlad.pipeline._batch import (
    BatchReport,
    PathOrPaths,
    check_any_read,
    chunks,
    extract_in_order,
    keep_readable,
    path_list,
    walk_batch,
)
from vlad.pipeline._extraction import read_descriptor_sets

__all__ = [
    "ENCODE_CHUNK_IMAGES",
    "EncodedImages",
    "encode_images",
    "vectors_record",
]

#: Images whose descriptors :func:`encode_images` holds in memory at once (at the
#: default 2000 keypoints, up to 1 MB each).
ENCODE_CHUNK_IMAGES = 64


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
        Options of :class:`vlad.SiftOptions` (or of
        :class:`vlad.images.LearnedOptions`, for a codebook of learned
        features: its ``weights`` and ``device``, say) that replace the
        codebook's. ``max_side``, ``max_keypoints`` and ``min_keypoints`` may
        differ from the codebook's; ``features``, ``root_sift`` and ``dense``
        may not, nor the learned features' network and weights.
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
    >>> quick = {"max_side": 256}  # small images, to be quick
    >>> codebook, _ = vlad.fit_codebook_to_images(
    ...     "data", 4, descriptor_options=quick, n_jobs=1
    ... )
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
    for chunk in chunks(results, ENCODE_CHUNK_IMAGES):
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
