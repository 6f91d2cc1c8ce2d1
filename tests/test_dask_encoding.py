"""Folders of shards made on a real Dask cluster (two worker processes): the
same bytes as a run in this process, with skipped images, resuming, a worker
killed mid-run, the command line's --dask and --scheduler, and the error
without the extra."""

from __future__ import annotations

import re
import sys

import pytest
from dask_runs import kill_once, run
from photos import DATA, FAST_OPTIONS
from shard_folders import folder_bytes

import vlad
from vlad._extras import install_command
from vlad.images import capture_decoder_messages
from vlad.images._extractors import extractor_for_codebook
from vlad.pipeline._batch import walk_batch
from vlad.pipeline._cluster import dask_client, make_shards_on_cluster, worker_codebook
from vlad.pipeline._shard_runs import plan_shard_run
from vlad.pipeline._sinks import FolderSink
from vlad.pipeline._vector_kinds import ImageVectors
from vlad.pipeline._vector_shards import encode_images_to_folder

distributed = pytest.importorskip("distributed")
FAST = ["--max-side", str(FAST_OPTIONS["max_side"])]


@pytest.fixture
def client(cluster_client):
    return cluster_client


@pytest.fixture(scope="module")
def codebook_file(tmp_path_factory, small_codebook):
    path = tmp_path_factory.mktemp("codebook") / "codebook.npz"
    small_codebook.save(path)
    return path


def local_run(inputs, codebook, folder, shard_images):
    """The reference: the same run in this process."""
    encode_images_to_folder(inputs, codebook, folder, shard_images=shard_images)
    return folder_bytes(folder)


def test_the_cluster_writes_the_bytes_of_a_local_run(
    client, codebook_file, messy, tmp_path
):
    shard_images = 3
    expected = local_run(messy, codebook_file, tmp_path / "local", shard_images)
    shards = encode_images_to_folder(
        messy,
        codebook_file,
        tmp_path / "dask",
        shard_images=shard_images,
        client=client,
    )
    assert folder_bytes(tmp_path / "dask") == expected
    assert shards.record["n_skipped"] == 3 and shards.record["empty"] == ["blank.png"]


def test_a_codebook_in_memory_is_sent_to_the_workers(client, codebook_file, tmp_path):
    expected = local_run(DATA, codebook_file, tmp_path / "local", 2)
    codebook = vlad.Codebook.load(codebook_file)
    done = []
    encode_images_to_folder(
        DATA,
        codebook,
        tmp_path / "dask",
        shard_images=2,
        client=client,
        progress=lambda n_done, n_total: done.append((n_done, n_total)),
    )
    assert folder_bytes(tmp_path / "dask") == expected
    n_images = len(vlad.find_images(DATA))
    assert sorted(done) == [(n, n_images) for n in range(2, n_images + 1, 2)]


# test_the_command_line_on_a_scheduler resumes on the cluster too.
@pytest.mark.slow
def test_resume_on_the_cluster_makes_only_the_missing_shards(
    client, codebook_file, tmp_path
):
    expected = local_run(DATA, codebook_file, tmp_path / "v", 2)
    kept = sorted((tmp_path / "v").glob("part-0000[02]-*"))
    stamps = {path: path.stat().st_mtime_ns for path in kept}
    (tmp_path / "v" / "manifest.json").unlink()
    for path in (tmp_path / "v").glob("part-00001-*"):
        path.unlink()
    next((tmp_path / "v").glob("part-00003-*.json")).unlink()  # as if killed
    encode_images_to_folder(
        DATA, codebook_file, tmp_path / "v", shard_images=2, resume=True, client=client
    )
    assert folder_bytes(tmp_path / "v") == expected
    assert {path: path.stat().st_mtime_ns for path in kept} == stamps


@pytest.mark.slow  # a worker process killed and replaced: seconds
def test_a_worker_killed_mid_run_loses_and_doubles_no_row(
    client, codebook_file, tmp_path
):
    expected = local_run(DATA, codebook_file, tmp_path / "local", 1)
    marker = tmp_path / "killed"
    client.register_plugin(kill_once(marker, "vlad-shard-00003"), name="kill-once")
    try:
        shards = encode_images_to_folder(
            DATA, codebook_file, tmp_path / "dask", shard_images=1, client=client
        )
    finally:
        client.unregister_worker_plugin("kill-once")
        client.wait_for_workers(2)
    assert marker.exists()
    assert folder_bytes(tmp_path / "dask") == expected
    assert len(shards.names) == len(set(shards.names)) == len(vlad.find_images(DATA))


