"""Vocabulary adaptation: a codebook's centres moved to the means of a collection.

A codebook fitted on other data (a large generic collection, say) is adapted
to the collection at hand by moving each centre to the mean of the
collection's descriptors nearest to it, which costs one pass of assignment
instead of a k-means fit, and keeps the centres' order and number
(Arandjelović & Zisserman 2013). Centres that no descriptor is nearest to
stay where they were.

References
----------
.. [1] R. Arandjelović, A. Zisserman. "All about VLAD". CVPR 2013.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np
from numpy.typing import ArrayLike

from vlad.core._assignment import assign
from vlad.core._codebook import Codebook
from vlad.core._descriptors import DescriptorSets
from vlad.core._parallel import resolve_n_jobs
from vlad.core._validation import as_float_matrix, check_finite, check_n_features
from vlad.errors import VladError, VladTypeError

__all__ = ["BLOCK_BYTES", "CodebookAdapter", "adapt_codebook"]

#: Bytes of descriptors (as float64) assigned and summed at a time.
BLOCK_BYTES = 64 << 20


class CodebookAdapter:
    """Per-centre sums and counts of a stream of descriptors, in float64.

    Add blocks of descriptors with :meth:`add`, in any number and size, then
    take the adapted codebook from :meth:`adapted`. Memory holds one block and
    the ``(K, F)`` sums, whatever the stream's length. Each vocabulary of a
    codebook that holds several is adapted on its own: every descriptor is
    assigned once in each.

    Parameters
    ----------
    codebook : Codebook
        The codebook to adapt.
    n_jobs : int or None, default=None
        Threads for assignment, as in :func:`vlad.assign`; the result does not
        depend on it.

    Attributes
    ----------
    sums : ndarray of float64 of shape (n_clusters, n_features)
        Sum of the descriptors assigned to each centre.
    counts : ndarray of int64 of shape (n_clusters,)
        Number of descriptors assigned to each centre (in its vocabulary).
    n_descriptors : int
        Descriptors added.

    See Also
    --------
    adapt_codebook : The same on descriptors at hand.

    Examples
    --------
    >>> import numpy as np
    >>> import vlad
    >>> adapter = CodebookAdapter(vlad.Codebook([[0.0, 0.0], [10.0, 10.0]]))
    >>> adapter.add(np.array([[1.0, 1.0], [3.0, 1.0]]))
    >>> adapter.add(np.array([[2.0, 4.0]]))
    >>> adapter.adapted().centers
    array([[ 2.,  2.],
           [10., 10.]])
    """

    def __init__(self, codebook: Codebook, *, n_jobs: int | None = None):
        if not isinstance(codebook, Codebook):
            raise VladTypeError(
                f"codebook must be a Codebook; got {type(codebook).__name__}"
            )
        resolve_n_jobs(n_jobs)
        self.codebook = codebook
        self.n_jobs = n_jobs
        self.sums = np.zeros(codebook.centers.shape, dtype=np.float64)
        self.counts = np.zeros(codebook.n_clusters, dtype=np.int64)
        self.n_descriptors = 0
        self._bounds = np.cumsum((0, *codebook.vocabulary_sizes))

    def add(self, descriptors: ArrayLike) -> None:
        """Assign a block of descriptors and add them to their centres' sums.

        Parameters
        ----------
        descriptors : array-like of shape (n_descriptors, n_features)
            Any number of rows, none included; a memory-mapped array is read
            a block of :data:`BLOCK_BYTES` at a time.

        Raises
        ------
        ValueError
            Another dimension than the codebook's, or NaN/inf descriptors.
        """
        if not isinstance(descriptors, np.ndarray):
            descriptors = as_float_matrix(descriptors, "descriptors")
        if descriptors.ndim != 2:
            raise VladError(
                "descriptors must be a 2-D array of shape (n, n_features); "
                f"got shape {descriptors.shape}"
            )
        check_n_features(descriptors.shape[1], self.codebook.n_features)
        rows = max(1, BLOCK_BYTES // (8 * descriptors.shape[1]))
        for start in range(0, descriptors.shape[0], rows):
            self._add_block(
                as_float_matrix(descriptors[start : start + rows], "descriptors")
            )

    def _add_block(self, block: np.ndarray) -> None:
        """Add a validated-shape block (checked for NaN/inf here)."""
        if block.shape[0] == 0:
            return
        import scipy.sparse  # here: vlad fit --help need not load it (1.3 s)

        check_finite(block, "descriptors")
        block64 = block.astype(np.float64)
        for first, last in zip(self._bounds[:-1], self._bounds[1:], strict=True):
            labels = assign(
                block, self.codebook.centers[first:last], n_jobs=self.n_jobs
            )
            # One-hot (n, K_v) as a sparse matrix: its transpose times the
            # block sums each centre's descriptors in one pass over the rows.
            one_hot = scipy.sparse.csr_matrix(
                (
                    np.ones(block.shape[0]),
                    labels,
                    np.arange(block.shape[0] + 1),
                ),
                shape=(block.shape[0], last - first),
            )
            self.sums[first:last] += one_hot.T @ block64
            self.counts[first:last] += np.bincount(labels, minlength=last - first)
        self.n_descriptors += block.shape[0]

    def adapted(self) -> Codebook:
        """The codebook with each centre at the mean of its descriptors.

        Returns
        -------
        Codebook
            Centres in the codebook's dtype, in the same order and the same
            vocabularies; a centre without descriptors is unchanged.
            ``metadata`` is the codebook's, with ``metadata["adaptation"]``:
            ``"from"`` (the fingerprint of the codebook adapted),
            ``"n_descriptors"``, ``"n_empty_centers"`` and ``"empty_centers"``
            (their indices).

        Raises
        ------
        ValueError
            No descriptors were added, or a mean beyond the centres' dtype.
        """
        if self.n_descriptors == 0:
            raise VladError(
                "descriptors must hold at least one descriptor to adapt the "
                "codebook to; got none"
            )
        centers = self.codebook.centers.astype(np.float64)
        filled = self.counts > 0
        centers[filled] = self.sums[filled] / self.counts[filled, None]
        with np.errstate(over="ignore"):
            centers = centers.astype(self.codebook.centers.dtype)
        if not np.isfinite(centers).all():
            raise VladError(
                "the means of the descriptors are beyond the range of "
                f"{self.codebook.centers.dtype}; rescale the descriptors"
            )
        empty = np.flatnonzero(~filled)
        metadata = {
            **self.codebook.metadata,
            "adaptation": {
                "from": self.codebook.fingerprint,
                "n_descriptors": int(self.n_descriptors),
                "n_empty_centers": int(empty.size),
                "empty_centers": empty.tolist(),
            },
        }
        return Codebook(
            centers, metadata, vocabulary_sizes=self.codebook.vocabulary_sizes
        )


def adapt_codebook(
    codebook: Codebook,
    descriptors: ArrayLike | DescriptorSets | Iterable[ArrayLike],
    *,
    n_jobs: int | None = None,
) -> Codebook:
    """Move each centre to the mean of the descriptors nearest to it.

    Parameters
    ----------
    codebook : Codebook
        Fitted on other data, typically; of one or several vocabularies (each
        adapted on its own).
    descriptors : DescriptorSets, array-like of shape (n_descriptors, \
            n_features) or (n_images, n_descriptors, n_features), or iterable \
            of arrays of shape (n_t, n_features)
        The collection to adapt to. A matrix (a memory-mapped ``.npy``, say)
        is read once, a block at a time; an iterable (a list of per-image
        arrays, a generator of blocks) is consumed once. Image boundaries do
        not matter.
    n_jobs : int or None, default=None
        Threads for assignment (None or -1: every core); the result does not
        depend on it.

    Returns
    -------
    Codebook
        See :meth:`CodebookAdapter.adapted`. The sums are float64 whatever
        the blocks, so blocks of any size give the same centres up to the
        rounding of float64 sums.

    Raises
    ------
    ValueError
        No descriptors, another dimension than the codebook's, NaN/inf.
    TypeError
        A codebook that is not a :class:`vlad.Codebook`.

    See Also
    --------
    CodebookAdapter : The same a block at a time.
    vlad.adapt_codebook_to_images : The same from image files.

    References
    ----------
    .. [1] R. Arandjelović, A. Zisserman. "All about VLAD". CVPR 2013.

    Examples
    --------
    >>> import numpy as np
    >>> import vlad
    >>> codebook = vlad.Codebook([[0.0, 0.0], [10.0, 10.0], [-9.0, 9.0]])
    >>> descriptors = np.array([[1.0, 1.0], [3.0, 1.0], [9.0, 11.0]])
    >>> adapted = vlad.adapt_codebook(codebook, descriptors)
    >>> adapted.centers
    array([[ 2.,  1.],
           [ 9., 11.],
           [-9.,  9.]])
    >>> adapted.metadata["adaptation"]["empty_centers"]
    [2]
    """
    adapter = CodebookAdapter(codebook, n_jobs=n_jobs)
    for block in _blocks(descriptors):
        adapter.add(block)
    return adapter.adapted()


def _blocks(descriptors) -> Iterator[np.ndarray]:
    """The descriptors as 2-D blocks, never copying a whole array."""
    if isinstance(descriptors, DescriptorSets):
        yield descriptors.descriptors
    elif isinstance(descriptors, np.ndarray):
        if descriptors.ndim == 3:
            descriptors = descriptors.reshape(-1, descriptors.shape[-1])
        yield descriptors
    elif isinstance(descriptors, Iterable) and not isinstance(
        descriptors, (str, bytes)
    ):
        for index, block in enumerate(descriptors):
            if not isinstance(block, np.ndarray):
                block = as_float_matrix(block, f"descriptors[{index}]")
            yield block
    else:
        raise VladTypeError(
            "descriptors must be DescriptorSets, an array or an iterable of "
            f"arrays; got {type(descriptors).__name__}"
        )
