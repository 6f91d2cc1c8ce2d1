"""kornia's ALIKED with its weights on a device, and batches of images through it.

:func:`aliked_network` makes the network once per process for each set of
weights, settings and device (a process that describes many folders, or a
Dask worker that makes many shards, loads it once). :func:`run_aliked`
sends a batch of images of one size to the device (from pinned memory on
CUDA, without waiting) and brings back the keypoints, scores and descriptors
of the whole batch in one transfer.
"""

from __future__ import annotations

import dataclasses
import os
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from vlad.backends.kornia import import_kornia
from vlad.backends.kornia._weights import (
    file_sha256,
    load_weights_strictly,
    read_weights,
)
from vlad.errors import VladError

__all__ = [
    "ALIKED_DIMENSIONS",
    "ALIKED_RECOMPUTED",
    "NMS_RADIUS",
    "PRETRAINED_URLS",
    "AlikedSettings",
    "aliked_network",
    "pretrained_weights",
    "resolve_device",
    "run_aliked",
]

#: Descriptor dimension of each of kornia's ALIKED configurations.
ALIKED_DIMENSIONS = {
    "aliked-n16": 128,
    "aliked-n16rot": 128,
    "aliked-n32": 128,
    "aliked-t16": 64,
}
#: The buffers ALIKED's constructor computes from its settings (the offsets of
#: the soft-argmax window of its detector), which the authors' checkpoints
#: leave out.
ALIKED_RECOMPUTED = frozenset({"dkd.hw_grid"})
#: Radius of the detector's non-maximum suppression: kornia's and the
#: authors' default, as hloc uses it.
NMS_RADIUS = 2
#: Where the authors' weights are: their repository, then kornia's copy.
PRETRAINED_URLS = (
    "https://github.com/Shiaoming/ALIKED/raw/main/models/{}.pth",
    "https://huggingface.co/kornia/aliked/resolve/main/{}.pth",
)
#: Networks kept per process (each a few megabytes of weights).
_MAX_NETWORKS = 4
_NETWORKS: dict = {}
_NETWORKS_LOCK = threading.Lock()


@dataclasses.dataclass(frozen=True)
class AlikedSettings:
    """What makes one ALIKED network: configuration, weights, detection.

    Attributes
    ----------
    model : str
        One of :data:`ALIKED_DIMENSIONS`.
    weights : str
        The weights file.
    weights_sha256 : str
        The SHA-256 the weights file must have.
    max_keypoints : int
        At most this many keypoints per image, the highest scores; 0 for
        kornia's limit (20000).
    detection_threshold : float
        Keep the local maxima of the score map above this score; 0 keeps the
        ``max_keypoints`` highest ones whatever their score.
    """

    model: str
    weights: str
    weights_sha256: str
    max_keypoints: int
    detection_threshold: float


def resolve_device(device: str):
    """``device`` as a ``torch.device``; ``"auto"`` is CUDA where PyTorch
    has it, else the CPU.

    Raises
    ------
    vlad.errors.VladError
        A CUDA device on a machine or a PyTorch build without CUDA.
    """
    torch, _ = import_kornia()
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    chosen = torch.device(device)
    if chosen.type == "cuda":
        if not torch.cuda.is_available():
            raise VladError(
                f"device={device!r}, but PyTorch sees no CUDA device here; give "
                "device='cpu' (or 'auto')"
            )
        if chosen.index is not None and chosen.index >= torch.cuda.device_count():
            raise VladError(
                f"device={device!r}, but PyTorch sees {torch.cuda.device_count()} "
                "CUDA devices"
            )
    return chosen


def pretrained_weights(model: str, urls: Sequence[str] = PRETRAINED_URLS) -> Path:
    """The authors' weights of ``model``, downloaded once into PyTorch's hub
    cache (``TORCH_HOME``), where kornia's ``ALIKED.from_pretrained`` keeps
    them too.

    The file is only downloaded here (to a temporary file, then moved into
    place), never unpickled: it is read as any weights file is, by
    :func:`vlad.backends.kornia._weights.read_weights`.

    Parameters
    ----------
    model : str
        One of :data:`ALIKED_DIMENSIONS`.
    urls : sequence of str, default=PRETRAINED_URLS
        Where to download it from, tried in turn; ``{}`` stands for ``model``.

    Raises
    ------
    vlad.errors.VladError
        They are not in the cache and cannot be downloaded.
    """
    torch, _ = import_kornia()
    path = Path(torch.hub.get_dir()) / "checkpoints" / f"{model}.pth"
    if path.is_file():
        return path
    reasons = []
    for url in urls:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            torch.hub.download_url_to_file(url.format(model), os.fspath(path))
        except Exception as error:  # any failure to download, as one line
            reason = (str(error).strip().splitlines() or [""])[0]
            reasons.append(f"{url.format(model)}: {type(error).__name__}: {reason}")
            continue
        return path
    raise VladError(
        f"weights: cannot download the pretrained weights of {model} "
        f"({'; '.join(reasons)}); download {path.name} where there is a "
        "connection and give the file with weights= (vlad extract --weights FILE)"
    )


