"""The sparse one-hot product aggregator (scipy.sparse, no compiler needed)."""

from __future__ import annotations

import numpy as np

from vlad.aggregators._common import image_of_rows, row_blocks, subtract_centers

#: Rows summed in the descriptors' dtype before the float64 accumulation: a
#: float32 running sum over this many rows keeps a relative error near 1e-6.
ROWS_PER_BLOCK = 16_384


def aggregate_sparse(descriptors, labels, offsets, centers):
    """Multiply a one-hot (segment x descriptor) sparse matrix by the descriptors.

    The matrix is built directly in CSC form (one non-zero per column, at the
    descriptor's (image, centre) segment), so scipy's compiled product streams
    the descriptors once, adding each row into its segment in the descriptors'
    dtype. To keep float32 sums accurate, the product runs on blocks of at most
    ``ROWS_PER_BLOCK`` rows and the blocks' sums are accumulated in float64.
    """
    from scipy import sparse

    n_images = offsets.shape[0] - 1
    n_clusters, n_features = centers.shape
    sums = np.zeros((n_images, n_clusters, n_features), dtype=np.float64)
    images = image_of_rows(offsets)
    for start, stop in row_blocks(descriptors.shape[0], ROWS_PER_BLOCK):
        first_image, last_image = images[start], images[stop - 1]
        n_block_segments = (last_image - first_image + 1) * n_clusters
        segments = (images[start:stop] - first_image) * n_clusters + labels[start:stop]
        one_hot = sparse.csc_array(
            (
                np.ones(stop - start, dtype=descriptors.dtype),
                segments,
                np.arange(stop - start + 1),
            ),
            shape=(n_block_segments, stop - start),
        )
        block_sums = one_hot @ descriptors[start:stop]
        sums[first_image : last_image + 1] += block_sums.reshape(
            -1, n_clusters, n_features
        )
    counts = np.bincount(
        images * n_clusters + labels, minlength=n_images * n_clusters
    ).reshape(n_images, n_clusters)
    return subtract_centers(sums, counts, centers, descriptors.dtype)
