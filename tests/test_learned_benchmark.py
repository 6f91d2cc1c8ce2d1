"""The learned features' benchmark on two small photos: its row and its table."""

from __future__ import annotations

import pytest
from learned_networks import random_weights
from photos import DATA

pytest.importorskip("torch")
pytest.importorskip("kornia")

from benchmarks.learned import benchmark_learned, main  # noqa: E402


def test_the_row_times_both_on_the_same_images(tmp_path):
    weights = random_weights(tmp_path / "random.pth")
    paths = [DATA / "chelsea.jpg", DATA / "coffee.jpg"]
    row = benchmark_learned(paths, weights, max_side=64, n_jobs=1, repeat=2)
    assert row["n_images"] == 2 and row["n_keypoints"] > 0
    assert row["ratio"] == pytest.approx(row["vlad_s"] / row["bare_s"])
    assert row["vlad_images_per_s"] == pytest.approx(2 / row["vlad_s"])
    assert row["bare_images_per_s"] == pytest.approx(2 / row["bare_s"])
    assert row["vlad_cpu_s"] > 0 and row["bare_cpu_s"] > 0


def test_main_prints_a_table(tmp_path, capsys):
    weights = random_weights(tmp_path / "random.pth")
    main(
        [str(DATA), "--weights", str(weights), "--images", "2", "--max-side", "64"]
        + ["--repeat", "1"]
    )
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("2 images, ")
    assert lines[0].endswith("keypoints, max side 64, cpu, best of 1")
    assert [line.split(" | ")[0] for line in lines[-4:-2]] == [
        "| vlad extract",
        "| kornia's bare forward pass",
    ]
    assert lines[-1].startswith("ratio (vlad / bare): ")