def aliked_network(settings: AlikedSettings, device):
    """kornia's ALIKED made with ``settings``, its weights loaded strictly
    (see :func:`vlad.backends.kornia._weights.load_weights_strictly`), in
    evaluation mode on ``device``; made once per process.

    Parameters
    ----------
    settings : AlikedSettings
    device : torch.device

    Raises
    ------
    vlad.errors.VladError
        A weights file that cannot be read, has another SHA-256 than
        ``settings.weights_sha256`` (replaced since, or another file under
        the same path on this machine) or is not of this network.
    """
    key = (settings, str(device), _identity(settings.weights))
    with _NETWORKS_LOCK:
        network = _NETWORKS.get(key)
    if network is not None:
        return network
    _, kornia = import_kornia()
    sha256 = file_sha256(settings.weights)
    if sha256 != settings.weights_sha256:
        raise VladError(
            f"weights: {settings.weights} has SHA-256 {sha256}, not "
            f"{settings.weights_sha256} as expected; give the same weights file "
            "everywhere"
        )
    network = kornia.feature.ALIKED(
        model_name=settings.model,
        max_num_keypoints=settings.max_keypoints or -1,
        detection_threshold=settings.detection_threshold,
        nms_radius=NMS_RADIUS,
    )
    state = read_weights(settings.weights)
    load_weights_strictly(network, state, ALIKED_RECOMPUTED, settings.weights)
    network = network.eval().to(device)
    with _NETWORKS_LOCK:
        while len(_NETWORKS) >= _MAX_NETWORKS:
            del _NETWORKS[next(iter(_NETWORKS))]
        _NETWORKS[key] = network
    return network


def _identity(path: str) -> tuple:
    """The file's size and modification time: a file replaced in place is
    loaded again."""
    status = os.stat(path)
    return status.st_size, status.st_mtime_ns


def run_aliked(
    network, images: np.ndarray, device
) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Keypoints, scores and descriptors of a batch of images of one size.

    Parameters
    ----------
    network : kornia.feature.ALIKED
        As :func:`aliked_network` returns it.
    images : ndarray of float32 of shape (batch, 3, height, width)
        RGB in [0, 1].
    device : torch.device
        The network's.

    Returns
    -------
    list of (keypoints, scores, descriptors)
        For each image: ``keypoints`` float32 (n, 2), x and y in the pixels of
        ``images`` (pixel centres at integers); ``scores`` float32 (n,);
        ``descriptors`` float32 (n, dimension), of unit length. In the order
        the network gives them.
    """
    torch, _ = import_kornia()
    batch = torch.from_numpy(images)
    with torch.inference_mode():
        if device.type == "cuda":
            # From pinned memory the copy runs asynchronously, overlapping the
            # decoding of the next images on the host.
            batch = batch.pin_memory().to(device, non_blocking=True)
        else:
            batch = batch.to(device)
        features = network(batch)
        counts = [len(found.keypoints) for found in features]
        # The whole batch in one tensor: one transfer, one wait for the device.
        rows = torch.cat(
            [
                torch.cat(
                    [
                        found.keypoints.float(),
                        found.keypoint_scores.float()[:, None],
                        found.descriptors.float(),
                    ],
                    dim=1,
                )
                for found in features
            ]
        )
        rows = rows.cpu().numpy()
    results = []
    start = 0
    for count in counts:
        block = rows[start : start + count]
        start += count
        results.append(
            (
                np.ascontiguousarray(block[:, :2]),
                np.ascontiguousarray(block[:, 2]),
                np.ascontiguousarray(block[:, 3:]),
            )
        )
    return results
