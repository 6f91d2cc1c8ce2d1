"""Compiled loops shared by the ``numba`` aggregator and the fused encoder.

This module imports numba; import it through
:func:`vlad.backends.numba.numba_kernels`,
which says how to install numba when it is missing. The kernels are module
level so that numba's on-disk cache finds them again in a new process.
"""

import numba
import numpy as np

__all__ = [
    "add_rows",
    "add_weighted_rows",
    "finish_image",
    "finish_weighted_image",
    "flush",
    "flush_weighted",
    "nearest",
    "nearest_n",
    "squared_norm",
]


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


@numba.njit(nogil=True, cache=True, boundscheck=False)
def nearest_n(products, squared_norms, labels, best):
    """The ``n`` nearest centres of each row ``i``, by ``products[:, i] +
    squared_norms``, nearest first (ties to the lower centre), into
    ``labels[i]`` and their expanded distances into ``best[i]`` (both of
    shape ``(rows, n)``). Returns the first row with a chosen distance that is
    not finite, or -1."""
    n_clusters, n_rows = products.shape
    n_nearest = labels.shape[1]
    for i in range(n_rows):
        for j in range(n_nearest):
            best[i, j] = np.inf
            labels[i, j] = 0
    for k in range(n_clusters):
        for i in range(n_rows):
            distance = products[k, i] + squared_norms[k]
            if distance < best[i, n_nearest - 1]:
                j = n_nearest - 1
                while j > 0 and distance < best[i, j - 1]:
                    best[i, j] = best[i, j - 1]
                    labels[i, j] = labels[i, j - 1]
                    j -= 1
                best[i, j] = distance
                labels[i, j] = k
    for i in range(n_rows):
        if not np.isfinite(best[i, n_nearest - 1]):
            return i
    return -1


@numba.njit(nogil=True, cache=True, boundscheck=False)
def add_weighted_rows(
    descriptors, labels, weights, labels_start, offsets, start, stop, image,
    centers, residual_norm, soft, kernel_width, sums, masses, residuals, counts,
    status,
):  # fmt: skip
    """Add ``w_j * (x - c_j)`` for each row ``x`` and each of its centres
    ``c_j = centers[labels[i, j]]`` (``i = row - labels_start``) into its
    image's float64 ``(K, F)`` sums, and ``w_j`` into ``masses``.

    ``w_j`` is ``weights[i, j]``, or with ``soft`` the Gaussian weight of the
    exact squared distances ``d_j = |x - c_j|^2`` (the residuals' own squared
    norms): ``exp(-(d_j - d_min) / (2 * kernel_width * d_min))`` normalised
    to sum to one, equal weights on the centres at distance 0 when
    ``d_min`` is 0 (as :func:`vlad.assignment_weights`). With
    ``residual_norm`` each residual is divided by its L2 norm (zero stays
    zero). Images completed on the way are written with
    :func:`finish_weighted_image`. Returns the image of row ``stop``.
    """
    n_features = descriptors.shape[1]
    n_nearest = labels.shape[1]
    residual = np.empty((n_nearest, n_features), dtype=np.float64)
    squares = np.empty(n_nearest, dtype=np.float64)
    row_weights = np.empty(n_nearest, dtype=np.float64)
    for row in range(start, stop):
        while offsets[image + 1] <= row:
            finish_weighted_image(image, sums, masses, residuals, counts, status)
            image += 1
        i = row - labels_start
        smallest = np.inf
        for j in range(n_nearest):
            label = labels[i, j]
            for f in range(n_features):
                residual[j, f] = np.float64(descriptors[row, f]) - np.float64(
                    centers[label, f]
                )
            if soft or residual_norm:
                squares[j] = squared_norm(residual[j])
                smallest = min(smallest, squares[j])
        if soft:
            norm = 0.0
            for j in range(n_nearest):
                if smallest > 0:
                    # Relative excess first: huge ratios give inf, a zero weight.
                    excess = (squares[j] - smallest) / smallest
                    row_weights[j] = np.exp(-excess / (2.0 * kernel_width))
                else:
                    row_weights[j] = 1.0 if squares[j] == 0 else 0.0
                norm += row_weights[j]
            for j in range(n_nearest):
                row_weights[j] /= norm
        else:
            for j in range(n_nearest):
                row_weights[j] = weights[i, j]
        for j in range(n_nearest):
            label = labels[i, j]
            weight = row_weights[j]
            masses[label] += weight
            if residual_norm:
                size = squares[j]
                if not (1e-280 < size < 1e280):
                    # Squares that under- or overflow float64: scale first.
                    scale = 0.0
                    for f in range(n_features):
                        scale = max(scale, abs(residual[j, f]))
                    size = 0.0
                    if scale > 0:
                        for f in range(n_features):
                            residual[j, f] /= scale
                            size += residual[j, f] * residual[j, f]
                if size > 0:
                    weight /= np.sqrt(size)
            for f in range(n_features):
                sums[label, f] += weight * residual[j, f]
    return image


@numba.njit(nogil=True, cache=True, boundscheck=False, fastmath={"reassoc"})
def squared_norm(vector):
    """``sum(vector ** 2)``, the sum reassociated so that it vectorises (a
    norm's last bits may change; no sum of residuals is reordered)."""
    total = 0.0
    for value in vector:
        total += value * value
    return total


@numba.njit(nogil=True, cache=True, boundscheck=False)
def finish_weighted_image(image, sums, masses, residuals, counts, status):
    """Write one image's weighted sums and masses; reset the accumulator.
    Adds the number of non-finite values written to ``status[0]``."""
    n_clusters, n_features = sums.shape
    bad = 0
    for k in range(n_clusters):
        for f in range(n_features):
            residuals[image, k, f] = sums[k, f]
            if not np.isfinite(residuals[image, k, f]):
                bad += 1
            sums[k, f] = 0.0
        counts[image, k] = masses[k]
        masses[k] = 0.0
    status[0] += bad


@numba.njit(nogil=True, cache=True)
def flush_weighted(image, last, sums, masses, residuals, counts, status):
    """Write out images ``image:last``: the one in progress, the rest empty."""
    for t in range(image, last):
        finish_weighted_image(t, sums, masses, residuals, counts, status)
