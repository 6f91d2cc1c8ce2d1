"""Learned local features (features="aliked"): the same keypoints and
descriptors as hloc's procedure for ALIKED, images described in batches that
do not change them, bad and tiny images skipped or empty as for SIFT, the
record, refusal of other descriptors, folders of shards resumed.

hloc's procedure is written here again, from its code (extract_features.py
and its ALIKED wrapper): OpenCV's RGB image as float32, shrunk with area
interpolation to at most 1024 pixels on its longest side, divided by 255,
through kornia's ALIKED (threshold 0.2, at most 4096 keypoints), keypoints
mapped back by ``(x + 0.5) * scale - 0.5`` on each axis.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time

import cv2
import numpy as np
import pytest
from click.testing import CliRunner
from learned_networks import WEIGHTS_SHA256, authors_weights, random_weights
from photos import DATA, MESSY_NAMES, MESSY_SKIPPED, PHOTOS, make_messy_folder

torch = pytest.importorskip("torch")
kornia = pytest.importorskip("kornia")

import vlad  # noqa: E402
from vlad.cli._main import main  # noqa: E402
from vlad.formats._shards import MANIFEST_NAME  # noqa: E402
from vlad.images._describe import describe_files  # noqa: E402
from vlad.images._files import ImageFile  # noqa: E402
from vlad.images._learned import LearnedOptions  # noqa: E402
from vlad.images._learned_batches import describe_learned  # noqa: E402
from vlad.pipeline._extraction import extract_images_to_folder  # noqa: E402

#: Small images keep the network fast in the default run (about 0.1 s each).
FAST = {"features": "aliked", "max_side": 128, "device": "cpu"}
THREE = ["camera.png", "chelsea.jpg", "coffee.jpg"]


@pytest.fixture(scope="module")
def weights(tmp_path_factory):
    """Weights of a network made at random: enough where what is checked does
    not depend on what the network has learned."""
    return random_weights(tmp_path_factory.mktemp("weights") / "random.pth")


@pytest.fixture(scope="module")
def photos(tmp_path_factory):
    """Three of the photos: enough for codebooks, shards and refusals."""
    folder = tmp_path_factory.mktemp("photos")
    for name in THREE:
        (folder / name).write_bytes((DATA / name).read_bytes())
    return folder


def reference_network(path, max_keypoints=4096, threshold=0.2):
    """kornia's ALIKED with the weights at ``path``, loaded as kornia's
    ``from_pretrained`` loads them."""
    network = kornia.feature.ALIKED(
        model_name="aliked-n16",
        max_num_keypoints=max_keypoints,
        detection_threshold=threshold,
    )
    network.load_state_dict(torch.load(path, weights_only=True), strict=False)
    return network.eval()


def hloc_features(path, network, resize_max=1024):
    """Keypoints (x, y), scores and descriptors of an image file by hloc's
    procedure, highest score first."""
    image = cv2.imread(str(path), cv2.IMREAD_COLOR)[:, :, ::-1]
    image = image.astype(np.float32)
    size = np.array(image.shape[:2][::-1])
    scale = resize_max / max(size)
    if scale < 1.0:
        size_new = tuple(int(round(x * scale)) for x in size)
        image = cv2.resize(image, size_new, interpolation=cv2.INTER_AREA)
    tensor = torch.from_numpy(image.transpose((2, 0, 1)) / 255.0)[None]
    with torch.no_grad():
        found = network(tensor)[0]
    scales = (size / np.array(image.shape[:2][::-1])).astype(np.float32)
    keypoints = (found.keypoints.numpy() + 0.5) * scales[None] - 0.5
    scores = found.keypoint_scores.numpy()
    order = np.argsort(-scores, kind="stable")
    return keypoints[order], scores[order], found.descriptors.numpy()[order]


def nearest(ours, theirs):
    """For each of our keypoints, the row of the nearest of theirs, and how
    far it is (pixels)."""
    distances = np.linalg.norm(ours[:, None, :2] - theirs[None, :, :2], axis=2)
    rows = distances.argmin(axis=1)
    return rows, distances[np.arange(len(ours)), rows]


def assert_same_features(ours, theirs, atol=1e-3):
    """The same keypoints (each at the position of one of theirs), scores and
    descriptors; keypoints of nearly equal scores in either order."""
    assert ours[0].shape == theirs[0].shape
    rows, _ = nearest(ours[0], theirs[0])
    assert sorted(rows) == list(range(len(rows)))
    np.testing.assert_allclose(ours[0], theirs[0][rows], atol=atol)
    np.testing.assert_allclose(ours[1], theirs[1][rows], atol=atol / 10)


def assert_hlocs(path, options, network):
    """vlad's keypoints are hloc's: each at the position of one of hloc's, with
    its score and descriptor, highest score first. (Keypoints of nearly equal
    scores may come in either order: other kernels, other roundings.)"""
    keypoints, descriptors = describe_learned(path, options)
    expected = hloc_features(path, network, options.max_side)
    assert len(keypoints) == len(expected[0]) > 0
    matched, _ = nearest(keypoints, expected[0])
    assert sorted(matched) == list(range(len(keypoints)))
    np.testing.assert_allclose(keypoints[:, :2], expected[0][matched], atol=1e-3)
    np.testing.assert_allclose(keypoints[:, 2], expected[1][matched], atol=1e-5)
    assert np.all(keypoints[:, 3] == 0)
    np.testing.assert_allclose(descriptors, expected[2][matched], atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(descriptors, axis=1), 1, atol=1e-5)
    assert np.all(np.diff(keypoints[:, 2]) <= 0)


@pytest.mark.parametrize("name", ["chelsea.jpg", "camera.png"])
def test_features_are_hlocs_on_a_shrunk_photo(name):
    weights = authors_weights()
    options = LearnedOptions(weights=weights, max_side=128, device="cpu")
    assert_hlocs(DATA / name, options, reference_network(weights))


@pytest.mark.slow
def test_features_are_hlocs_on_the_photos_at_full_settings(tmp_path):
    """Each bundled photo (none is over 1024 pixels), and one enlarged to
    2000 pixels, which is shrunk to 1024 as hloc shrinks it."""
    weights = authors_weights()
    options = LearnedOptions(weights=weights, device="cpu")
    network = reference_network(weights)
    photo = cv2.imread(str(DATA / "coffee.jpg"))
    large = tmp_path / "large.png"
    cv2.imwrite(
        str(large), cv2.resize(photo, (2000, 1333), interpolation=cv2.INTER_CUBIC)
    )
    for path in [*(DATA / name for name in PHOTOS), large]:
        assert_hlocs(path, options, network)


def test_an_image_array_is_described_as_its_file():
    weights = authors_weights()
    options = LearnedOptions(weights=weights, max_side=128, device="cpu")
    image = vlad.read_image(DATA / "chelsea.jpg", colour=True)
    from_array = describe_learned(image, options)
    from_file = describe_learned(DATA / "chelsea.jpg", options)
    for ours, theirs in zip(from_array, from_file, strict=True):
        np.testing.assert_allclose(ours, theirs, atol=1e-5)
    grey = vlad.read_image(DATA / "camera.png")
    assert describe_learned(grey, options)[1].shape[1] == 128


@pytest.mark.parametrize("shape", [(1, 1), (4, 4), (4, 300), (300, 4), (2, 2000)])
def test_images_too_small_have_no_keypoints(weights, shape):
    """The detector drops maxima within 2 pixels of the border: the network
    finds none in images 4 pixels across (after shrinking), and is not run."""
    image = np.random.default_rng(0).integers(0, 256, (*shape, 3), dtype=np.uint8)
    options = LearnedOptions(weights=weights, device="cpu", max_side=1024)
    keypoints, descriptors = describe_learned(image, options)
    assert keypoints.shape == (0, 4) and descriptors.shape == (0, 128)
    network = reference_network(weights)
    height, width = shape
    scale = min(1.0, 1024 / max(shape))
    size = (max(1, round(width * scale)), max(1, round(height * scale)))
    shrunk = cv2.resize(image.astype(np.float32), size, interpolation=cv2.INTER_AREA)
    tensor = torch.from_numpy(shrunk.reshape(size[1], size[0], 3) / 255.0)
    with torch.no_grad():
        found = network(tensor.permute(2, 0, 1)[None].float())[0]
    assert len(found.keypoints) == 0


def test_a_uniform_image_has_no_keypoint():
    weights = authors_weights()
    options = LearnedOptions(weights=weights, device="cpu")
    keypoints, descriptors = describe_learned(
        np.full((64, 64, 3), 128, np.uint8), options
    )
    assert keypoints.shape == (0, 4) and descriptors.shape == (0, 128)


def test_bad_files_are_skipped_and_reported_as_for_sift(weights, tmp_path):
    """Unreadable files skipped with SIFT's reasons; an image without
    keypoints kept, empty, and reported."""
    folder = make_messy_folder(tmp_path / "messy")
    cv2.imwrite(str(folder / "tiny.png"), np.zeros((3, 3), np.uint8))
    options = {**FAST, "weights": weights}
    sets, report = vlad.extract_images(folder, options, n_jobs=2)
    assert report.names == [*MESSY_NAMES, "tiny.png"] == sets.names
    assert set(report.skipped) == set(MESSY_SKIPPED)
    for name, reason in MESSY_SKIPPED.items():
        assert reason in report.skipped[name]
    assert report.empty == ["tiny.png"]
    assert sets.lengths[-1] == 0 and min(sets.lengths[:-1]) > 0


def describe_all(images, options, n_jobs=2):
    progress = []
    results = list(
        describe_files(
            images, options, n_jobs, lambda done, total: progress.append((done, total))
        )
    )
    assert progress == [(done, len(images)) for done in range(1, len(images) + 1)]
    return results


def test_batches_do_not_change_the_descriptors_or_their_order(weights, tmp_path):
    """Images of two sizes and unreadable ones in between: every batch size
    gives what one image at a time gives, image after image."""
    folder = make_messy_folder(tmp_path / "messy")
    images = [ImageFile(DATA / name, name) for name in PHOTOS]
    images += [ImageFile(folder / name, name) for name in ("corrupt.jpg", "blank.png")]
    images = [images[i] for i in (0, 8, 1, 2, 9, 3, 4, 5, 6, 7)]
    options = LearnedOptions(weights=weights, device="cpu", max_side=64)
    alone = describe_all(images, LearnedOptions(**{**vars(options), "batch_size": 1}))
    for batch_size in (2, 3, 16):
        batched = describe_all(
            images, LearnedOptions(**{**vars(options), "batch_size": batch_size})
        )
        for (image, ours), (expected_image, theirs) in zip(batched, alone, strict=True):
            assert image == expected_image
            if isinstance(theirs, Exception):
                assert str(ours) == str(theirs)
                continue
            assert_same_features(ours, theirs)
    assert [isinstance(found, Exception) for _, found in alone] == [
        image.name == "corrupt.jpg" for image in images
    ]


def test_the_record_and_the_file(tmp_path):
    weights = authors_weights()
    output = tmp_path / "aliked.npz"
    result = CliRunner().invoke(
        main,
        [
            "extract",
            str(DATA),
            "-o",
            str(output),
            "--features",
            "aliked",
            "--weights",
            str(weights),
            "--max-side",
            "128",
            "--max-keypoints",
            "100",
            "--device",
            "cpu",
            "--batch-size",
            "2",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "(ALIKED (aliked-n16) at detected keypoints)" in result.output
    sets = vlad.DescriptorSets.load(output)
    assert sets.metadata == {
        "extractor": "aliked",
        "model": "aliked-n16",
        "max_side": 128,
        "max_keypoints": 100,
        "detection_threshold": 0.2,
        "max_pixels": 1 << 27,
        "weights_sha256": WEIGHTS_SHA256,
        "kornia_version": kornia.__version__,
        "torch_version": torch.__version__,
    }
    json.dumps(sets.metadata)
    assert sets.names == PHOTOS and sets.n_features == 128
    assert max(sets.lengths) == 100
    for t, name in enumerate(PHOTOS):
        keypoints = sets.keypoints_of(t)
        height, width = cv2.imread(str(DATA / name)).shape[:2]
        assert np.all(np.diff(keypoints[:, 2]) <= 0) and np.all(keypoints[:, 2] > 0)
        assert np.all((keypoints[:, 0] > -0.5) & (keypoints[:, 0] < width - 0.5))
        assert np.all((keypoints[:, 1] > -0.5) & (keypoints[:, 1] < height - 0.5))
    assert LearnedOptions.from_record(sets.metadata) == LearnedOptions(
        max_side=128, max_keypoints=100, weights_sha256=WEIGHTS_SHA256
    )


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--features", "aliked", "--root-sift"], r"\(root_sift\) apply to OpenCV's"),
        (["--device", "cpu"], r"\(device\) apply to learned features \(aliked\)"),
        (["--features", "orb", "--detection-threshold", "0.5"], "apply to learned"),
    ],
)
def test_options_of_other_features_are_refused_on_the_command_line(
    options, message, tmp_path
):
    result = CliRunner().invoke(
        main, ["extract", str(DATA), "-o", str(tmp_path / "d.npz"), *options]
    )
    assert result.exit_code == 1
    (line,) = result.output.splitlines()
    assert line.startswith("Error: descriptor options (")
    assert re.search(message, line)


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_cuda_without_cuda_is_refused(weights):
    options = {**FAST, "weights": weights, "device": "cuda"}
    with pytest.raises(ValueError, match="PyTorch sees no CUDA device here"):
        vlad.extract_images(DATA / "chelsea.jpg", options)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_gives_the_cpus_features():
    weights = authors_weights()
    images = [ImageFile(DATA / name, name) for name in PHOTOS]
    found = {}
    for device in ("cpu", "cuda"):
        options = LearnedOptions(weights=weights, device=device, max_side=512)
        found[device] = describe_all(images, options)
    for (_, cpu), (_, cuda) in zip(found["cpu"], found["cuda"], strict=True):
        # Other kernels: a keypoint near the threshold may come or go, and
        # keypoints of nearly equal scores swap places.
        assert abs(len(cpu[0]) - len(cuda[0])) <= max(2, len(cpu[0]) // 50)
        strongest = cpu[0][:50]
        rows, distances = nearest(strongest, cuda[0])
        assert np.mean(distances < 0.05) > 0.95
        close = distances < 0.05
        np.testing.assert_allclose(cpu[1][:50][close], cuda[1][rows[close]], atol=1e-2)


@pytest.fixture(scope="module")
def aliked_sets(weights, photos, tmp_path_factory):
    path = tmp_path_factory.mktemp("aliked") / "aliked.npz"
    sets, _ = vlad.extract_images(photos, {**FAST, "weights": weights}, n_jobs=2)
    sets.save(path)
    return path


def test_a_sift_codebook_refuses_aliked_descriptors_and_back(
    aliked_sets, photos, tmp_path
):
    sift_sets, _ = vlad.extract_images(photos, {"max_side": 128}, n_jobs=2)
    sift_path = tmp_path / "sift.npz"
    sift_sets.save(sift_path)
    for descriptors, fitted_on in ((aliked_sets, sift_path), (sift_path, aliked_sets)):
        codebook = tmp_path / f"codebook-{fitted_on.stem}.npz"
        vlad.fit_codebook(vlad.DescriptorSets.load(fitted_on), 4, seed=0).save(codebook)
        result = CliRunner().invoke(
            main, ["encode", str(descriptors), "-c", str(codebook), "-o", "v.npy"]
        )
        assert result.exit_code == 1
        (line,) = result.output.splitlines()
        kinds = ("opencv-sift", "aliked")[:: 1 if fitted_on == sift_path else -1]
        assert line.startswith(
            f"Error: the codebook was fitted on {kinds[0]!r} descriptors but these "
            f"are {kinds[1]!r} descriptors"
        )


def test_images_are_described_as_the_codebooks_descriptors(
    weights, aliked_sets, photos, tmp_path
):
    sets = vlad.DescriptorSets.load(aliked_sets)
    codebook = vlad.fit_codebook(sets, 4, seed=0)
    given = {"weights": weights, "device": "cpu"}
    result = vlad.encode_images(photos, codebook, descriptor_options=given, n_jobs=2)
    assert result.vectors.shape == (len(THREE), 4 * 128)
    expected = vlad.encode(sets, codebook)
    np.testing.assert_allclose(result.vectors, expected, atol=1e-4)
    other = random_weights(tmp_path / "other.pth", seed=1)
    with pytest.raises(
        ValueError, match="but descriptors made with weights of SHA-256"
    ):
        vlad.encode_images(
            photos, codebook, descriptor_options={**given, "weights": other}, n_jobs=2
        )


def test_a_folder_of_shards_resumes(weights, photos, tmp_path):
    options = {**FAST, "weights": weights}
    expected = extract_images_to_folder(
        photos, tmp_path / "whole", options, shard_images=1, n_jobs=2
    )
    resumed = tmp_path / "resumed"
    extract_images_to_folder(photos, resumed, options, shard_images=1, n_jobs=2)
    # As a killed run leaves it: no manifest, a shard unfinished.
    (resumed / MANIFEST_NAME).unlink()
    next(resumed.glob("part-00001-*.json")).unlink()
    first = next(resumed.glob("part-00000-*.npy"))
    kept = first.stat().st_ino
    shards = extract_images_to_folder(
        photos, resumed, options, shard_images=1, n_jobs=2, resume=True
    )
    assert first.stat().st_ino == kept
    assert shards.names == expected.names == THREE
    assert shards.metadata == expected.metadata
    ours, theirs = shards.to_sets(), expected.to_sets()
    assert np.array_equal(ours.offsets, theirs.offsets)
    np.testing.assert_allclose(ours.descriptors, theirs.descriptors, atol=1e-5)
    np.testing.assert_allclose(ours.keypoints, theirs.keypoints, atol=1e-3)
    # Other settings: nothing kept.
    other = extract_images_to_folder(
        photos,
        resumed,
        {**options, "max_keypoints": 10},
        shard_images=1,
        n_jobs=2,
        resume=True,
    )
    assert max(other.lengths) == 10


@pytest.mark.slow
def test_a_run_killed_mid_folder_resumes_into_the_same_folder(weights, tmp_path):
    """A real ``vlad extract`` process, killed once it has written shards,
    then resumed: the shards it finished are kept, the folder is the whole
    run's."""
    options = ["--features", "aliked", "--weights", str(weights), "--max-side", "128"]
    command = [sys.executable, "-m", "vlad", "extract", str(DATA), *options, "-j", "1"]
    folder = tmp_path / "killed"
    process = subprocess.Popen(
        [*command, "-o", str(folder), "--shard-images", "1"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while len(list(folder.glob("part-*.json"))) < 2:
            assert process.poll() is None, "the run ended before it was killed"
            assert time.monotonic() < deadline
            time.sleep(0.05)
        os.kill(process.pid, signal.SIGKILL)
    finally:
        process.wait()
    assert not (folder / MANIFEST_NAME).exists()
    kept = {path.name: path.stat().st_ino for path in folder.glob("part-*.npy")}
    result = subprocess.run(
        [*command, "-o", str(folder), "--shard-images", "1", "--resume"],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    for name, inode in kept.items():
        assert (folder / name).stat().st_ino == inode
    whole = extract_images_to_folder(
        DATA, tmp_path / "whole", {**FAST, "weights": weights}, shard_images=1
    )
    resumed = vlad.formats.open_descriptor_shards(folder)
    assert resumed.names == whole.names and resumed.metadata == whole.metadata
    np.testing.assert_allclose(
        resumed.to_sets().descriptors, whole.to_sets().descriptors, atol=1e-5
    )


def test_images_without_keypoints_are_reported_without_sifts_advice(weights, tmp_path):
    """``--dense`` describes such images for SIFT only: not advised here."""
    folder = tmp_path / "photos"
    folder.mkdir()
    cv2.imwrite(str(folder / "a.png"), cv2.imread(str(DATA / "coffee.jpg")))
    cv2.imwrite(str(folder / "tiny.png"), np.zeros((3, 3), np.uint8))
    options = ["--features", "aliked", "--weights", weights, "--max-side", "64"]
    result = CliRunner().invoke(
        main,
        ["extract", str(folder), *map(str, options), "-o", str(tmp_path / "d.npz")],
    )
    assert result.exit_code == 0, result.output
    assert (
        "warning: 1 image has no keypoints, so no descriptors: tiny.png\n"
    ) in result.stderr


@pytest.mark.slow
def test_a_dask_cluster_makes_the_folder_made_here(
    weights, photos, cluster_client, tmp_path
):
    """Each worker process loads the network once, from the same weights
    file (its SHA-256 checked there), and writes what a run here writes."""
    options = {**FAST, "weights": weights}
    here = extract_images_to_folder(photos, tmp_path / "here", options, shard_images=1)
    there = extract_images_to_folder(
        photos, tmp_path / "there", options, shard_images=1, client=cluster_client
    )
    assert there.names == here.names == THREE
    assert there.metadata == here.metadata
    ours, theirs = there.to_sets(), here.to_sets()
    assert np.array_equal(ours.offsets, theirs.offsets)
    np.testing.assert_allclose(ours.descriptors, theirs.descriptors, atol=1e-5)
    np.testing.assert_allclose(ours.keypoints, theirs.keypoints, atol=1e-3)
