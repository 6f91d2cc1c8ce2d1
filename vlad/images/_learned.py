"""Learned local features: ALIKED (Zhao et al. 2023), run by kornia on the CPU
or a GPU, images in batches.

Images are prepared as hloc prepares them for ALIKED, so that descriptors
match those of its feature files: RGB, converted to float32, shrunk with area
interpolation so that the longest side is at most ``max_side`` (sides
rounded), divided by 255; keypoints are mapped back to the image's pixels by
``(x + 0.5) * scale - 0.5`` on each axis, and sorted by detection score,
highest first. A keypoint's score takes the place of its size (as in hloc's
files read by :mod:`vlad.formats._hloc`), so that spatial verification keeps
the highest-scoring keypoints; its angle is 0.

Image files are decoded and prepared on ``n_jobs`` threads, ahead of the
network, which runs on batches of images of one size (consecutive images of
the same size after shrinking), on the main thread. An image the network
fails on is skipped and reported; the batch goes on. The network and its
weights are :mod:`vlad.backends.kornia`'s.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import os
import re
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

import numpy as np

from vlad.backends.kornia import import_kornia
from vlad.backends.kornia._networks import (
    ALIKED_DIMENSIONS,
    NMS_RADIUS,
    AlikedSettings,
    aliked_network,
    pretrained_weights,
    resolve_device,
    run_aliked,
)
from vlad.backends.kornia._weights import file_sha256
from vlad.core._parameters import Parameter
from vlad.core._pool import Progress, map_in_order
from vlad.errors import VladError
from vlad.images._files import MAX_PIXELS, ImageFile, ImageReadError, read_image
from vlad.images._pixels import as_rgb_image

__all__ = [
    "CUDA_BATCH_SIZE",
    "LEARNED_EXTRACTORS",
    "LEARNED_PARAMETERS",
    "LearnedOptions",
    "check_device",
    "describe_learned",
    "describe_learned_files",
    "prepare_image",
]

logger = logging.getLogger(__name__)

#: Name in descriptor records of each kind of learned features
#: (``LearnedOptions.features``).
LEARNED_EXTRACTORS = {"aliked": "aliked"}
#: Images run through the network at once on CUDA by default (on the CPU, 1:
#: a batch is no faster there, and a 1024-pixel image takes about 2 GB).
CUDA_BATCH_SIZE = 4
#: An image whose shorter side (after shrinking) is at most this has no
#: keypoint: the detector drops maxima within NMS_RADIUS of the border.
_MIN_SIDE = 2 * NMS_RADIUS
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

    Needs ``pip install 'vlad-toolkit[learned]'`` (PyTorch and kornia) to
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
                raise TypeError(
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


@dataclasses.dataclass
class _Prepared:
    """An image as the network takes it, and the size it was shrunk from."""

    pixels: np.ndarray  # (3, height, width) float32 in [0, 1]
    shape: tuple[int, int]  # (height, width) of the image


def prepare_image(image: np.ndarray, max_side: int) -> np.ndarray:
    """An RGB ``uint8`` image as ALIKED takes it, as hloc prepares it.

    Parameters
    ----------
    image : ndarray of uint8 of shape (height, width, 3)
    max_side : int
        Shrink with area interpolation (on float32 values) to at most this
        many pixels on the longest side, sides rounded; 0 keeps the size.

    Returns
    -------
    ndarray of float32 of shape (3, new_height, new_width)
        Values in [0, 1].
    """
    import cv2

    pixels = image.astype(np.float32)
    height, width = image.shape[:2]
    if max_side and max(height, width) > max_side:
        scale = max_side / max(height, width)
        size = (max(1, round(width * scale)), max(1, round(height * scale)))
        pixels = cv2.resize(pixels, size, interpolation=cv2.INTER_AREA)
    pixels /= 255.0
    return np.ascontiguousarray(pixels.transpose(2, 0, 1))


def _prepare_file(
    image: ImageFile, *, options: LearnedOptions
) -> tuple[ImageFile, _Prepared | ImageReadError]:
    """An image file decoded and prepared, or the error that kept it from
    being read."""
    try:
        pixels = read_image(image.path, max_pixels=options.max_pixels, colour=True)
    except ImageReadError as error:
        return image, error
    return image, _Prepared(prepare_image(pixels, options.max_side), pixels.shape[:2])


def describe_learned_files(
    images: Sequence[ImageFile],
    options: LearnedOptions,
    n_jobs: int | None,
    progress: Progress | None = None,
) -> Iterator[tuple[ImageFile, tuple[np.ndarray, np.ndarray] | ImageReadError]]:
    """Keypoints and descriptors of image files, in order, or the error that
    kept each from being read.

    Images are decoded and prepared on ``n_jobs`` threads ahead of the
    network, which runs on batches of consecutive images of one size.

    Parameters
    ----------
    images : sequence of ImageFile
    options : LearnedOptions
    n_jobs : int or None
        Threads decoding images; None or -1 for every core.
    progress : callable, optional
        Called as ``progress(n_done, n_total)`` after each image.

    Yields
    ------
    image : ImageFile
    features : (keypoints, descriptors) or ImageReadError
        As :func:`describe_learned` returns them, or why the image was
        skipped (unreadable, or the network failed on it).

    Raises
    ------
    ImportError
        Without PyTorch and kornia.
    vlad.errors.VladError
        Weights that cannot be read or are not the network's, or a device
        PyTorch does not have.
    """
    options = options.resolved()
    device = resolve_device(options.device)
    network = aliked_network(options.network_settings(), device)
    batch_size = options.batch_size or (CUDA_BATCH_SIZE if device.type == "cuda" else 1)
    prepare = functools.partial(_prepare_file, options=options)
    prepared = map_in_order(prepare, images, n_jobs)
    n_done = 0
    for group in _groups(prepared, batch_size):
        for image, features in _describe_group(group, network, device):
            n_done += 1
            if progress is not None:
                progress(n_done, len(images))
            yield image, features


def _runs_network(prepared) -> bool:
    """Whether ``prepared`` goes through the network: read, and large enough
    to have keypoints."""
    return (
        isinstance(prepared, _Prepared) and min(prepared.pixels.shape[1:]) > _MIN_SIDE
    )


def _groups(items: Iterable[tuple], batch_size: int) -> Iterator[list[tuple]]:
    """Consecutive ``(image, prepared)`` items, cut so that each list holds at
    most ``batch_size`` images for the network, all of one size (with the
    images between them that skip it)."""
    group: list[tuple] = []
    shape, n_inputs = None, 0
    for item in items:
        if _runs_network(item[1]):
            if n_inputs and (n_inputs == batch_size or item[1].pixels.shape != shape):
                yield group
                group, n_inputs = [], 0
            shape = item[1].pixels.shape
            n_inputs += 1
        group.append(item)
    if group:
        yield group


def _describe_group(group: list[tuple], network, device) -> list[tuple]:
    """Each item of a group with its features, the network run once on its
    images (or on each alone, if it fails on them together)."""
    inputs = [prepared for _, prepared in group if _runs_network(prepared)]
    found = _run(network, inputs, device) if inputs else []
    if isinstance(found, Exception) and len(inputs) > 1:
        found = [_run(network, [prepared], device) for prepared in inputs]
        found = [one if isinstance(one, Exception) else one[0] for one in found]
    elif isinstance(found, Exception):
        found = [found]
    results, outputs = [], iter(found)
    for image, prepared in group:
        if isinstance(prepared, ImageReadError):
            results.append((image, prepared))
        elif not _runs_network(prepared):
            results.append((image, _no_keypoints(_dimension(network))))
        else:
            output = next(outputs)
            if isinstance(output, Exception):
                reason = (str(output).strip().splitlines() or [""])[0]
                results.append(
                    (
                        image,
                        ImageReadError(
                            image.name,
                            f"the network raised {type(output).__name__}: {reason}",
                        ),
                    )
                )
            else:
                results.append((image, _features(output, prepared, image.name)))
    return results


def _dimension(network) -> int:
    """The descriptor dimension of a kornia ALIKED network."""
    return ALIKED_DIMENSIONS[network.model_name]


def _run(network, inputs: list[_Prepared], device) -> list | Exception:
    """The network's output for ``inputs`` (of one size), or the exception it
    raised (out of memory, say)."""
    batch = np.stack([prepared.pixels for prepared in inputs])
    try:
        return run_aliked(network, batch, device)
    except (RuntimeError, ValueError, MemoryError) as error:
        # torch.cuda.OutOfMemoryError is a RuntimeError.
        return error


def _features(
    output: tuple[np.ndarray, np.ndarray, np.ndarray], prepared: _Prepared, name: str
) -> tuple[np.ndarray, np.ndarray] | ImageReadError:
    """Keypoints ``(x, y, score, 0)`` in the image's pixels and descriptors,
    highest score first; an error for non-finite values."""
    points, scores, descriptors = output
    if not (
        np.isfinite(points).all()
        and np.isfinite(scores).all()
        and np.isfinite(descriptors).all()
    ):
        return ImageReadError(name, "the network gave NaN or infinite values")
    order = np.argsort(-scores, kind="stable")
    height, width = prepared.shape
    scale = np.array(
        [width / prepared.pixels.shape[2], height / prepared.pixels.shape[1]],
        dtype=np.float32,
    )
    keypoints = np.zeros((len(order), 4), dtype=np.float32)
    # hloc's mapping to the original pixels: about pixel edges, per axis.
    keypoints[:, :2] = (points[order] + 0.5) * scale - 0.5
    keypoints[:, 2] = scores[order]
    return keypoints, np.ascontiguousarray(descriptors[order], dtype=np.float32)


def _no_keypoints(n_features: int) -> tuple[np.ndarray, np.ndarray]:
    """Empty keypoints and descriptors."""
    return (
        np.zeros((0, 4), dtype=np.float32),
        np.zeros((0, n_features), dtype=np.float32),
    )


def describe_learned(
    image, options: LearnedOptions, name: str | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Keypoints and descriptors of one image file (path-like) or RGB image
    array.

    Returns
    -------
    keypoints : ndarray of float32 of shape (n_keypoints, 4)
        x, y (the image's pixels, pixel centres at integers), the detection
        score (where SIFT has a size) and 0 (the angle), highest score first.
    descriptors : ndarray of float32 of shape (n_keypoints, options.n_features)

    Raises
    ------
    vlad.ImageReadError
        A file that cannot be read, or an image the network failed on.
    """
    if isinstance(image, (str, os.PathLike)):
        item = ImageFile(image, name or os.fspath(image))
        results = describe_learned_files([item], options, n_jobs=1)
    else:
        pixels = as_rgb_image(image)
        if (
            options.max_pixels
            and pixels.shape[0] * pixels.shape[1] > options.max_pixels
        ):
            raise VladError(
                f"image of {pixels.shape[1]} x {pixels.shape[0]} pixels is more "
                f"than max_pixels={options.max_pixels}"
            )
        item = ImageFile(Path(name or "image"), name or "an image")
        resolved = options.resolved()
        device = resolve_device(resolved.device)
        network = aliked_network(resolved.network_settings(), device)
        prepared = _Prepared(prepare_image(pixels, options.max_side), pixels.shape[:2])
        results = _describe_group([(item, prepared)], network, device)
    _, features = next(iter(results))
    if isinstance(features, ImageReadError):
        raise features
    return features
