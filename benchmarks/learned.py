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
before they are timed. The ratio is vlad's time over the bare pass's: what
vlad adds around the network.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

import vlad

__all__ = ["benchmark_learned", "main"]


def benchmark_learned(
    paths: list[Path],
    weights: str | Path,
    *,
    max_side: int = 1024,
    device: str = "cpu",
    n_jobs: int | None = None,
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

    Returns
    -------
    dict
        ``n_images``, ``n_keypoints`` (vlad's, all images), ``vlad_s``,
        ``bare_s``, ``vlad_images_per_s``, ``bare_images_per_s``, ``ratio``.
    """
    import kornia
    import torch

    options = {
        "features": "aliked",
        "weights": weights,
        "max_side": max_side,
        "device": device,
    }
    vlad.extract_images(paths[:1], options, n_jobs=n_jobs)
    start = time.perf_counter()
    sets, _ = vlad.extract_images(paths, options, n_jobs=n_jobs)
    vlad_seconds = time.perf_counter() - start

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
    with torch.inference_mode():
        network(inputs[0].to(device))
        start = time.perf_counter()
        for image in inputs:
            found = network(image.to(device))
            found[0].descriptors.cpu()
        bare_seconds = time.perf_counter() - start
    return {
        "n_images": len(paths),
        "n_keypoints": int(sets.descriptors.shape[0]),
        "vlad_s": vlad_seconds,
        "bare_s": bare_seconds,
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
    parser.add_argument("--max-side", type=int, default=1024)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--jobs", type=int, default=None, help="decoding threads")
    arguments = parser.parse_args(argv)
    paths = [image.path for image in vlad.find_images(arguments.inputs)]
    paths = paths[: arguments.images]
    row = benchmark_learned(
        paths,
        arguments.weights,
        max_side=arguments.max_side,
        device=arguments.device,
        n_jobs=arguments.jobs,
    )
    print(
        f"{row['n_images']} images, {row['n_keypoints']} keypoints, max side "
        f"{arguments.max_side}, {arguments.device}\n"
    )
    print("| | seconds | images per second |")
    print("|---|---|---|")
    print(f"| vlad extract | {row['vlad_s']:.2f} | {row['vlad_images_per_s']:.2f} |")
    print(
        f"| kornia's bare forward pass | {row['bare_s']:.2f} "
        f"| {row['bare_images_per_s']:.2f} |"
    )
    print(f"\nratio (vlad / bare): {row['ratio']:.2f}")


if __name__ == "__main__":
    main()
