"""Folders of descriptor shards made on a real Dask cluster (two worker
processes): the same bytes as a run in this process, with unreadable and
empty images, resuming, a worker killed mid-run, and the command line's
--dask and --scheduler."""

from __future__ import annotations

import pytest
from dask_runs import kill_once, run
from photos import DATA, FAST_OPTIONS
from shard_folders import folder_bytes

import vlad
from vlad.pipeline._extraction import extract_images_to_folder

distributed = pytest.importorskip("distributed")
FAST = ["--max-side", str(FAST_OPTIONS["max_side"])]


def local_run(inputs, folder, shard_images):
    """The reference: the same run in this process."""
    extract_images_to_folder(
        inputs, folder, FAST_OPTIONS, shard_images=shard_images, n_jobs=1
    )
    return folder_bytes(folder)


def test_the_cluster_writes_the_bytes_of_a_local_run(cluster_client, messy, tmp_path):
    expected = local_run(messy, tmp_path / "local", 3)
    done = []
    shards = extract_images_to_folder(
        messy,
        tmp_path / "dask",
        FAST_OPTIONS,
        shard_images=3,
        client=cluster_client,
        progress=lambda n_done, n_total: done.append((n_done, n_total)),
    )
    assert folder_bytes(tmp_path / "dask") == expected
    assert shards.record["n_skipped"] == 3 and shards.record["empty"] == ["blank.png"]
    sets, report = vlad.extract_images(messy, FAST_OPTIONS, n_jobs=1)
    assert shards.names == report.names == sets.names
    assert shards.record["n_found"] == 6  # readme.txt is not an image by name
    assert sorted(done) == [(3, 6), (6, 6)]


def test_resume_on_the_cluster_makes_only_the_missing_shards(cluster_client, tmp_path):
    folder = tmp_path / "d"
    expected = local_run(DATA, folder, 2)
    kept = sorted(folder.glob("part-0000[02]-*"))
    stamps = {path: path.stat().st_mtime_ns for path in kept}
    (folder / "manifest.json").unlink()
    for path in folder.glob("part-00001-*"):
        path.unlink()
    next(folder.glob("part-00003-*.json")).unlink()  # as if killed
    extract_images_to_folder(
        DATA,
        folder,
        FAST_OPTIONS,
        shard_images=2,
        resume=True,
        client=cluster_client,
    )
    assert folder_bytes(folder) == expected
    assert {path: path.stat().st_mtime_ns for path in kept} == stamps


@pytest.mark.slow
def test_a_worker_killed_mid_run_loses_and_doubles_no_image(cluster_client, tmp_path):
    expected = local_run(DATA, tmp_path / "local", 1)
    marker = tmp_path / "killed"
    cluster_client.register_plugin(
        kill_once(marker, "vlad-shard-00003"), name="kill-once"
    )
    try:
        shards = extract_images_to_folder(
            DATA, tmp_path / "dask", FAST_OPTIONS, shard_images=1, client=cluster_client
        )
    finally:
        cluster_client.unregister_worker_plugin("kill-once")
        cluster_client.wait_for_workers(2)
    assert marker.exists()
    assert folder_bytes(tmp_path / "dask") == expected
    assert len(shards.names) == len(set(shards.names)) == len(vlad.find_images(DATA))


def test_a_bad_client_is_refused_before_anything_is_written(tmp_path):
    with pytest.raises(TypeError, match="client must be a dask.distributed.Client"):
        extract_images_to_folder(DATA, tmp_path / "d", client="tcp://x")
    assert not (tmp_path / "d").exists()


@pytest.mark.slow  # a command run against the scheduler: seconds
def test_the_command_line_on_a_scheduler(cluster_client, messy, tmp_path):
    expected = local_run(messy, tmp_path / "local", 2)
    address = cluster_client.scheduler.address
    args = ["extract", messy, *FAST, "--shard-images", 2]
    result = run(*args, "-o", tmp_path / "dask", "--scheduler", address)
    assert folder_bytes(tmp_path / "dask") == expected
    assert "skipped 3" in result.stderr
    (tmp_path / "dask" / "manifest.json").unlink()
    run(*args, "-o", tmp_path / "dask", "--scheduler", address, "--resume")
    assert folder_bytes(tmp_path / "dask") == expected
    result = run(
        *args, "-o", tmp_path / "x", "--scheduler", address, "-j", 2, exit_code=2
    )
    assert "-j sets the workers of --dask's local cluster" in result.stderr
    # An .npz's shards are made there too, staged beside it, then written here.
    run(*args, "-o", tmp_path / "dask.npz", "--scheduler", address)
    run(*args, "-o", tmp_path / "here.npz")
    assert (tmp_path / "dask.npz").read_bytes() == (tmp_path / "here.npz").read_bytes()
    assert not (tmp_path / ".dask.npz.parts").exists()


@pytest.mark.slow
def test_the_command_line_starts_a_local_cluster(tmp_path):
    expected = local_run(DATA, tmp_path / "local", 3)
    args = ["extract", DATA, *FAST, "--shard-images", 3, "-j", 2]
    run(*args, "-o", tmp_path / "dask", "--dask")
    assert folder_bytes(tmp_path / "dask") == expected
