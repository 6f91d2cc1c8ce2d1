"""Images described by learned features (:class:`vlad.images.LearnedOptions`),
in batches on a device.

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
fails on is skipped and reported; the batch goes on.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

import numpy as np

from vlad.backends.kornia._networks import (
    ALIKED_DIMENSIONS,
    NMS_RADIUS,
    aliked_network,
    resolve_device,
    run_aliked,
)
from vlad.core._pool import Progress, map_in_order
from vlad.errors import VladError
from vlad.images._files import ImageFile, ImageReadError, read_image
from vlad.images._learned import CUDA_BATCH_SIZE, LearnedOptions
from vlad.images._pixels import as_rgb_image

__all__ = ["describe_learned", "describe_learned_files", "prepare_image"]

#: An image whose shorter side (after shrinking) is at most this has no
#: keypoint: the detector drops maxima within NMS_RADIUS of the border.
_MIN_SIDE = 2 * NMS_RADIUS


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

    height, width = image.shape[:2]
    if max_side and max(height, width) > max_side:
        scale = max_side / max(height, width)
        size = (max(1, round(width * scale)), max(1, round(height * scale)))
        # A channel at a time: the same values as the three at once, and a
        # third of the float32 copy of a large photo in memory.
        pixels = np.stack(
            [
                cv2.resize(
                    image[:, :, channel].astype(np.float32),
                    size,
                    interpolation=cv2.INTER_AREA,
                )
                for channel in range(3)
            ]
        )
    else:
        pixels = np.ascontiguousarray(image.transpose(2, 0, 1), dtype=np.float32)
    pixels /= 255.0
    return pixels


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
