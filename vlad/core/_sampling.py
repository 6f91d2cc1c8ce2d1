"""A uniform sample of descriptors from a stream, in memory that does not grow.

Reservoir sampling (Vitter's Algorithm R): after ``n`` descriptors, each of
them is in the sample with probability ``capacity / n``, and the sample never
holds more than ``capacity``. Until the reservoir is full it holds every
descriptor, in the order given, so a stream shorter than the capacity gives
exactly its descriptors.
"""

from __future__ import annotations

import numpy as np

from vlad.core._validation import check_positive_int

__all__ = ["DescriptorReservoir"]


class DescriptorReservoir:
    """A uniform sample of at most ``capacity`` descriptors of a stream.

    Parameters
    ----------
    capacity : int
        Descriptors kept at most.
    n_features : int
        Columns of every block added.
    per_image : int or None, default=None
        Keep at most this many descriptors of each block (drawn at random,
        in their order) before sampling; None keeps all.
    seed : int or None, default=0
        Seed of the draws: the same seed and stream, the same sample.

    Examples
    --------
    >>> import numpy as np
    >>> reservoir = DescriptorReservoir(3, 2, seed=0)
    >>> reservoir.add(np.arange(4, dtype=np.float32).reshape(2, 2))
    >>> reservoir.sample
    array([[0., 1.],
           [2., 3.]], dtype=float32)
    >>> for _ in range(100):
    ...     reservoir.add(np.ones((5, 2), np.float32))
    >>> reservoir.sample.shape, reservoir.n_seen
    ((3, 2), 502)
    """

    def __init__(
        self,
        capacity: int,
        n_features: int,
        *,
        per_image: int | None = None,
        seed: int | None = 0,
    ):
        self.capacity = check_positive_int(capacity, "capacity")
        self.n_features = check_positive_int(n_features, "n_features")
        self.per_image = (
            None if per_image is None else check_positive_int(per_image, "per_image")
        )
        self.n_seen = 0
        self._rng = np.random.default_rng(seed)
        self._kept: np.ndarray | None = None
        self._n_kept = 0

    @property
    def sample(self) -> np.ndarray:
        """The sample, of shape (min(n_seen, capacity), n_features)."""
        if self._kept is None:
            return np.zeros((0, self.n_features), np.float32)
        return self._kept[: self._n_kept]

    def add(self, descriptors: np.ndarray) -> None:
        """Offer one image's descriptors, of shape (n, n_features), to the sample.

        Parameters
        ----------
        descriptors : ndarray of shape (n_descriptors, n_features)
            One image's descriptors. With ``per_image`` set, at most that many
            of them, drawn at random and kept in their order, are offered. The
            first block that is not empty sets the dtype of the sample.
        """
        if self.per_image is not None and len(descriptors) > self.per_image:
            rows = self._rng.choice(len(descriptors), self.per_image, replace=False)
            descriptors = descriptors[np.sort(rows)]
        if len(descriptors) == 0:
            return
        if self._kept is None:
            self._kept = np.empty((self.capacity, self.n_features), descriptors.dtype)
        n_free = min(self.capacity - self._n_kept, len(descriptors))
        self._kept[self._n_kept : self._n_kept + n_free] = descriptors[:n_free]
        self._n_kept += n_free
        self.n_seen += n_free
        rest = descriptors[n_free:]
        if len(rest):
            # Descriptor number t (from 0) replaces a uniform slot of t + 1.
            slots = self._rng.integers(0, self.n_seen + 1 + np.arange(len(rest)))
            for row in np.flatnonzero(slots < self.capacity):
                self._kept[slots[row]] = rest[row]
            self.n_seen += len(rest)
