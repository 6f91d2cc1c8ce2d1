"""Learned local features, ALIKED (Zhao et al. 2023) run by kornia: their
options, checked, and their record.

:class:`LearnedOptions` says how the features are made (the network, its
weights, the image size, the keypoints kept, the device) and records it in
descriptor files and codebooks; describing images with them is
:mod:`vlad.images._learned_batches`'s, the network and its weights
:mod:`vlad.backends.kornia`'s.
"""

from __future__ import annotations

import dataclasses
import os
import re

from vlad.backends.kornia import import_kornia
from vlad.backends.kornia._networks import (
    ALIKED_DIMENSIONS,
    AlikedSettings,
    pretrained_weights,
)
from vlad.backends.kornia._weights import file_sha256
from vlad.core._parameters import Parameter
from vlad.errors import VladError, VladTypeError
from vlad.images._files import MAX_PIXELS

__all__ = [
    "CUDA_BATCH_SIZE",
    "LEARNED_EXTRACTORS",
    "LEARNED_PARAMETERS",
    "LearnedOptions",
    "check_device",
]

#: Name in descriptor records of each kind of learned features
#: (``LearnedOptions.features``).
LEARNED_EXTRACTORS = {"aliked": "aliked"}
#: Images run through the network at once on CUDA by default (on the CPU, 1:
#: a batch is no faster there, and the maps of a 1024-pixel image take about
#: 1 GB).
CUDA_BATCH_SIZE = 4
_DEVICE = re.compile(r"auto|cpu|cuda(:\d+)?|mps")
_SHA256 = re.compile(r"[0-9a-f]{64}")

#: The one specification of the checked fields of :class:`LearnedOptions`
#: (see :mod:`vlad.core._parameters`).
LEARNED_PARAMETERS = (
    Parameter(
        "features",
        str,
        "aliked",
        "Learned local features: ALIKED.",
        choices=tuple(sorted(LEARNED_EXTRACTORS)),
    ),
    Parameter(
        "model",
        str,
        "aliked-n16",
        "The network's configuration (kornia's names).",
        choices=tuple(sorted(ALIKED_DIMENSIONS)),
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
        4096,
        "Keep at most this many keypoints per image, the highest scores; 0 for "
        "the network's limit (20000).",
        low=0,
    ),
    Parameter(
        "detection_threshold",
        float,
        0.2,
        "Learned features: keep the keypoints scoring more than this (ALIKED's "
        "scores are in (0, 1)); 0 keeps the --max-keypoints highest.",
        low=0,
        high=1,
        closed="left",
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
        "batch_size",
        int,
        0,
        "Learned features: images run through the network at once (images of "
        f"one size); 0: 1 on the CPU, {CUDA_BATCH_SIZE} on CUDA.",
        low=0,
    ),
)