def test_workers_load_the_codebook_once_and_check_it(client, tmp_path):
    path = tmp_path / "codebook.npz"
    first, _ = vlad.fit_codebook_to_images(DATA, 2, descriptor_options=FAST_OPTIONS)
    second, _ = vlad.fit_codebook_to_images(DATA, 3, descriptor_options=FAST_OPTIONS)
    first.save(path)
    loaded = worker_codebook(str(path), first.fingerprint)
    assert loaded.fingerprint == first.fingerprint
    assert worker_codebook(str(path), first.fingerprint) is loaded
    with pytest.raises(ValueError, match="holds the codebook"):
        worker_codebook(str(path), second.fingerprint)
    # The file changes between planning and the tasks: every try fails the same.
    images, walk_report = walk_batch(DATA)
    kind = ImageVectors(
        DATA,
        walk_report,
        extractor_for_codebook(second, None, None),
        second.n_features,
        second,
        str(path),
        vlad.EncodingOptions(),
        4,
    )
    sink = FolderSink(tmp_path / "v", "vector", overwrite=False, resume=False)
    planned = plan_shard_run(kind, images, sink)
    with pytest.raises(ValueError, match=f"not {second.fingerprint}"):
        make_shards_on_cluster(planned, client)
    assert not (tmp_path / "v" / "manifest.json").exists()


def test_bad_clients_and_inputs_are_refused(client, codebook_file, tmp_path):
    with pytest.raises(TypeError, match="client must be a dask.distributed.Client"):
        encode_images_to_folder(DATA, codebook_file, tmp_path / "a", client="tcp://x")
    sets, _ = vlad.extract_images(DATA, FAST_OPTIONS, n_jobs=2)
    sets.save(tmp_path / "d.npz")
    with pytest.raises(ValueError, match="descriptors file"):
        encode_images_to_folder(
            tmp_path / "d.npz", codebook_file, tmp_path / "b", client=client
        )
    with pytest.raises(ValueError, match="n_workers sets the workers"):
        with dask_client("tcp://127.0.0.1:8786", n_workers=2):
            pass


@pytest.mark.slow
def test_workers_started_elsewhere_skip_corrupt_images_as_the_caller_does(
    client, codebook_file, tmp_path
):
    """The cluster's workers were started outside the block (as on other
    machines): the task carries the caller's capture of decoder messages, so a
    JPEG with corrupt data is skipped there as it is here."""
    folder = tmp_path / "images"
    folder.mkdir()
    for name in ("chelsea.jpg", "coffee.jpg", "astronaut.jpg"):
        (folder / name).write_bytes((DATA / name).read_bytes())
    jpeg = (DATA / "rocket.jpg").read_bytes()
    (folder / "patched.jpg").write_bytes(jpeg[: len(jpeg) // 2] + b"\xff\xd9")
    with capture_decoder_messages():
        here = encode_images_to_folder(folder, codebook_file, tmp_path / "here")
        there = encode_images_to_folder(
            folder, codebook_file, tmp_path / "there", client=client
        )
    assert folder_bytes(tmp_path / "there") == folder_bytes(tmp_path / "here")
    assert there.names == here.names == ["astronaut.jpg", "chelsea.jpg", "coffee.jpg"]


# Seconds: the default run gives the command line a scheduler in
# tests/test_dask_extraction.py.
@pytest.mark.slow
def test_the_command_line_on_a_scheduler(client, codebook_file, messy, tmp_path):
    expected = local_run(messy, codebook_file, tmp_path / "local", 2)
    address = client.scheduler.address
    args = ["encode", messy, "-c", codebook_file, *FAST, "--shard-images", 2]
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
    # A .npy's shards are made there too, staged beside it, then written here.
    run(*args, "-o", tmp_path / "dask.npy", "--scheduler", address)
    run(*args, "-o", tmp_path / "here.npy")
    assert (tmp_path / "dask.npy").read_bytes() == (tmp_path / "here.npy").read_bytes()
    assert not (tmp_path / ".dask.npy.parts").exists()


@pytest.mark.slow
def test_the_command_line_starts_a_local_cluster(codebook_file, tmp_path):
    expected = local_run(DATA, codebook_file, tmp_path / "local", 3)
    args = ["encode", DATA, "-c", codebook_file, "--shard-images", 3, "-j", 2]
    run(*args, "-o", tmp_path / "dask", "--dask")
    assert folder_bytes(tmp_path / "dask") == expected


def test_without_the_extra_the_error_says_what_to_install(
    monkeypatch, codebook_file, tmp_path
):
    monkeypatch.setitem(sys.modules, "distributed", None)
    with pytest.raises(ImportError, match=re.escape(install_command("dask"))):
        encode_images_to_folder(DATA, codebook_file, tmp_path / "v", client=object())
    result = run(
        "encode", DATA, "-c", codebook_file, "-o", tmp_path / "w", "--dask", exit_code=1
    )
    assert result.stderr == (
        "Error: running on a Dask cluster requires dask.distributed; install it "
        f"with: {install_command('dask')}\n"
    )
