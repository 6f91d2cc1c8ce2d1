"""``vlad encode`` and ``vlad extract`` into a file with ``--resume``,
interrupted (Ctrl-C, or SIGKILL at random points of their runs) and resumed:
the file ends up the same, byte for byte, as an uninterrupted run's, and its
staged shards are gone. (Folders of shards are killed in test_encode_shards
and test_extract_shards, whose commands these reuse.)"""

from __future__ import annotations

import random
import shutil
import signal
import subprocess
import time

import pytest
from photos import DATA, PHOTOS
from shard_folders import interrupt_after_the_first_shard

from vlad.formats._vectors import vector_file_paths
from vlad.pipeline._sinks import staging_folder

from .conftest import run
from .test_encode_shards import encode_command
from .test_extract_shards import extract_command


def output_files(output):
    """The files an output stands for: a .npy's names and record too."""
    return vector_file_paths(output) if output.suffix == ".npy" else (output,)


def file_bytes(output):
    """Each file of ``output`` and its bytes, by name."""
    return {path.name: path.read_bytes() for path in output_files(output)}


def kill_and_resume(command, output, n_kills, seed, longest):
    """Run ``command`` (which writes ``output``) uninterrupted, then with
    ``--resume``, SIGKILLed ``n_kills`` times (the first as its staged
    shards appear, the others at random up to ``longest`` seconds after) and
    resumed after each kill; each resumed file must equal the uninterrupted
    run's. Returns how many kills left staged shards."""
    subprocess.run(command, check=True)
    expected = file_bytes(output)
    rng = random.Random(seed)
    n_staged = 0
    for kill in range(n_kills):
        for path in output_files(output):
            path.unlink()
        process = subprocess.Popen([*command, "--resume"])
        # Killed at a random point after its staging began: however long
        # the interpreter takes to start on a loaded machine.
        started = time.monotonic()
        while (
            not staging_folder(output).exists()
            and process.poll() is None
            and time.monotonic() - started < 60
        ):
            time.sleep(0.01)
        # The first kill as soon as staging begins: one kill at least finds
        # staged shards, whatever the machine's speed.
        time.sleep(rng.uniform(0.0, longest) if kill else 0.0)
        process.send_signal(signal.SIGKILL)
        process.wait()
        if output.exists():  # killed after its file was written
            assert file_bytes(output) == expected, f"kill {kill} (seed {seed})"
            continue
        n_staged += staging_folder(output).exists()
        subprocess.run([*command, "--resume"], check=True)
        assert file_bytes(output) == expected, f"kill {kill} (seed {seed})"
        assert not staging_folder(output).exists()
    return n_staged


@pytest.mark.slow  # seconds: a run of the command line per kill
@pytest.mark.parametrize("name", ["v.npy", "v.h5"])
def test_a_killed_encode_into_a_file_resumes_to_the_same_bytes(
    codebook_path, tmp_path, name
):
    output = tmp_path / name
    command = encode_command(DATA, codebook_path, output)
    assert kill_and_resume(command, output, 3, seed=3, longest=0.5) >= 1


@pytest.mark.slow  # seconds: a run of the command line per kill
def test_a_killed_extract_into_an_npz_resumes_to_the_same_bytes(tmp_path):
    output = tmp_path / "d.npz"
    command = extract_command(DATA, output, 1)
    assert kill_and_resume(command, output, 3, seed=4, longest=0.5) >= 1


def test_ctrl_c_keeps_a_files_staged_shards_and_resume_finishes_it(
    tmp_path, monkeypatch
):
    """Interrupted after its first shard, ``vlad extract -o d.npz --resume``
    says where its shards are kept; resumed, it keeps that one and writes the
    file an uninterrupted run writes; a finished file is not resumed again,
    and a replacing run without --resume removes what an interrupted one
    staged."""
    photos = tmp_path / "photos"
    photos.mkdir()
    for name in PHOTOS[:3]:
        shutil.copyfile(DATA / name, photos / name)
    output = tmp_path / "d.npz"
    options = ("--max-side", 64, "-j", 1)
    args = ("extract", photos, *options, "-o", output, "--shard-images", 1)
    run("extract", photos, *options, "-o", tmp_path / "whole.npz")
    interrupt_after_the_first_shard(monkeypatch)
    result = run(*args, "--resume", exit_code=130)
    assert result.stderr.endswith(
        f"interrupted; the finished shards of {output} are kept in "
        f"{staging_folder(output)}: the same command with --resume finishes it\n"
    )
    assert not output.exists()
    monkeypatch.undo()
    result = run(*args, "--resume")
    assert "kept 1 finished shard of 3\n" in result.stderr
    assert output.read_bytes() == (tmp_path / "whole.npz").read_bytes()
    assert not staging_folder(output).exists()
    refused = run(*args, "--resume", exit_code=1)
    assert "the run writing it finished, and --resume finishes only" in (refused.stderr)
    interrupt_after_the_first_shard(monkeypatch)
    run(*args, "--resume", "--overwrite", exit_code=130)
    monkeypatch.undo()
    assert staging_folder(output).exists()
    run(*args, "--overwrite")
    assert output.read_bytes() == (tmp_path / "whole.npz").read_bytes()
    assert not staging_folder(output).exists()
