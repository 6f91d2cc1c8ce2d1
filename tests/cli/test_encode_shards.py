"""``vlad encode`` into a folder of shards: the same vectors as a ``.npy``,
read by ``vlad index``, ``search`` and ``info``, and resumed after SIGKILL."""

from __future__ import annotations

import json
import random
import shutil
import signal
import subprocess
import sys
import time

import pytest
from photos import DATA, PHOTOS
from shard_folders import folder_bytes, interrupt_after_the_first_shard

import vlad
from vlad.pipeline._vector_shards import encode_images_to_folder

from .conftest import run


def test_a_folder_holds_what_a_npy_holds(tmp_path, codebook_path):
    run("encode", DATA, "-c", codebook_path, "-o", tmp_path / "v.npy")
    result = run(
        "encode", DATA, "-c", codebook_path, "-o", tmp_path / "v", "--shard-images", 3
    )
    assert "to " + str(tmp_path / "v") + ", in 3 shards" in result.output
    whole, names, record = vlad.load_vectors(tmp_path / "v.npy")
    sharded, sharded_names, manifest = vlad.load_vectors(tmp_path / "v")
    assert sharded.tobytes() == whole.tobytes() and sharded_names == names == PHOTOS
    assert manifest["codebook"] == record["codebook"]
    assert manifest["encoding"] == record["encoding"]
    info = run("info", tmp_path / "v").output
    assert "n_images: 8" in info and "n_shards: 3" in info
    run("index", tmp_path / "v", "-o", tmp_path / "index")
    run(
        "search",
        tmp_path / "index",
        tmp_path / "v",
        "--top",
        1,
        "-o",
        tmp_path / "r.json",
    )
    found = json.loads((tmp_path / "r.json").read_text())["queries"]
    assert [query["query"] for query in found] == PHOTOS
    assert [query["results"][0]["name"] for query in found] == PHOTOS


def test_a_folder_is_replaced_or_resumed_only_when_asked(tmp_path, codebook_path):
    args = ("encode", DATA, "-c", codebook_path, "-o", tmp_path / "v")
    run(*args)
    refused = run(*args, exit_code=1)
    assert "already exists; pass --overwrite to replace it or --resume" in (
        refused.output
    )
    before = folder_bytes(tmp_path / "v")
    run(*args, "--resume")
    assert folder_bytes(tmp_path / "v") == before
    run(*args, "--overwrite", "--power", 0.5)
    assert folder_bytes(tmp_path / "v") != before
    written = run(*args[:-1], tmp_path / "v.npy", exit_code=0)
    resumed = run(*args[:-1], tmp_path / "v.npy", "--resume", exit_code=1)
    assert "finished, and --resume finishes only a file not yet" in resumed.output
    assert written.output and not (tmp_path / ".v.npy.parts").exists()


@pytest.fixture(scope="module")
def collection(tmp_path_factory):
    """24 small photos (the bundled ones, copied three times)."""
    folder = tmp_path_factory.mktemp("collection") / "photos"
    folder.mkdir()
    for copy in range(3):
        for name in PHOTOS:
            shutil.copyfile(DATA / name, folder / f"{copy}-{name}")
    return folder


def encode_command(collection, codebook_path, output, *extra):
    return [
        sys.executable,
        "-m",
        "vlad",
        "encode",
        str(collection),
        "-c",
        str(codebook_path),
        "-o",
        str(output),
        "--shard-images",
        "1",
        "-j",
        "1",
        "-q",
        *extra,
    ]


def kill_and_resume(collection, codebook_path, tmp_path, n_kills, seed, longest):
    """Kill ``vlad encode`` at ``n_kills`` random points (up to ``longest``
    seconds after its start), resuming each time; every resumed result must
    equal the uninterrupted run's, byte for byte."""
    reference = tmp_path / "reference"
    encode_images_to_folder(
        str(collection), codebook_path, reference, shard_images=1, n_jobs=1
    )
    expected = folder_bytes(reference)
    rng = random.Random(seed)
    for kill in range(n_kills):
        output = tmp_path / f"killed-{kill}"
        process = subprocess.Popen(encode_command(collection, codebook_path, output))
        time.sleep(rng.uniform(0.3, longest))
        process.send_signal(signal.SIGKILL)
        process.wait()
        if (output / "manifest.json").exists():
            # Killed after its commit: complete already.
            assert folder_bytes(output) == expected
        elif output.exists():
            with pytest.raises(ValueError, match="no manifest.json"):
                vlad.load_vectors(output)
        subprocess.run(
            encode_command(collection, codebook_path, output, "--resume"), check=True
        )
        assert folder_bytes(output) == expected, f"kill {kill} (seed {seed})"


@pytest.mark.slow  # seconds; the default run kills and resumes an ASMK build
def test_a_killed_run_resumes_to_the_same_bytes(codebook_path, tmp_path):
    kill_and_resume(DATA, codebook_path, tmp_path, 2, seed=1, longest=1.5)


@pytest.mark.slow
def test_many_killed_runs_resume_to_the_same_bytes(collection, codebook_path, tmp_path):
    kill_and_resume(collection, codebook_path, tmp_path, 20, seed=2, longest=4.0)


def test_a_shard_size_the_library_refuses_is_named_by_its_option(
    tmp_path, codebook_path
):
    folder = tmp_path / "v"
    result = run("encode", DATA, "-c", codebook_path, "-o", folder,
                 "--shard-images", 100, exit_code=2)  # fmt: skip
    assert (
        "Error: --shard-images must be at least 1, and a multiple of 64 above it; "
        "got 100"
    ) in result.stderr
    assert "shard_images" not in result.stderr and not folder.exists()


def test_ctrl_c_says_what_was_kept_and_resume_finishes_it(
    tmp_path, codebook_path, monkeypatch
):
    """Interrupted after its first shard: the message says the finished shards
    stay and --resume finishes the folder; the resumed run says it kept one."""
    folder = tmp_path / "v"
    args = ("encode", DATA, "-c", codebook_path, "-o", folder, "--shard-images", 3)
    interrupt_after_the_first_shard(monkeypatch)
    result = run(*args, exit_code=130)
    assert result.stderr.endswith(
        f"interrupted; the finished shards of {folder} are kept: the same command "
        "with --resume finishes it\n"
    )
    monkeypatch.undo()
    result = run(*args, "--resume")
    assert "kept 1 finished shard of 3\n" in result.stderr
    assert vlad.load_vectors(folder)[1] == PHOTOS
