"""Local descriptors of one image: OpenCV SIFT, RootSIFT by default, or AKAZE
and ORB (see :mod:`vlad.images._detectors`)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from vlad.core._parameters import Parameter
from vlad.errors import VladError
from vlad.images._detectors import DETECTORS, detector, unpack_bits
from vlad.images._files import MAX_PIXELS
from vlad.images._pixels import as_grey_image

__all__ = [
    "DESCRIPTOR_PARAMETERS",
    "DENSE_MIN_STEP",
    "DENSE_SIZES",
    "EXTRACTOR",
    "EXTRACTORS",
    "MIN_KEYPOINTS",
    "N_FEATURES",
    "SiftOptions",
    "extract_keypoints_with_options",
    "extract_sift",
    "extract_with_options",
    "root_sift",
]

#: Name of this extractor in descriptor records (``DescriptorSets.metadata``).
EXTRACTOR = "opencv-sift"
#: Name in descriptor records of each kind of features (``SiftOptions.features``).
EXTRACTORS = {name: f"opencv-{name}" for name in DETECTORS}
#: Default of ``SiftOptions.min_keypoints``.
MIN_KEYPOINTS = 20
#: SIFT descriptor dimension.
N_FEATURES = 128
#: Keypoint diameters, in pixels, of the dense grid's scales.
DENSE_SIZES = (8.0, 16.0, 32.0)
#: Smallest spacing, in pixels, of the dense grid.
DENSE_MIN_STEP = 8
#: L1 norms below this count as this, so that an all-zero descriptor stays zero.
L1_FLOOR = 1e-12

#: The one specification of each field of :class:`SiftOptions`, from which
#: its checks, :class:`vlad.SIFTExtractor`'s constraints and the command
#: line's descriptor options are made (see :mod:`vlad.core._parameters`).
DESCRIPTOR_PARAMETERS = (
    Parameter(
        "features",
        str,
        "sift",
        "Local features: SIFT (128 values), or the binary AKAZE (486 bits) or ORB "
        "(256 bits), their bits unpacked to 0/1 values.",
        choices=tuple(sorted(DETECTORS)),
    ),
    Parameter(
        "root_sift",
        bool,
        None,
        "RootSIFT (L1-normalised, square-rooted SIFT) or plain SIFT.",
        none=True,
    ),
    Parameter(
        "dense",
        bool,
        False,
        "Keypoints on a grid at three scales instead of detected ones (for images "
        "without texture).",
    ),
    Parameter(
        "max_side",
        int,
        1024,
        "Shrink images to at most this many pixels on their longest side first; "
        "0 keeps them whole.",
        low=0,
    ),
    Parameter(
        "max_keypoints",
        int,
        2000,
        "Keep at most this many keypoints per image, the strongest; 0 keeps all.",
        low=0,
    ),
    Parameter(
        "min_keypoints",
        int,
        MIN_KEYPOINTS,
        "Detect again at lower thresholds (halved up to four times) in images with "
        "fewer keypoints; 0 detects once.",
        low=0,
    ),
    Parameter(
        "max_pixels",
        int,
        MAX_PIXELS,
        "Skip (and report) images of more pixels, read from their header before "
        "decoding; 0 for no limit.",
        low=0,
    ),
    Parameter(
        "reduce_jpeg",
        bool,
        False,
        "Decode JPEGs at 1/2, 1/4 or 1/8 size when the longest side stays at least "
        "--max-side (faster, less memory; close descriptors).",
    ),
    Parameter(
        "affine_tilts",
        int,
        0,
        "Also detect keypoints in views simulating the camera tilted by up to "
        "sqrt(2)**N (ASIFT: 5, 10, 18 views for 1, 2, 3), for wide viewpoint "
        "changes; detection takes about 4x, 7x, 10x longer. 0: none.",
        low=0,
    ),
)


@dataclasses.dataclass(frozen=True)
class SiftOptions:
    """How descriptors are extracted from an image; checked on creation.

    Parameters
    ----------
    root_sift : bool or None, default=None
        Map each descriptor to RootSIFT (see :func:`root_sift`). None means
        True for SIFT and False for the binary features, to which it does not
        apply.
    dense : bool, default=False
        Describe keypoints on a regular grid at the scales of
        :data:`DENSE_SIZES` instead of detected ones; images without texture
        still get descriptors. SIFT only.
    max_side : int, default=1024
        Shrink images whose longest side exceeds this many pixels before
        extraction; 0 keeps every image at full size.
    max_keypoints : int, default=2000
        Keep at most this many keypoints per image: the strongest detected
        ones, or a dense grid spaced to fit; 0 keeps them all.
    max_pixels : int, default=MAX_PIXELS
        Refuse images of more pixels (width x height; 2**27, 134 million, by
        default): image files before they are decoded (they are skipped and
        reported), image arrays with a ``ValueError``; 0 for no limit. It
        bounds the memory one image takes (decoding, and SIFT when
        ``max_side`` is 0).
    min_keypoints : int, default=MIN_KEYPOINTS
        When the detector finds fewer keypoints than this, detect again at a
        lower threshold, halving it up to four times (SIFT's contrast
        threshold from 0.04 to 0.0025; see
        :data:`vlad.images._detectors.DETECTORS`) until it finds this many, so
        that low-contrast images get descriptors. The descriptors stay of the
        same kind, for the same codebook. 0 detects once, at OpenCV's default;
        at most ``max_keypoints`` are asked for.
    features : {"sift", "akaze", "orb"}, default="sift"
        The detector and descriptor: SIFT (128 values), or AKAZE (486 bits)
        or ORB (256 bits), whose bits are unpacked to 0.0 / 1.0 values (see
        :func:`vlad.images.unpack_bits`).
    reduce_jpeg : bool, default=False
        Decode a JPEG file at 1/2, 1/4 or 1/8 of its size, the largest
        reduction that keeps its longest side at least ``max_side`` (see
        :func:`vlad.images.read_image_reduced`): large photos are read
        several times faster and in a fraction of the memory; descriptors
        are close to, not the same as, those of the whole image shrunk.
        Recorded only when True.
    affine_tilts : int, default=0
        Also detect keypoints in views of the image that simulate the camera
        tilted away from it (ASIFT, Morel & Yu 2009, by OpenCV's
        ``AffineFeature``): tilts of sqrt(2) to sqrt(2) ** ``affine_tilts``,
        each at several rotations (5 views in all for 1, 10 for 2, 18 for 3,
        28 for 4). Keypoint positions are mapped back to the image (those
        landing just outside it moved to its border); their size and angle
        are those in the view they were found in. The descriptors are of
        the same kind and size, but distributed otherwise: a codebook
        refuses descriptors made with other tilts than its own.
        Detection takes about as many times longer as there are views,
        shrunk ones counting less (about 4x, 7x, 10x for 1, 2, 3 tilts).
        ``max_keypoints`` bounds the keypoints of each view and then of the
        image, keeping the strongest. 0 simulates no tilt; not with
        ``dense``. Recorded only when not 0.
    """

    root_sift: bool | None = None
    dense: bool = False
    max_side: int = 1024
    max_keypoints: int = 2000
    max_pixels: int = MAX_PIXELS
    min_keypoints: int = MIN_KEYPOINTS
    features: str = "sift"
    reduce_jpeg: bool = False
    affine_tilts: int = 0

    def __post_init__(self):
        # Plain Python values keep the record JSON-serialisable.
        for parameter in DESCRIPTOR_PARAMETERS:
            value = parameter.check(getattr(self, parameter.name))
            object.__setattr__(self, parameter.name, value)
        # Features this OpenCV lacks fail here, before any image is read (SIFT
        # is in every OpenCV: no import needed).
        kind = detector(self.features)
        if kind.name != "sift":
            kind.create(kind.thresholds[0], 0)
        if self.root_sift is None:
            object.__setattr__(self, "root_sift", self.features == "sift")
        if self.features != "sift" and (self.root_sift or self.dense):
            option = "root_sift" if self.root_sift else "dense"
            raise VladError(
                f"{option}=True applies to SIFT only; got features={self.features!r}"
            )
        if self.dense and self.affine_tilts:
            raise VladError(
                "affine_tilts applies to detected keypoints, not to a dense grid; "
                f"got affine_tilts={self.affine_tilts} with dense=True"
            )

    @property
    def n_features(self) -> int:
        """Values per descriptor: 128 (SIFT), 486 (AKAZE) or 256 (ORB)."""
        return detector(self.features).n_features

    @property
    def kind(self) -> str:
        """What the descriptors are, in words: ``"RootSIFT at detected keypoints"``."""
        if self.features != "sift":
            descriptor = f"{self.features.upper()} ({self.n_features} bits)"
        else:
            descriptor = "RootSIFT" if self.root_sift else "SIFT"
        keypoints = "on a dense grid" if self.dense else "at detected keypoints"
        if self.affine_tilts:
            keypoints += f" of affine views (tilts up to {self.affine_tilts})"
        return f"{descriptor} {keypoints}"

    def record(self) -> dict:
        """JSON-serialisable description, for ``DescriptorSets.metadata``."""
        import cv2

        fields = dataclasses.asdict(self)
        # Records of descriptors made without these options stay as they were.
        if not self.reduce_jpeg:
            del fields["reduce_jpeg"]
        if not self.affine_tilts:
            del fields["affine_tilts"]
        return {
            "extractor": EXTRACTORS[self.features],
            **fields,
            "opencv_version": cv2.__version__,
        }

    @classmethod
    def from_record(cls, record: dict | None) -> SiftOptions | None:
        """The options a :meth:`record` describes; None if it describes none of
        OpenCV's features (another extractor's, or an empty record).

        Options a record lacks (one written before they existed) take their
        defaults, except ``features``, which its ``extractor`` names.

        Parameters
        ----------
        record : dict or None
            What :meth:`record` returned, or another extractor's record.

        Raises
        ------
        ValueError
            A record of this extractor whose options are not valid.
        """
        kinds = {extractor: name for name, extractor in EXTRACTORS.items()}
        if not isinstance(record, dict) or record.get("extractor") not in kinds:
            return None
        fields = {field.name for field in dataclasses.fields(cls)}
        options = {key: value for key, value in record.items() if key in fields}
        options["features"] = kinds[record["extractor"]]
        try:
            return cls(**options)
        except (TypeError, ValueError) as error:
            raise VladError(f"a descriptor record with bad options: {error}") from None


def extract_sift(
    image,
    *,
    root_sift: bool | None = None,
    dense: bool = False,
    max_side: int = 1024,
    max_keypoints: int = 2000,
    max_pixels: int = MAX_PIXELS,
    min_keypoints: int = MIN_KEYPOINTS,
    features: str = "sift",
    affine_tilts: int = 0,
) -> np.ndarray:
    """SIFT descriptors of one image (RootSIFT by default), or AKAZE or ORB.

    Parameters
    ----------
    image : array-like of shape (height, width) or (height, width, channels)
        Grey, RGB or RGBA; see :func:`vlad.images._pixels.as_grey_image`. A
        path is refused with a ``TypeError``: read it with
        :func:`vlad.read_image` first.
    root_sift, dense, max_side, max_keypoints, max_pixels, min_keypoints, features
        See :class:`SiftOptions`.
    affine_tilts : int, default=0
        See :class:`SiftOptions`.

    Returns
    -------
    descriptors : ndarray of float32 of shape (n_keypoints, n_features)
        ``n_features`` is 128 for SIFT, 486 for AKAZE and 256 for ORB (bits,
        0.0 or 1.0). ``n_keypoints`` may be 0 (an image without texture has
        no keypoints).

    See Also
    --------
    vlad.SIFTExtractor : The same as a scikit-learn transformer over many images.
    vlad.extract_images : The same over folders of image files, in parallel.

    References
    ----------
    .. [1] D. G. Lowe. "Distinctive image features from scale-invariant
       keypoints". IJCV 2004.
    .. [2] R. Arandjelović, A. Zisserman. "Three things everyone should know to
       improve object retrieval". CVPR 2012.
    .. [3] J.-M. Morel, G. Yu. "ASIFT: A new framework for fully affine
       invariant image comparison". SIAM J. Imaging Sciences 2009.

    Examples
    --------
    >>> import vlad.images._files, vlad.images._sift
    >>> image = vlad.images.read_image("data/chelsea.jpg")
    >>> descriptors = vlad.images.extract_sift(image, max_keypoints=100)
    >>> descriptors.shape, descriptors.dtype
    ((100, 128), dtype('float32'))
    """
    options = SiftOptions(
        root_sift,
        dense,
        max_side,
        max_keypoints,
        max_pixels,
        min_keypoints,
        features,
        affine_tilts=affine_tilts,
    )
    return extract_with_options(as_grey_image(image), options)


def extract_with_options(image: np.ndarray, options: SiftOptions) -> np.ndarray:
    """:func:`extract_sift` on a grey ``uint8`` image (as
    :func:`vlad.images._pixels.as_grey_image` returns) with checked options."""
    return extract_keypoints_with_options(image, options)[1]


def extract_keypoints_with_options(
    image: np.ndarray, options: SiftOptions
) -> tuple[np.ndarray, np.ndarray]:
    """Keypoint positions and descriptors of a grey ``uint8`` image.

    The descriptors are those of :func:`extract_with_options`; the keypoints
    say where each was taken, in the coordinates of ``image`` even when
    ``options.max_side`` shrank it for extraction.

    Parameters
    ----------
    image : ndarray of uint8 of shape (height, width)
        As :func:`vlad.images._pixels.as_grey_image` returns.
    options : SiftOptions

    Returns
    -------
    keypoints : ndarray of float32 of shape (n_keypoints, 4)
        x, y (pixels, pixel centres at integers), size (diameter in pixels)
        and angle (degrees, as OpenCV's; 0 on the dense grid) of each
        keypoint.
    descriptors : ndarray of float32 of shape (n_keypoints, options.n_features)
        Row ``i`` describes keypoint ``i``.

    See Also
    --------
    vlad.DescriptorSets.keypoints : Where they are kept beside descriptors.

    Examples
    --------
    >>> import vlad.images._files, vlad.images._sift
    >>> image = vlad.images.read_image("data/chelsea.jpg")
    >>> options = vlad.images.SiftOptions(max_side=256, max_keypoints=100)
    >>> keypoints, descriptors = vlad.images._sift.extract_keypoints_with_options(
    ...     image, options
    ... )
    >>> keypoints.shape, descriptors.shape
    ((100, 4), (100, 128))
    >>> bool(keypoints[:, 0].max() < image.shape[1] <= 2 * 256)
    True
    """
    import cv2

    if options.max_pixels and image.size > options.max_pixels:
        raise VladError(
            f"image of {image.shape[1]} x {image.shape[0]} pixels is more than "
            f"max_pixels={options.max_pixels}"
        )
    shrunk = _shrink_to(image, options.max_side)
    if options.dense:
        keypoints = _dense_grid(shrunk.shape, options.max_keypoints)
        if not keypoints:
            # OpenCV fails on an empty list (images a few pixels across).
            return _no_keypoints(options.n_features)
        keypoints, descriptors = cv2.SIFT_create().compute(shrunk, keypoints)
    else:
        keypoints, descriptors = _detect(shrunk, options)
    if descriptors is None or len(keypoints) == 0:
        return _no_keypoints(options.n_features)
    positions = np.array(
        [(*keypoint.pt, keypoint.size, keypoint.angle) for keypoint in keypoints],
        dtype=np.float32,
    )
    if options.max_keypoints and len(keypoints) > options.max_keypoints:
        # OpenCV keeps every keypoint tied with the weakest one it retains.
        responses = np.array([keypoint.response for keypoint in keypoints])
        strongest = np.argsort(-responses, kind="stable")[: options.max_keypoints]
        kept = np.sort(strongest)
        descriptors, positions = descriptors[kept], positions[kept]
    kind = detector(options.features)
    if kind.binary:
        descriptors = unpack_bits(descriptors, kind.n_features)
    descriptors = np.ascontiguousarray(descriptors, dtype=np.float32)
    if options.root_sift:
        _root_sift_in_place(descriptors)
    if options.affine_tilts:
        # Mapped back from a tilted view, a keypoint at its border may land a
        # pixel or so outside the image.
        height, width = shrunk.shape
        np.clip(positions[:, 0], -0.5, width - 0.5, out=positions[:, 0])
        np.clip(positions[:, 1], -0.5, height - 0.5, out=positions[:, 1])
    _scale_back_in_place(positions, image.shape, shrunk.shape)
    return np.ascontiguousarray(positions), descriptors


def _detect(image: np.ndarray, options: SiftOptions) -> tuple:
    """OpenCV's keypoints and descriptors of ``image``, detected at lower and
    lower thresholds until there are ``options.min_keypoints`` (or the
    thresholds run out: the last try is kept)."""
    kind = detector(options.features)
    enough = options.min_keypoints
    if options.max_keypoints:
        enough = min(enough, options.max_keypoints)
    for threshold in kind.thresholds:
        features = kind.create(threshold, options.max_keypoints)
        if options.affine_tilts:
            features = _affine_views(features, options.affine_tilts)
        keypoints, descriptors = features.detectAndCompute(image, None)
        if len(keypoints) >= enough:
            break
    return keypoints, descriptors


def _affine_views(features, tilts: int):
    """OpenCV's ``AffineFeature`` around ``features``: detection in the image
    and in its views at tilts up to sqrt(2) ** ``tilts`` (ASIFT's sampling)."""
    import cv2

    return cv2.AffineFeature_create(features, maxTilt=tilts)


def root_sift(descriptors) -> np.ndarray:
    """RootSIFT: L1-normalise each descriptor, then take the square root.

    Comparing RootSIFT descriptors with the Euclidean distance is comparing the
    original ones with the Hellinger kernel (Arandjelović & Zisserman 2012).

    Parameters
    ----------
    descriptors : array-like of shape (n_descriptors, n_features)
        Non-negative descriptors such as SIFT's.

    Returns
    -------
    ndarray of float32 of shape (n_descriptors, n_features)
        Each row has unit L2 norm (an all-zero row stays zero).

    Examples
    --------
    >>> import vlad.images._sift
    >>> vlad.images.root_sift([[1.0, 3.0], [0.0, 0.0]]).tolist()
    [[0.5, 0.8660253882408142], [0.0, 0.0]]
    """
    array = np.array(descriptors, dtype=np.float32, ndmin=2)
    if array.ndim != 2:
        raise VladError(
            "descriptors must be a 2-D array of shape (n_descriptors, n_features); "
            f"got shape {array.shape}"
        )
    if array.size and not array.min() >= 0.0:
        raise VladError(
            "descriptors must be non-negative and finite; "
            f"got a minimum of {array.min()}"
        )
    _root_sift_in_place(array)
    return array


def _root_sift_in_place(descriptors: np.ndarray) -> None:
    """:func:`root_sift` on a float32 array of non-negative rows, in place."""
    norms = descriptors.sum(axis=1, keepdims=True)
    np.maximum(norms, L1_FLOOR, out=norms)
    descriptors /= norms
    np.sqrt(descriptors, out=descriptors)


def _shrink_to(image: np.ndarray, max_side: int) -> np.ndarray:
    """``image`` resized (area interpolation) so that its longest side is at
    most ``max_side``; unchanged when it already is or ``max_side`` is 0."""
    import cv2

    height, width = image.shape
    if not max_side or max(height, width) <= max_side:
        return image
    scale = max_side / max(height, width)
    size = (max(1, round(width * scale)), max(1, round(height * scale)))
    return cv2.resize(image, size, interpolation=cv2.INTER_AREA)


def _no_keypoints(n_features: int) -> tuple[np.ndarray, np.ndarray]:
    """Empty keypoints and descriptors."""
    return (
        np.zeros((0, 4), dtype=np.float32),
        np.zeros((0, n_features), dtype=np.float32),
    )


def _scale_back_in_place(
    positions: np.ndarray, shape: tuple[int, int], shrunk_shape: tuple[int, int]
) -> None:
    """Map ``(x, y, size, angle)`` rows found on an image of ``shrunk_shape``
    to the image of ``shape`` it was resized from.

    Resizing maps the centre of pixel ``i`` to ``(i + 0.5) * scale - 0.5``, so
    positions scale about pixel edges, not centres. The two axes' scales differ
    slightly (sides are rounded); sizes take their mean.
    """
    if shape == shrunk_shape:
        return
    (height, width), (shrunk_height, shrunk_width) = shape, shrunk_shape
    scale_x, scale_y = width / shrunk_width, height / shrunk_height
    positions[:, 0] = (positions[:, 0] + 0.5) * scale_x - 0.5
    positions[:, 1] = (positions[:, 1] + 0.5) * scale_y - 0.5
    positions[:, 2] *= (scale_x + scale_y) / 2


def _dense_grid(shape: tuple[int, int], max_keypoints: int) -> list:
    """Upright keypoints on a square grid at every size of :data:`DENSE_SIZES`.

    The grid step is the smallest (at least :data:`DENSE_MIN_STEP` pixels) that
    keeps the total within ``max_keypoints`` (0: no limit).
    """
    import cv2

    height, width = shape
    step = DENSE_MIN_STEP
    if max_keypoints:
        area_per_keypoint = len(DENSE_SIZES) * height * width / max_keypoints
        step = max(step, math.ceil(math.sqrt(area_per_keypoint)))
    while True:
        columns = np.arange(step / 2, width, step)
        rows = np.arange(step / 2, height, step)
        count = len(DENSE_SIZES) * len(columns) * len(rows)
        if not max_keypoints or count <= max_keypoints:
            break
        step += 1
    return [
        cv2.KeyPoint(float(x), float(y), size, 0.0)
        for size in DENSE_SIZES
        for y in rows
        for x in columns
    ]
