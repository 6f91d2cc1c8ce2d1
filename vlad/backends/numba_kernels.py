"""Compiled loops shared by the ``numba`` aggregator and the fused encoder.

This module imports numba; import it through
:func:`vlad.backends.compiled.numba_kernels`,
which says how to install numba when it is missing. The kernels are module
level so that numba's on-disk cache finds them again in a new process.
"""

import numba
import numpy as np

__all__ = ["add_rows", "finish_image", "flush", "nearest"]


@numba.njit(nogil=True, cache=True, boundscheck=False)
def finish_image(centers, image, sums, image_counts, residuals, counts, status):
    """Write one image's residuals and counts; reset the accumulator.

    Adds to ``status[0]`` the number of residuals written that are not
    finite (NaN or infinite descriptors, or sums too large for the output
    dtype): the check costs nothing here, where every sum is read anyway.
    """
    n_clusters, n_features = centers.shape
    bad = 0
    for k in range(n_clusters):
        count = image_counts[k]
        for f in range(n_features):
            residuals[image, k, f] = sums[k, f] - count * np.float64(centers[k, f])
            if not np.isfinite(residuals[image, k, f]):
                bad += 1
            sums[k, f] = 0.0
        counts[image, k] = count
        image_counts[k] = 0
    status[0] += bad


@numba.njit(nogil=True, cache=True, boundscheck=False)
def add_rows(
    descriptors, labels, labels_start, offsets, start, stop, image, centers,
    sums, image_counts, residuals, counts, status,
):  # fmt: skip
    """Add rows ``start:stop`` into their image's float64 ``(K, F)`` sums.

    ``labels[row - labels_start]`` is the centre of ``row``; ``image`` is
    the image of row ``start``. Images completed on the way (and empty ones
    passed over) are written out with :func:`finish_image`. Returns the
    image of row ``stop``.
    """
    n_features = descriptors.shape[1]
    for row in range(start, stop):
        while offsets[image + 1] <= row:
            finish_image(centers, image, sums, image_counts, residuals, counts, status)
            image += 1
        label = labels[row - labels_start]
        image_counts[label] += 1
        for f in range(n_features):
            sums[label, f] += descriptors[row, f]
    return image


@numba.njit(nogil=True, cache=True)
def flush(centers, image, last, sums, image_counts, residuals, counts, status):
    """Write out images ``image:last``: the one in progress, the rest empty."""
    for t in range(image, last):
        finish_image(centers, t, sums, image_counts, residuals, counts, status)


@numba.njit(nogil=True, cache=True, boundscheck=False)
def nearest(products, squared_norms, labels):
    """Argmin over centres of ``products[:, i] + squared_norms`` for each
    row ``i`` (ties to the lowest centre), into ``labels``. Returns the
    first row whose nearest distance is not finite, or -1."""
    n_clusters, n_rows = products.shape
    best = products[0] + squared_norms[0]
    labels[:n_rows] = 0
    for k in range(1, n_clusters):
        for i in range(n_rows):
            distance = products[k, i] + squared_norms[k]
            if distance < best[i]:
                best[i] = distance
                labels[i] = k
    for i in range(n_rows):
        if not np.isfinite(best[i]):
            return i
    return -1
