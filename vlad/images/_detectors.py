"""OpenCV's local feature detectors by name: SIFT, AKAZE and ORB.

Each kind is a :class:`Detector`: how to create the OpenCV detector at a given
threshold, the thresholds tried in turn when an image has too few keypoints
(OpenCV's default first, then lower and lower, so that low-contrast images get
keypoints), and how many real values a descriptor becomes.

AKAZE (MLDB, 486 bits) and ORB (256 bits) descriptors are binary: their bits
are unpacked to 0.0 / 1.0 float32 values (:func:`unpack_bits`). The squared
Euclidean distance between two unpacked descriptors is the Hamming distance
between the binary ones, so k-means, nearest-centre assignment and VLAD
residuals work on them as on SIFT.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from vlad.errors import VladError

__all__ = ["DETECTORS", "Detector", "detector", "unpack_bits"]


@dataclasses.dataclass(frozen=True)
class Detector:
    """One kind of OpenCV keypoint detector and descriptor.

    Attributes
    ----------
    name : str
        Its name in options and records: ``"sift"``, ``"akaze"`` or ``"orb"``.
    n_features : int
        Real values per descriptor (bits, for binary descriptors).
    binary : bool
        Whether OpenCV's descriptors are packed bits (``uint8`` bytes).
    thresholds : tuple of float
        Detection thresholds tried in turn, OpenCV's default first.
    create : callable
        ``create(threshold, max_keypoints)``: a new OpenCV ``Feature2D``;
        ``max_keypoints`` 0 means no limit. ``ImportError`` when this OpenCV
        lacks it.
    """

    name: str
    n_features: int
    binary: bool
    thresholds: tuple[float, ...]
    create: Callable


def _sift(threshold: float, max_keypoints: int):
    """OpenCV SIFT at contrast threshold ``threshold``."""
    import cv2

    return cv2.SIFT_create(nfeatures=max_keypoints, contrastThreshold=threshold)


def _akaze(threshold: float, max_keypoints: int):
    """OpenCV AKAZE (MLDB descriptors of 486 bits) at detector threshold
    ``threshold``; it has no keypoint limit of its own."""
    import cv2

    create = getattr(cv2, "AKAZE_create", None)
    if create is None:
        raise ImportError(
            f"features='akaze' requires OpenCV's AKAZE, which OpenCV "
            f"{cv2.__version__} lacks (OpenCV 5 moved it out of the main "
            "modules); install OpenCV 4 with: pip install "
            "'opencv-python-headless<5'"
        )
    return create(threshold=threshold)


#: ORB's keypoint limit when none is asked for (it needs one).
ORB_MAX_KEYPOINTS = 100_000


def _orb(threshold: float, max_keypoints: int):
    """OpenCV ORB (256 bits) at FAST threshold ``threshold``."""
    import cv2

    return cv2.ORB_create(
        nfeatures=max_keypoints or ORB_MAX_KEYPOINTS, fastThreshold=int(threshold)
    )


#: Detectors by name. Each threshold halves the one before, from OpenCV's
#: default (SIFT's contrastThreshold 0.04, AKAZE's threshold 0.001, ORB's
#: fastThreshold 20).
DETECTORS = {
    "sift": Detector("sift", 128, False, (0.04, 0.02, 0.01, 0.005, 0.0025), _sift),
    "akaze": Detector(
        "akaze", 486, True, (0.001, 0.0005, 0.00025, 0.000125, 0.0000625), _akaze
    ),
    "orb": Detector("orb", 256, True, (20, 10, 5, 2, 1), _orb),
}


def detector(name: str) -> Detector:
    """The detector called ``name``; ``ValueError`` naming the choices if none is.

    Examples
    --------
    >>> from vlad.images._detectors import detector
    >>> detector("orb").n_features
    256
    """
    try:
        return DETECTORS[name]
    except (KeyError, TypeError):
        raise VladError(
            f"Unknown features {name!r}; expected one of {sorted(DETECTORS)}"
        ) from None


def unpack_bits(descriptors: np.ndarray, n_bits: int) -> np.ndarray:
    """Binary descriptors as float32 rows of 0.0 and 1.0, one per bit.

    Parameters
    ----------
    descriptors : ndarray of uint8 of shape (n_descriptors, n_bytes)
        Packed bits, as OpenCV's ORB and AKAZE return them.
    n_bits : int
        Bits to keep per descriptor (AKAZE's 486 fill 61 bytes).

    Returns
    -------
    ndarray of float32 of shape (n_descriptors, n_bits)
        Bit ``j`` of byte ``i`` (most significant first) in column ``8 * i + j``.
        Squared Euclidean distances between rows are Hamming distances between
        the binary descriptors.

    Examples
    --------
    >>> import numpy as np
    >>> from vlad.images import unpack_bits
    >>> unpack_bits(np.array([[0b10000001]], np.uint8), 8).tolist()
    [[1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]]
    """
    bits = np.unpackbits(np.asarray(descriptors, dtype=np.uint8), axis=1)
    return np.ascontiguousarray(bits[:, :n_bits], dtype=np.float32)
