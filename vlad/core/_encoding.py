"""End to end: descriptor sets and a codebook in, normalised VLAD vectors out."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from vlad.core._assignment import CHUNK_BYTES, assign_valid
from vlad.core._codebook import Codebook, as_centers, on_codebook_metric
from vlad.core._descriptors import DescriptorSets, as_descriptor_sets
from vlad.core._finite import (
    cast_in_range,
    check_residuals,
    restore_scale,
    run_in_range,
)
from vlad.core._nearest import assignment_weights, check_n_nearest, nearest_valid
from vlad.core._normalization import normalize_in_place
from vlad.core._options import EncodingOptions
from vlad.core._parallel import balanced_ranges, resolve_n_jobs, workers_for
from vlad.core._validation import all_finite, check_n_features
from vlad.core._vocabularies import concatenate_vectors, split_vocabularies
from vlad.core.aggregators import call_aggregator, fused_encoder, resolve_aggregator
from vlad.core.aggregators._segments import segment_counts, weighted_masses
from vlad.errors import VladError

__all__ = ["ROWS_PER_BLOCK", "encode", "image_blocks"]

#: Rows of one worker's block (whole images): large enough to amortise the
#: hand-off, small enough that every worker gets several blocks.
ROWS_PER_BLOCK = 16_384


def image_blocks(
    offsets: np.ndarray, n_clusters: int, n_workers: int = 1
) -> list[tuple[int, int]]:
    """Split images into contiguous blocks of about ``ROWS_PER_BLOCK`` rows.

    Each image also weighs ``n_clusters`` rows (writing its ``K`` result blocks),
    so that many empty images still make several blocks. The number of blocks
    is a multiple of ``n_workers``, so that (images allowing) the blocks of
    equal weight end together instead of leaving all but one worker idle
    while the last block runs.
    """
    n_images = offsets.shape[0] - 1
    weights = offsets + np.arange(n_images + 1, dtype=np.int64) * n_clusters
    n_blocks = max(1, -(-int(weights[-1]) // ROWS_PER_BLOCK))
    n_blocks = -(-n_blocks // n_workers) * n_workers
    return balanced_ranges(weights, n_blocks)


def encode(
    descriptor_sets: DescriptorSets | Sequence[ArrayLike] | np.ndarray,
    codebook: Codebook | ArrayLike,
    options: EncodingOptions | None = None,
    *,
    n_jobs: int | None = None,
    **settings,
) -> np.ndarray:
    """VLAD vectors of a collection of images.

    Assigns each descriptor to its nearest centre (:func:`vlad.assign`), sums
    the residuals per image and centre (:func:`vlad.aggregate`) and normalises
    them (:func:`vlad.normalize`, in the order mass -> power -> intra -> L2).
    The options can instead assign each descriptor to several centres with
    weights (``assignment="multiple"`` or ``"soft"``, see
    :func:`vlad.assign_nearest`) and L2-normalise each residual before the
    sum (``residual_norm=True``).

    Parameters
    ----------
    descriptor_sets : DescriptorSets, list of (L_t, F) arrays or (T, L, F) array
        Local descriptors of each image; an image may have none.
    codebook : Codebook or array-like of shape (n_clusters, n_features)
        A codebook of several vocabularies encodes with each in turn and
        concatenates the vectors (see :mod:`vlad.core._vocabularies`).
    options : EncodingOptions, optional
        The aggregator and the normalisation; default ``EncodingOptions()``
        (``aggregator="auto", power=1.0, intra=True, l2=True, mass=False``).
    n_jobs : int or None, default=None
        Threads for assignment and the fused ``numba`` pass (None or -1:
        every available core), each worker with one BLAS thread; ``1`` is one
        thread in all, BLAS included. Inputs under about 10^8 multiply-adds
        (descriptors x centres x features) run on one thread, BLAS included,
        whatever ``n_jobs``. The vectors do not depend on it.
    **settings
        Fields of :class:`EncodingOptions` (``aggregator``, ``power``,
        ``intra``, ``l2``, ``mass``, ``residual_norm``, ``assignment``,
        ``n_nearest``, ``kernel_width``) replacing those of ``options``.

    Returns
    -------
    vectors : ndarray of shape (n_images, n_clusters * n_features)
        float64 for float64 descriptors, float32 otherwise. Row ``t`` is image
        ``t``'s vector, centre-major. An image with no descriptors is a zero row.
        With several vocabularies, each vocabulary's vectors (normalised on
        their own) side by side, scaled to unit norm together with ``l2``.

    Raises
    ------
    ValueError
        Descriptor and centre dimensions differ, NaN/inf descriptors, bad
        settings, ``n_nearest`` above the number of centres, an unknown
        aggregator, an aggregator function that returns
        NaN or another shape, or unnormalised vectors too large for their
        dtype. Descriptors of extreme magnitude (5e36 in float32, 1e308 in
        float64) are scaled exactly by a power of two first, so normalised
        vectors never overflow.
    TypeError
        A setting that :class:`EncodingOptions` does not have.
    ImportError
        The aggregator's optional dependency is not installed.

    See Also
    --------
    VLADEncoder : The scikit-learn transformer over this function.
    encode_images : The same from image files.

    Examples
    --------
    >>> import numpy as np
    >>> import vlad
    >>> x = np.array([[1.0, 2.0, 3.0]])
    >>> centers = np.array([[0.0, 1.0, 2.0], [10.0, 10.0, 10.0]])
    >>> vlad.encode([x], centers, intra=False, l2=False)
    array([[1., 1., 1., 0., 0., 0.]])
    >>> vlad.encode([x], centers, intra=False, l2=False, residual_norm=True).round(4)
    array([[0.5774, 0.5774, 0.5774, 0.    , 0.    , 0.    ]])
    """
    options = EncodingOptions.resolve(options, **settings)
    n_threads = resolve_n_jobs(n_jobs)
    # A cosine codebook compares unit descriptors (zero rows are left out).
    sets = on_codebook_metric(as_descriptor_sets(descriptor_sets), codebook)
    if isinstance(codebook, Codebook) and codebook.n_vocabularies > 1:
        parts = [
            encode(sets, vocabulary, options, n_jobs=n_jobs)
            for vocabulary in split_vocabularies(codebook)
        ]
        return concatenate_vectors(parts, l2=options.l2)
    centers = cast_in_range(as_centers(codebook), sets.dtype, "the centres")
    check_n_features(sets.n_features, centers.shape[1])
    check_n_nearest(options.n_nearest, centers.shape[0])
    name, function = resolve_aggregator(
        options.aggregator, (sets.descriptors.shape[0], *centers.shape)
    )
    n_workers = workers_for(sets.descriptors.size * centers.shape[0], n_threads)
    blocks = image_blocks(sets.offsets, centers.shape[0], n_workers)

    def encode_all(descriptors: np.ndarray, centers: np.ndarray) -> np.ndarray:
        # A few huge images would leave workers idle in the fused pass: then
        # assignment is threaded over rows instead.
        fused = fused_encoder(name)
        if fused is not None and len(blocks) >= n_workers:
            residuals = fused(
                descriptors,
                sets.offsets,
                centers,
                blocks,
                n_workers,
                options,
                CHUNK_BYTES,
            )
        else:
            residuals = _encode_staged(
                function, descriptors, sets.offsets, centers, n_threads, options
            )
        return residuals.reshape(len(sets), centers.shape[0] * centers.shape[1])

    # Extreme magnitudes (5e36 in float32) are encoded again scaled exactly by
    # a power of two, so that squared distances and norms stay finite.
    vectors, exponent = run_in_range(
        encode_all, sets.descriptors, centers, finite=all_finite
    )
    vectors = restore_scale(
        vectors,
        exponent,
        power=options.power,
        # Unit residuals and assignment weights do not depend on the scale.
        normalised=options.intra or options.l2 or options.residual_norm,
    )
    # Unscaled vectors were checked by run_in_range; scaled ones are here.
    if exponent and not all_finite(vectors):
        raise VladError(f"encoding with {options.aggregator_name} gave NaN values")
    return vectors


def _encode_staged(
    function, descriptors, offsets, centers, n_threads, options: EncodingOptions
) -> np.ndarray:
    """Assign all descriptors, then aggregate with ``function``, then normalise."""
    weights = None
    if options.weighted:
        labels, distances = nearest_valid(
            descriptors, centers, options.n_nearest, CHUNK_BYTES
        )
        weights = assignment_weights(
            distances, options.assignment, options.kernel_width
        )
    else:
        labels = assign_valid(descriptors, centers, CHUNK_BYTES, n_threads)
    residuals = call_aggregator(
        function,
        descriptors,
        labels,
        offsets,
        centers,
        residual_norm=options.residual_norm,
        weights=weights,
    )
    if callable(options.aggregator):  # the caller's function: checked
        shape = (offsets.shape[0] - 1, *centers.shape)
        residuals = check_residuals(
            residuals, shape, descriptors.dtype, options.aggregator_name
        )
    residuals = np.require(residuals, dtype=descriptors.dtype, requirements=["C", "W"])
    counts = None
    if options.mass and weights is not None:
        counts = weighted_masses(offsets, labels, weights, centers.shape[0])
    elif options.mass:
        counts = segment_counts(offsets, labels, centers.shape[0])
    normalize_in_place(
        residuals,
        power=options.power,
        intra=options.intra,
        l2=options.l2,
        counts=counts,
    )
    return residuals
