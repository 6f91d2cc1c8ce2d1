"""``vlad encode``: the Quick start's main job, and encoding images and
descriptor files as the library does."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import cv2
import numpy as np
import pytest
from photos import DATA, MESSY_NAMES, MESSY_SKIPPED, PHOTOS, make_messy_folder

import vlad
from vlad._extras import install_command
from vlad.formats._vectors import load_vectors

from .conftest import FAST, run


def test_the_main_job_writes_vectors_names_and_a_report(main_job):
    folder, fitted, encoded = main_job
    vectors, names, record = load_vectors(folder / "v.npy")
    assert vectors.shape == (len(PHOTOS), 16 * 128) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)
    assert names == PHOTOS
    codebook = vlad.Codebook.load(folder / "codebook.npz")
    assert record["codebook"]["fingerprint"] == codebook.fingerprint
    assert record["descriptor"] == vlad.images._sift.SiftOptions().record()
    assert record["encoding"] == {
        "aggregator": "auto",
        "power": 1.0,
        "intra": True,
        "l2": True,
        "mass": False,
    }
    assert (record["n_found"], record["n_skipped"], record["n_empty"]) == (8, 0, 0)
    assert "wrote a codebook of 16 centres" in fitted.stderr
    assert "wrote the VLAD vectors of 8 images (8 x 2048 float32, codebook " in (
        encoded.stderr
    )
    assert encoded.stdout == ""


def transformed_copies(folder: Path) -> dict[str, str]:
    """Write a cropped, a rotated and a recompressed copy of each photo; return
    each copy's name and its original's."""
    folder.mkdir()
    originals = {}
    for name in PHOTOS:
        image = cv2.imread(str(DATA / name))
        height, width = image.shape[:2]
        stem = Path(name).stem
        crop = image[height // 10 : -height // 10, width // 8 : -width // 8]
        rotation = cv2.getRotationMatrix2D((width / 2, height / 2), 20, 1.0)
        rotated = cv2.warpAffine(
            image, rotation, (width, height), borderMode=cv2.BORDER_REFLECT
        )
        cv2.imwrite(str(folder / f"{stem}-crop.png"), crop)
        cv2.imwrite(str(folder / f"{stem}-rotated.png"), rotated)
        cv2.imwrite(
            str(folder / f"{stem}-q30.jpg"), image, [cv2.IMWRITE_JPEG_QUALITY, 30]
        )
        for suffix in ("crop.png", "rotated.png", "q30.jpg"):
            originals[f"{folder.name}/{stem}-{suffix}"] = f"{DATA.name}/{name}"
    return originals


# Full-size photos and 24 copies, seconds: with the slow tests.
@pytest.mark.slow
def test_transformed_copies_are_closest_to_their_originals(
    main_job, tmp_path, monkeypatch
):
    folder, _, _ = main_job
    originals = transformed_copies(tmp_path / "copies")
    monkeypatch.chdir(tmp_path)
    shutil.copytree(DATA, tmp_path / DATA.name)
    run(
        "encode",
        DATA.name,
        "copies",
        "--codebook",
        folder / "codebook.npz",
        "-o",
        "both.npy",
    )
    vectors, names, _ = load_vectors(tmp_path / "both.npy")
    rows = {name: row for name, row in zip(names, vectors, strict=True)}
    photo_rows = np.array([rows[f"{DATA.name}/{name}"] for name in PHOTOS])
    assert len(originals) == 3 * len(PHOTOS)
    for copy, original in originals.items():
        similarities = photo_rows @ rows[copy]
        nearest = PHOTOS[int(np.argmax(similarities))]
        assert f"{DATA.name}/{nearest}" == original, (copy, similarities)


def test_encode_equals_the_library_encode_on_the_same_descriptors(
    tmp_path, codebook_path, photo_sets
):
    run("encode", DATA, "-c", codebook_path, "-o", tmp_path / "v.npy")
    vectors, names, _ = load_vectors(tmp_path / "v.npy")
    expected = vlad.encode(photo_sets, vlad.Codebook.load(codebook_path))
    np.testing.assert_array_equal(vectors, expected)
    assert names == photo_sets.names


# The option passes the name through to the library, which
# tests/test_aggregators.py checks aggregator by aggregator: the default and
# one other in the default run, every one with the slow tests.
@pytest.mark.parametrize(
    "aggregator",
    [
        name
        if name in ("auto", "sparse")
        else pytest.param(name, marks=pytest.mark.slow)
        for name in sorted(vlad.AGGREGATORS)
    ],
)
def test_every_aggregator_gives_the_library_vectors(
    tmp_path, codebook_path, photo_sets, aggregator
):
    args = ["encode", DATA, "-c", codebook_path, "-o", tmp_path / "v.npy"]
    args += ["--aggregator", aggregator, "--power", 0.5, "--mass", "--no-intra"]
    if aggregator not in vlad.available_aggregators():
        result = run(*args, exit_code=1)
        assert "requires" in result.stderr
        return
    run(*args)
    vectors, _, record = load_vectors(tmp_path / "v.npy")
    expected = vlad.encode(
        photo_sets,
        vlad.Codebook.load(codebook_path),
        aggregator="loop",
        power=0.5,
        mass=True,
        intra=False,
    )
    np.testing.assert_allclose(vectors, expected, rtol=1e-5, atol=1e-5)
    assert record["encoding"]["aggregator"] == aggregator


def test_descriptors_from_extract_encode_like_the_images(tmp_path, codebook_path):
    run("extract", DATA, *FAST, "-o", tmp_path / "d.npz")
    run("encode", tmp_path / "d.npz", "-c", codebook_path, "-o", tmp_path / "a.npy")
    run("encode", DATA, "-c", codebook_path, "-o", tmp_path / "b.npy")
    from_descriptors, names_a, _ = load_vectors(tmp_path / "a.npy")
    from_images, names_b, _ = load_vectors(tmp_path / "b.npy")
    np.testing.assert_array_equal(from_descriptors, from_images)
    assert names_a == names_b == PHOTOS


def test_a_messy_folder_is_encoded_and_reported(tmp_path, codebook_path):
    folder = make_messy_folder(tmp_path / "messy")
    result = run("encode", folder, "-c", codebook_path, "-o", tmp_path / "v.npy")
    for name, reason in MESSY_SKIPPED.items():
        assert f"warning: skipped {name}: " in result.stderr
        assert reason in result.stderr
    assert (
        "warning: 1 image has no keypoints, so no descriptors and a zero VLAD "
        "vector: blank.png; --dense describes every image"
    ) in result.stderr
    skipped = ", ".join(list(MESSY_SKIPPED)[:3])
    assert f"skipped {len(MESSY_SKIPPED)} files that could not be read: {skipped}" in (
        result.stderr
    )
    vectors, names, record = load_vectors(tmp_path / "v.npy")
    assert names == MESSY_NAMES
    assert np.isfinite(vectors).all()
    assert not vectors[0].any() and vectors[1:].any(axis=1).all()
    assert {item["name"] for item in record["skipped"]} == set(MESSY_SKIPPED)
    assert record["empty"] == ["blank.png"]
    assert (record["n_found"], record["n_skipped"], record["n_empty"]) == (6, 3, 1)


def test_the_vectors_do_not_depend_on_jobs(tmp_path, codebook_path):
    for jobs in (1, 2):
        run(
            "encode",
            DATA,
            "-c",
            codebook_path,
            "-j",
            jobs,
            "-o",
            tmp_path / f"{jobs}.npy",
        )
    one, _, _ = load_vectors(tmp_path / "1.npy")
    two, _, _ = load_vectors(tmp_path / "2.npy")
    np.testing.assert_array_equal(one, two)


def test_a_failed_run_writes_nothing(tmp_path, codebook_path):
    (tmp_path / "images").mkdir()
    (tmp_path / "images" / "broken.jpg").write_bytes(b"\xff\xd8\xff")
    run(
        "encode",
        tmp_path / "images",
        "-c",
        codebook_path,
        "-o",
        tmp_path / "v.npy",
        exit_code=1,
    )
    assert sorted(path.name for path in tmp_path.iterdir()) == ["images"]


def test_jax_requested_but_not_installed(monkeypatch, tmp_path, codebook_path):
    monkeypatch.setitem(sys.modules, "jax", None)
    args = ["encode", DATA, "-c", codebook_path, "-o", tmp_path / "v.npy"]
    result = run(*args, "--aggregator", "jax", exit_code=1)
    assert result.stderr == (
        "Error: the 'jax' aggregator requires JAX; install it with: "
        f"{install_command('jax')}\n"
    )
    assert not (tmp_path / "v.npy").exists()


@pytest.mark.parametrize(
    ("flags", "settings"),
    [
        (["--residual-norm", "--power", "0.2"], {"residual_norm": True, "power": 0.2}),
        (
            ["--assignment", "multiple", "--nearest", "4"],
            {"assignment": "multiple", "n_nearest": 4},
        ),
        (
            ["--assignment", "soft", "--kernel-width", "0.5", "--residual-norm"],
            {"assignment": "soft", "kernel_width": 0.5, "residual_norm": True},
        ),
    ],
)
def test_encoding_variants_give_the_library_vectors(
    tmp_path, codebook_path, photo_sets, flags, settings
):
    run("encode", DATA, "-c", codebook_path, "-o", tmp_path / "v.npy", *flags)
    vectors, _, record = load_vectors(tmp_path / "v.npy")
    options = vlad.EncodingOptions(**settings)
    expected = vlad.encode(photo_sets, vlad.Codebook.load(codebook_path), options)
    np.testing.assert_allclose(vectors, expected, rtol=1e-5, atol=1e-6)
    assert record["encoding"] == options.record()
    assert vlad.EncodingOptions.from_record(record["encoding"]) == options


def test_an_aggregator_without_weights_is_refused_in_one_line(tmp_path, codebook_path):
    result = run(
        "encode", DATA, "-c", codebook_path, "-o", tmp_path / "v.npy",
        "--aggregator", "masked", "--assignment", "soft", exit_code=1,
    )  # fmt: skip
    assert "aggregator 'masked' supports hard assignment only" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    result = run(
        "encode", DATA, "-c", codebook_path, "-o", tmp_path / "v.npy",
        "--nearest", "3", exit_code=1,
    )  # fmt: skip
    assert "n_nearest must be 1 with assignment='hard'" in result.stderr
    assert not (tmp_path / "v.npy").exists()
