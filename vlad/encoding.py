"""End to end: descriptor sets and a codebook in, normalised VLAD vectors out."""

from __future__ import annotations

import numpy as np

from vlad._parallel import available_cores
from vlad._validation import check_n_features
from vlad.aggregators import resolve_aggregator
from vlad.aggregators._common import image_of_rows
from vlad.assignment import CHUNK_BYTES, _assign
from vlad.codebook import as_centers
from vlad.descriptors import as_descriptor_sets
from vlad.normalization import check_power, normalize_in_place


def encode(
    descriptor_sets,
    codebook,
    *,
    aggregator="auto",
    power: float = 1.0,
    intra: bool = True,
    l2: bool = True,
    mass: bool = False,
) -> np.ndarray:
    """VLAD vectors of a collection of images.

    Assigns each descriptor to its nearest centre (:func:`vlad.assign`), sums
    the residuals per image and centre (:func:`vlad.aggregate`) and normalises
    them (:func:`vlad.normalize`, in the order mass -> power -> intra -> L2).

    Parameters
    ----------
    descriptor_sets : DescriptorSets, list of (L_t, F) arrays or (T, L, F) array
        Local descriptors of each image; an image may have none.
    codebook : Codebook or array-like of shape (n_clusters, n_features)
    aggregator : str or callable, default="auto"
        A name from :data:`vlad.AGGREGATORS` or a function with the same
        signature.
    power : float, default=1.0
        Power-law exponent in (0, 1]; 0.5 is the signed square root.
    intra : bool, default=True
        L2-normalise each centre's block.
    l2 : bool, default=True
        L2-normalise each whole vector.
    mass : bool, default=False
        Divide each block by its number of descriptors first.

    Returns
    -------
    vectors : ndarray of shape (n_images, n_clusters * n_features)
        float64 for float64 descriptors, float32 otherwise. Row ``t`` is image
        ``t``'s vector, centre-major. An image with no descriptors is a zero row.

    Raises
    ------
    ValueError
        Descriptor and centre dimensions differ, NaN/inf descriptors, bad
        parameters or an unknown aggregator.
    ImportError
        The aggregator's optional dependency is not installed.

    See Also
    --------
    VLADEncoder : The scikit-learn transformer over this function.

    Examples
    --------
    >>> import numpy as np
    >>> import vlad
    >>> x = np.array([[1.0, 2.0, 3.0]])
    >>> centers = np.array([[0.0, 1.0, 2.0], [10.0, 10.0, 10.0]])
    >>> vlad.encode([x], centers, intra=False, l2=False)
    array([[1., 1., 1., 0., 0., 0.]])
    """
    function = resolve_aggregator(aggregator)
    power = check_power(power)
    sets = as_descriptor_sets(descriptor_sets)
    descriptors = sets.descriptors
    centers = as_centers(codebook).astype(descriptors.dtype, copy=False)
    check_n_features(sets.n_features, centers.shape[1])
    labels = _assign(descriptors, centers, CHUNK_BYTES, available_cores())
    residuals = np.require(
        function(descriptors, labels, sets.offsets, centers),
        dtype=descriptors.dtype,
        requirements=["C", "W"],
    )
    counts = None
    if mass:
        n_images, n_clusters = len(sets), centers.shape[0]
        counts = np.bincount(
            image_of_rows(sets.offsets) * n_clusters + labels,
            minlength=n_images * n_clusters,
        ).reshape(n_images, n_clusters)
    normalize_in_place(residuals, power=power, intra=intra, l2=l2, counts=counts)
    return residuals.reshape(len(sets), -1)