@dataclasses.dataclass(frozen=True)
class LearnedOptions:
    """How learned local features (ALIKED, by kornia) are extracted; checked
    on creation.

    Needs the ``learned`` extra (PyTorch and kornia) to
    run; making and checking the options does not import them.

    Parameters
    ----------
    features : {"aliked"}, default="aliked"
        The network: ALIKED (Zhao et al. 2023), 128 values per descriptor
        (64 for ``aliked-t16``), each of unit length.
    model : str, default="aliked-n16"
        The configuration, as kornia names them: ``"aliked-n16"``,
        ``"aliked-n16rot"``, ``"aliked-n32"`` or ``"aliked-t16"``; the
        weights must be its.
    max_side : int, default=1024
        Shrink images whose longest side exceeds this many pixels (area
        interpolation, as hloc); 0 keeps every image at full size.
    max_keypoints : int, default=4096
        Keep at most this many keypoints per image, the highest scores; 0 for
        the network's own limit, 20000.
    detection_threshold : float, default=0.2
        Keep the local maxima of the score map scoring more than this (an
        image with none keeps those above its mean score); 0 keeps the
        ``max_keypoints`` highest, whatever their score.
    max_pixels : int, default=MAX_PIXELS
        Skip image files of more pixels (read from their header), as
        :class:`vlad.SiftOptions`.
    weights : path-like, optional
        The network's weights, a PyTorch file (a state dict), read without
        running any code and checked key by key. By default, the authors'
        weights, downloaded once by kornia into PyTorch's hub cache.
    weights_sha256 : str, optional
        The SHA-256 the weights must have (that of a codebook's or index's
        descriptors); other weights are refused.
    device : str, default="auto"
        Where the network runs: ``"cpu"``, ``"cuda"`` (or ``"cuda:N"``),
        ``"mps"``, or ``"auto"``: CUDA where PyTorch has it, else the CPU.
    batch_size : int, default=0
        Images run through the network at once (consecutive images of one
        size); 0: 1 on the CPU, :data:`CUDA_BATCH_SIZE` on CUDA. The
        descriptors do not depend on it.

    Notes
    -----
    :meth:`record` names the extractor ``"aliked"`` and holds ``model``,
    ``max_side``, ``max_keypoints``, ``detection_threshold``, ``max_pixels``,
    the weights' ``weights_sha256`` and the versions of kornia and PyTorch;
    not the device, the batch size or where the weights are.

    References
    ----------
    .. [1] X. Zhao, X. Wu, W. Chen, P. C. Y. Chen, Q. Xu, Z. Li. "ALIKED: A
       Lighter Keypoint and Descriptor Extraction Network via Deformable
       Transformation". IEEE Transactions on Instrumentation and Measurement,
       2023.

    Examples
    --------
    >>> from vlad.images import LearnedOptions
    >>> options = LearnedOptions(max_side=512)
    >>> options.kind, options.n_features
    ('ALIKED (aliked-n16) at detected keypoints', 128)
    """

    features: str = "aliked"
    model: str = "aliked-n16"
    max_side: int = 1024
    max_keypoints: int = 4096
    detection_threshold: float = 0.2
    max_pixels: int = MAX_PIXELS
    weights: str | None = None
    weights_sha256: str | None = None
    device: str = "auto"
    batch_size: int = 0

    def __post_init__(self):
        for parameter in LEARNED_PARAMETERS:
            value = parameter.check(getattr(self, parameter.name))
            object.__setattr__(self, parameter.name, value)
        if self.weights is not None:
            if not isinstance(self.weights, (str, os.PathLike)):
                raise VladTypeError(
                    f"weights must be None or a path; got {self.weights!r:.80}"
                )
            object.__setattr__(self, "weights", os.fspath(self.weights))
        sha256 = self.weights_sha256
        if sha256 is not None and not (
            isinstance(sha256, str) and _SHA256.fullmatch(sha256)
        ):
            raise VladError(
                "weights_sha256 must be None or 64 lower-case hexadecimal digits; "
                f"got {sha256!r:.80}"
            )
        check_device(self.device)

    @property
    def n_features(self) -> int:
        """Values per descriptor: 128 (64 for ``aliked-t16``)."""
        return ALIKED_DIMENSIONS[self.model]

    @property
    def kind(self) -> str:
        """What the descriptors are, in words."""
        return f"ALIKED ({self.model}) at detected keypoints"

    def resolved(self) -> LearnedOptions:
        """These options with ``weights`` the file they name (the pretrained
        weights, downloaded once, by default) and ``weights_sha256`` its hash.

        Raises
        ------
        ImportError
            Without PyTorch and kornia.
        vlad.errors.VladError
            The file cannot be read, the pretrained weights cannot be
            downloaded, or the file's SHA-256 is not ``weights_sha256``.
        """
        import_kornia()
        path = self.weights
        if path is None:
            path = os.fspath(pretrained_weights(self.model))
        path = os.path.abspath(path)
        try:
            sha256 = file_sha256(path)
        except OSError as error:
            raise VladError(
                f"weights: cannot read {path}: {error.strerror or error}"
            ) from None
        if self.weights_sha256 is not None and sha256 != self.weights_sha256:
            raise VladError(
                f"weights: {path} has SHA-256 {sha256}, but descriptors made with "
                f"weights of SHA-256 {self.weights_sha256} are asked for (those "
                "of the codebook or index); give those weights"
            )
        return dataclasses.replace(self, weights=path, weights_sha256=sha256)

    def record(self) -> dict:
        """JSON-serialisable description, for ``DescriptorSets.metadata``
        (resolves the weights first, see :meth:`resolved`)."""
        resolved = self.resolved()
        torch, kornia = import_kornia()
        return {
            "extractor": LEARNED_EXTRACTORS[self.features],
            "model": self.model,
            "max_side": self.max_side,
            "max_keypoints": self.max_keypoints,
            "detection_threshold": self.detection_threshold,
            "max_pixels": self.max_pixels,
            "weights_sha256": resolved.weights_sha256,
            "kornia_version": kornia.__version__,
            "torch_version": torch.__version__,
        }

    @classmethod
    def from_record(cls, record: dict | None) -> LearnedOptions | None:
        """The options a :meth:`record` describes, its weights' SHA-256
        required; None for another extractor's record (or an empty one).

        Parameters
        ----------
        record : dict or None
            What :meth:`record` returned, or another extractor's record.

        Raises
        ------
        ValueError
            A record of learned features whose options are not valid.
        """
        kinds = {extractor: name for name, extractor in LEARNED_EXTRACTORS.items()}
        if not isinstance(record, dict) or record.get("extractor") not in kinds:
            return None
        recorded = {
            "model",
            "max_side",
            "max_keypoints",
            "detection_threshold",
            "max_pixels",
            "weights_sha256",
        }
        options = {key: value for key, value in record.items() if key in recorded}
        options["features"] = kinds[record["extractor"]]
        try:
            return cls(**options)
        except (TypeError, ValueError) as error:
            raise VladError(f"a descriptor record with bad options: {error}") from None

    def network_settings(self) -> AlikedSettings:
        """What makes the network, from resolved options."""
        return AlikedSettings(
            self.model,
            self.weights,
            self.weights_sha256,
            self.max_keypoints,
            self.detection_threshold,
        )


def check_device(device) -> str:
    """``device`` if it names a device :class:`LearnedOptions` takes, else
    ``ValueError``."""
    if not isinstance(device, str) or not _DEVICE.fullmatch(device):
        raise VladError(
            "device must be 'auto', 'cpu', 'cuda', 'cuda:N' or 'mps'; got "
            f"{device!r:.80}"
        )
    return device
