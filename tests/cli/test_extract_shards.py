"""``vlad extract`` into a folder of shards: the same descriptors as an
``.npz``, read by ``vlad fit`` and ``vlad encode``, and resumed after SIGKILL
of real ``vlad extract`` processes."""

from __future__ import annotations

import random
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from photos import DATA
from shard_folders import folder_bytes

import vlad
from benchmarks.scale import make_photos
from vlad.formats._descriptor_files import read_descriptor_file
from vlad.pipeline._extraction import extract_images_to_folder

from .conftest import FAST, run


def test_a_folder_holds_what_an_npz_holds(tmp_path):
    run("extract", DATA, *FAST, "-o", tmp_path / "d.npz")
    result = run("extract", DATA, *FAST, "-o", tmp_path / "d", "--shard-images", 3)
    assert "to " + str(tmp_path / "d") + ", in 3 shards" in result.output
    whole = vlad.DescriptorSets.load(tmp_path / "d.npz")
    sharded = read_descriptor_file(tmp_path / "d")
    assert sharded.names == whole.names
    assert sharded.descriptors.tobytes() == whole.descriptors.tobytes()
    assert sharded.keypoints.tobytes() == whole.keypoints.tobytes()
    folder_info = vlad.describe_file(tmp_path / "d")
    assert folder_info.pop("n_shards") == 3
    assert {**folder_info, "file": ""} == {
        **vlad.describe_file(tmp_path / "d.npz"),
        "file": "",
    }
    assert "n_shards: 3" in run("info", tmp_path / "d").output
    for source in ("d.npz", "d"):
        run(
            "fit",
            tmp_path / source,
            "--n-clusters",
            4,
            "-o",
            tmp_path / f"{source}.c.npz",
        )
    centers = [
        vlad.Codebook.load(tmp_path / f"{source}.c.npz").centers
        for source in ("d.npz", "d")
    ]
    assert np.array_equal(*centers)
    codebook = tmp_path / "d.npz.c.npz"
    run("encode", tmp_path / "d.npz", "-c", codebook, "-o", tmp_path / "a.npy")
    run("encode", tmp_path / "d", "-c", codebook, "-o", tmp_path / "b.npy")
    run("encode", tmp_path / "d", "-c", codebook, "-o", tmp_path / "v")
    vectors = [vlad.load_vectors(tmp_path / name)[0] for name in ("b.npy", "v")]
    assert np.array_equal(*vectors)
    assert np.allclose(vlad.load_vectors(tmp_path / "a.npy")[0], vectors[0], atol=1e-6)


def test_a_folder_is_replaced_or_resumed_only_when_asked(tmp_path):
    args = ("extract", DATA, *FAST, "-o", tmp_path / "d")
    run(*args)
    refused = run(*args, exit_code=1)
    assert "already exists; pass --overwrite to replace it or --resume" in (
        refused.output
    )
    before = folder_bytes(tmp_path / "d")
    run(*args, "--resume")
    assert folder_bytes(tmp_path / "d") == before
    run(*args, "--overwrite", "--max-keypoints", 20)
    assert folder_bytes(tmp_path / "d") != before
    run(*args[:-1], tmp_path / "d.npz", "--resume")
    resumed = run(*args[:-1], tmp_path / "d.npz", "--resume", exit_code=1)
    assert "finished, and --resume finishes only a file not yet" in resumed.output
    assert not (tmp_path / ".d.npz.parts").exists()
    suffix = run(*args[:-1], tmp_path / "d.npy", exit_code=2)
    assert "must end in .npz, or have no suffix" in suffix.output


def extract_command(photos, output, shard_images, *extra):
    return [
        sys.executable,
        "-m",
        "vlad",
        "extract",
        str(photos),
        *FAST,
        "-o",
        str(output),
        "--shard-images",
        str(shard_images),
        "-j",
        "2",
        "-q",
        *extra,
    ]


def kill_and_resume(photos, tmp_path, n_kills, seed, shard_images):
    """SIGKILL ``vlad extract --resume`` ``n_kills`` times at random points
    of its run, resuming into the same folder after each kill (and starting
    it again once a run got to finish); every finished folder must equal an
    uninterrupted run's, byte for byte. Returns how many kills found the
    folder incomplete."""
    reference = tmp_path / "reference"
    extract_images_to_folder(
        photos, reference, {"max_side": int(FAST[1])}, shard_images=shard_images
    )
    expected = folder_bytes(reference)
    # An uninterrupted run of the command line: the same bytes, and how long
    # a run takes here, so that kills land within one.
    start = time.perf_counter()
    subprocess.run(
        extract_command(photos, tmp_path / "timed", shard_images), check=True
    )
    duration = time.perf_counter() - start
    assert folder_bytes(tmp_path / "timed") == expected
    output = tmp_path / "killed"
    rng = random.Random(seed)
    n_incomplete = 0
    for kill in range(n_kills):
        if (output / "manifest.json").exists():
            assert folder_bytes(output) == expected, f"kill {kill} (seed {seed})"
            shutil.rmtree(output)  # start again, so that the next kill counts
        command = extract_command(photos, output, shard_images, "--resume")
        process = subprocess.Popen(command)
        time.sleep(rng.uniform(0.1, 1.0) * duration)
        process.send_signal(signal.SIGKILL)
        process.wait()
        if output.exists() and not (output / "manifest.json").exists():
            n_incomplete += 1
            with pytest.raises(ValueError, match="no manifest.json"):
                read_descriptor_file(output)
    subprocess.run(
        extract_command(photos, output, shard_images, "--resume"), check=True
    )
    assert folder_bytes(output) == expected, f"seed {seed}"
    return n_incomplete


@pytest.mark.slow  # processes killed and run again (vlad index --method asmk
# keeps a killed-and-resumed build in the default run)
def test_a_killed_run_resumes_to_the_same_bytes(tmp_path):
    kill_and_resume(DATA, tmp_path, 1, seed=1, shard_images=1)


@pytest.mark.slow
def test_many_killed_runs_resume_to_the_same_bytes(tmp_path):
    photos = make_photos(tmp_path / "photos", 500)
    n_incomplete = kill_and_resume(photos, tmp_path, 20, seed=2, shard_images=16)
    assert n_incomplete >= 5
