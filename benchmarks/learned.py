"""Learned features' speed: ``vlad.extract_images`` with ``features="aliked"``
against kornia's bare forward pass on the same images.

Usage, from the repository root (needs ``pip install -e ".[learned]"``)::

    python -m benchmarks.learned --weights aliked-n16.pth               # data/
    python -m benchmarks.learned --weights aliked-n16.pth --images 20 photos/

vlad's time is the whole extraction, as ``vlad extract`` runs it: finding and
decoding the files, shrinking them (area interpolation, as hloc), the network,
keypoints mapped back and sorted, the descriptor sets assembled. The bare
forward pass is kornia's ALIKED alone, with the same weights and settings,
on the same images decoded and shrunk beforehand (outside the timing), one
at a time, in ``torch.inference_mode``. Both run once on the first image
before they are timed, then in turns, ``--repeat`` times each, so that a
change in the machine's load falls on both; the best time of each counts.
The ratio is vlad's best time over the bare pass's: what vlad adds around
the network. CPU seconds (all threads) are given beside: on a shared machine
they are the steadier of the two.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

import vlad
from benchmarks.measuring import timed
from benchmarks.options import descriptor_parameter, spec_argument

__all__ = ["benchmark_learned", "main"]


def benchmark_learned(
    paths: list[Path],
    weights: str | Path,
    *,
    max_side: int = 1024,
    device: str = "cpu",
    n_jobs: int | None = None,
    repeat: int = 1,
) -> dict:
    """Seconds of vlad's extraction and of kornia's bare forward pass.

    Parameters
    ----------
    paths : list of Path
        Image files.
    weights : path-like
        ALIKED-N16's weights.
    max_side, device
        As :class:`vlad.images.LearnedOptions`'s.
    n_jobs : int or None
        vlad's decoding threads.
    repeat : int, default=1
        Times each is timed, in turns; the best counts.

    Returns
    -------
    dict
        ``n_images``, ``n_keypoints`` (vlad's, all images), ``vlad_s``,
        ``bare_s`` (best wall-clock seconds), ``vlad_cpu_s``, ``bare_cpu_s``
        (CPU seconds of those runs), ``vlad_images_per_s``,
        ``bare_images_per_s``, ``ratio``.
    """
    import kornia
    import torch

    options = {
        "features": "aliked",
        "weights": weights,
        "max_side": max_side,
        "device": device,
    }
    sets, _ = vlad.extract_images(paths[:1], options, n_jobs=n_jobs)
    record = vlad.images.LearnedOptions.from_record(sets.metadata)
    network = kornia.feature.ALIKED(
        model_name=record.model,
        max_num_keypoints=record.max_keypoints or -1,
        detection_threshold=record.detection_threshold,
    )
    state = torch.load(weights, map_location="cpu", weights_only=True)
    network.load_state_dict(state, strict=False)
    network = network.eval().to(device)
    inputs = [_prepared(path, max_side) for path in paths]

    def extract():
        return vlad.extract_images(paths, options, n_jobs=n_jobs)[0]

    def forward(images=inputs):
        with torch.inference_mode():
            for image in images:
                network(image.to(device))[0].descriptors.cpu()

    forward(inputs[:1])
    vlad_times, bare_times = [], []
    for _ in range(repeat):
        sets, *seconds = timed(extract)
        vlad_times.append(seconds)
        _, *seconds = timed(forward)
        bare_times.append(seconds)
    (vlad_seconds, vlad_cpu), (bare_seconds, bare_cpu) = (
        min(vlad_times),
        min(bare_times),
    )
    return {
        "n_images": len(paths),
        "n_keypoints": int(sets.descriptors.shape[0]),
        "vlad_s": vlad_seconds,
        "bare_s": bare_seconds,
        "vlad_cpu_s": vlad_cpu,
        "bare_cpu_s": bare_cpu,
        "vlad_images_per_s": len(paths) / vlad_seconds,
        "bare_images_per_s": len(paths) / bare_seconds,
        "ratio": vlad_seconds / bare_seconds,
    }


def _prepared(path: Path, max_side: int):
    """An image as ALIKED takes it, shrunk as hloc shrinks it: a tensor of
    shape (1, 3, height, width)."""
    import cv2
    import torch

    image = vlad.read_image(path, colour=True).astype(np.float32)
    height, width = image.shape[:2]
    if max_side and max(height, width) > max_side:
        scale = max_side / max(height, width)
        size = (max(1, round(width * scale)), max(1, round(height * scale)))
        image = cv2.resize(image, size, interpolation=cv2.INTER_AREA)
    return torch.from_numpy(np.ascontiguousarray(image.transpose(2, 0, 1) / 255.0))[
        None
    ]


def main(argv: list[str] | None = None) -> None:
    """Print the benchmark's table (Markdown)."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.learned")
    parser.add_argument(
        "inputs", nargs="*", default=["data"], help="image folders and files"
    )
    parser.add_argument("--weights", required=True, help="ALIKED-N16's weights")
    parser.add_argument("--images", type=int, default=20, help="images timed")
    spec_argument(parser, descriptor_parameter("max_side"))
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--jobs", type=int, default=None, help="decoding threads")
    parser.add_argument("--repeat", type=int, default=2, help="timings of each")
    arguments = parser.parse_args(argv)
    paths = [image.path for image in vlad.find_images(arguments.inputs)]
    paths = paths[: arguments.images]
    row = benchmark_learned(
        paths,
        arguments.weights,
        max_side=arguments.max_side,
        device=arguments.device,
        n_jobs=arguments.jobs,
        repeat=arguments.repeat,
    )
    print(
        f"{row['n_images']} images, {row['n_keypoints']} keypoints, max side "
        f"{arguments.max_side}, {arguments.device}, best of {arguments.repeat}\n"
    )
    print("| | seconds | CPU seconds | images per second |")
    print("|---|---|---|---|")
    print(
        f"| vlad extract | {row['vlad_s']:.2f} | {row['vlad_cpu_s']:.2f} "
        f"| {row['vlad_images_per_s']:.2f} |"
    )
    print(
        f"| kornia's bare forward pass | {row['bare_s']:.2f} "
        f"| {row['bare_cpu_s']:.2f} | {row['bare_images_per_s']:.2f} |"
    )
    print(f"\nratio (vlad / bare): {row['ratio']:.2f}")


if __name__ == "__main__":
    main()
