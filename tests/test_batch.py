"""Folders of images to descriptors, codebooks and vectors: vlad.pipeline."""

from __future__ import annotations

import logging
import re
import sys
import threading

import numpy as np
import pytest
from photos import (
    DATA,
    FAST_OPTIONS,
    MESSY_NAMES,
    MESSY_SKIPPED,
    PHOTOS,
    make_messy_folder,
)

import vlad
import vlad.pipeline._vector_kinds
from vlad._extras import install_command
from vlad.core._pool import map_in_order
from vlad.images._files import read_image
from vlad.images._sift import SiftOptions, extract_keypoints_with_options, extract_sift
from vlad.pipeline._extraction import extract_images, read_descriptor_sets
from vlad.pipeline._vector_shards import encode_images
from vlad.pipeline._vocabularies import fit_codebook_to_images


@pytest.fixture(scope="module")
def codebook(codebook_path):
    return vlad.Codebook.load(codebook_path)


@pytest.fixture
def messy_folder(tmp_path):
    return make_messy_folder(tmp_path / "messy")


def test_extract_images_describes_each_image_as_extract_sift_does(photo_sets):
    assert photo_sets.names == PHOTOS
    for name, descriptors in zip(photo_sets.names, photo_sets, strict=True):
        expected = extract_sift(read_image(DATA / name), **FAST_OPTIONS)
        np.testing.assert_array_equal(descriptors, expected)
    assert photo_sets.metadata == SiftOptions(**FAST_OPTIONS).record()


def test_extract_images_keeps_each_images_keypoints(photo_sets):
    options = SiftOptions(**FAST_OPTIONS)
    for t, name in enumerate(photo_sets.names):
        keypoints, descriptors = extract_keypoints_with_options(
            read_image(DATA / name), options
        )
        np.testing.assert_array_equal(photo_sets.keypoints_of(t), keypoints)
        np.testing.assert_array_equal(photo_sets[t], descriptors)
    # Positions are in the photos' own pixels, not the 256-pixel copies'.
    assert photo_sets.keypoints[:, :2].max() > 300


@pytest.mark.parametrize("n_jobs", [1, 3, -1, None])
def test_results_do_not_depend_on_n_jobs(photo_sets, n_jobs):
    sets, _ = extract_images(DATA, FAST_OPTIONS, n_jobs=n_jobs)
    np.testing.assert_array_equal(sets.descriptors, photo_sets.descriptors)
    np.testing.assert_array_equal(sets.offsets, photo_sets.offsets)
    np.testing.assert_array_equal(sets.keypoints, photo_sets.keypoints)


def test_bad_files_are_skipped_reported_and_warned_about(messy_folder, caplog):
    with caplog.at_level(logging.WARNING, logger="vlad"):
        sets, report = extract_images(messy_folder, n_jobs=2)
    assert sets.names == report.names == MESSY_NAMES
    assert report.n_found == 6
    assert sorted(report.skipped) == sorted(MESSY_SKIPPED)
    for name, reason in MESSY_SKIPPED.items():
        assert reason in report.skipped[name]
    assert report.empty == ["blank.png"]
    assert sets.lengths.tolist()[0] == 0 and min(sets.lengths[1:]) > 0
    warnings = [record.getMessage() for record in caplog.records]
    for name in MESSY_SKIPPED:
        assert any(name in message for message in warnings), name
    # Images without keypoints are reported, not warned about one by one: the
    # command line says it once for all of them.
    assert not any("blank.png" in message for message in warnings)


def test_bad_files_get_no_row_and_textureless_images_a_zero_row(messy_folder, codebook):
    result = encode_images(messy_folder, codebook, n_jobs=2)
    assert result.names == MESSY_NAMES
    assert np.isfinite(result.vectors).all()
    assert not result.vectors[0].any()
    np.testing.assert_allclose(
        np.linalg.norm(result.vectors[1:], axis=1), 1.0, rtol=1e-6
    )
    record = result.record()
    assert (record["n_found"], record["n_skipped"], record["n_empty"]) == (6, 3, 1)
    assert {item["name"] for item in record["skipped"]} == set(MESSY_SKIPPED)
    assert record["empty"] == ["blank.png"]


def test_dense_keypoints_describe_the_textureless_image(messy_folder):
    options = {"dense": True, "max_keypoints": 200, **FAST_OPTIONS}
    sets, report = extract_images(messy_folder, options, n_jobs=2)
    assert report.empty == [] and sets.lengths.min() > 0


def test_nothing_readable_is_an_error(tmp_path):
    (tmp_path / "a.jpg").write_bytes(b"")
    (tmp_path / "b.png").write_text("text")
    with pytest.raises(ValueError, match=r"none of the 2 images .* could be read"):
        extract_images(tmp_path, n_jobs=1)


def test_encode_images_equals_encode_on_the_same_descriptors(photo_sets, codebook):
    result = encode_images(DATA, codebook, n_jobs=2)
    np.testing.assert_array_equal(result.vectors, vlad.encode(photo_sets, codebook))
    assert result.vectors.dtype == np.float32
    assert result.names == PHOTOS


def test_encoding_in_chunks_changes_nothing(photo_sets, codebook, monkeypatch):
    monkeypatch.setattr(vlad.pipeline._vector_kinds, "ENCODE_CHUNK_IMAGES", 3)
    result = encode_images(DATA, codebook, power=0.5, mass=True, n_jobs=2)
    expected = vlad.encode(photo_sets, codebook, power=0.5, mass=True)
    np.testing.assert_allclose(result.vectors, expected, rtol=1e-6, atol=1e-7)


def test_the_codebook_records_descriptor_options_and_encoding_reuses_them(
    codebook,
):
    assert codebook.metadata["descriptor"]["max_side"] == FAST_OPTIONS["max_side"]
    result = encode_images(DATA / "rocket.jpg", codebook, n_jobs=1)
    assert result.descriptor == SiftOptions(**FAST_OPTIONS).record()
    overridden = encode_images(
        DATA / "rocket.jpg", codebook, descriptor_options={"max_keypoints": 50}
    )
    assert overridden.descriptor["max_keypoints"] == 50
    assert overridden.descriptor["max_side"] == FAST_OPTIONS["max_side"]


@pytest.mark.parametrize(
    ("options", "kind"),
    [
        ({"root_sift": False}, "SIFT at detected keypoints"),
        ({"dense": True}, "RootSIFT on a dense grid"),
    ],
)
def test_descriptors_of_another_kind_never_meet_the_codebook(codebook, options, kind):
    with pytest.raises(ValueError, match=f"RootSIFT at detected keypoints .* {kind}"):
        encode_images(DATA, codebook, descriptor_options=options)


def test_descriptors_of_affine_views_never_meet_a_codebook_of_the_image(codebook):
    with pytest.raises(ValueError, match=r"dense=False, affine_tilts=0\) or fit"):
        encode_images(DATA, codebook, descriptor_options={"affine_tilts": 1})


def test_a_codebook_of_affine_views_describes_images_with_them():
    options = {"affine_tilts": 1, "max_side": 128}
    sets, _ = extract_images(DATA / "rocket.jpg", options, n_jobs=1)
    codebook = vlad.fit_codebook(sets, 4, seed=0)
    result = encode_images(DATA / "rocket.jpg", codebook, n_jobs=1)
    assert result.descriptor["affine_tilts"] == 1
    np.testing.assert_allclose(result.vectors, vlad.encode(sets, codebook), atol=1e-6)
    kinds = r"of affine views \(tilts up to 1\) but these descriptors are RootSIFT at"
    for tilts in (0, 2):
        with pytest.raises(ValueError, match=kinds):
            encode_images(DATA, codebook, descriptor_options={"affine_tilts": tilts})


def test_descriptor_files_of_another_kind_are_refused_too(tmp_path, codebook):
    sets, _ = extract_images(DATA / "rocket.jpg", {"root_sift": False, "max_side": 256})
    sets.save(tmp_path / "sift.npz")
    with pytest.raises(ValueError, match="fitted on RootSIFT"):
        encode_images(tmp_path / "sift.npz", codebook)


def test_a_codebook_of_another_dimension_is_refused(tmp_path):
    codebook = vlad.fit_codebook(vlad.datasets.make_descriptor_sets(4, 50, 64), 4)
    with pytest.raises(ValueError, match="128 features .* have 64"):
        encode_images(DATA, codebook)


def test_descriptor_files_encode_like_their_images(tmp_path, photo_sets, codebook):
    photo_sets.save(tmp_path / "descriptors.npz")
    from_file = encode_images(tmp_path / "descriptors.npz", codebook)
    from_images = encode_images(DATA, codebook, n_jobs=2)
    np.testing.assert_array_equal(from_file.vectors, from_images.vectors)
    assert from_file.names == from_images.names
    assert from_file.descriptor == from_images.descriptor


def test_descriptor_files_pass_their_keypoints_through(tmp_path, photo_sets):
    photo_sets.save(tmp_path / "descriptors.npz")
    sets, report = read_descriptor_sets(tmp_path / "descriptors.npz")
    np.testing.assert_array_equal(sets.keypoints, photo_sets.keypoints)
    np.testing.assert_array_equal(sets.offsets, photo_sets.offsets)
    assert report.names == photo_sets.names


def test_textureless_images_keep_an_empty_keypoint_block(messy_folder):
    sets, _ = extract_images(messy_folder, n_jobs=2)
    blank = sets.names.index("blank.png")
    assert sets.keypoints_of(blank).shape == (0, 4)
    assert sets.keypoints.shape == (sets.descriptors.shape[0], 4)


def test_descriptor_options_do_not_apply_to_descriptor_files(tmp_path, photo_sets):
    photo_sets.save(tmp_path / "descriptors.npz")
    with pytest.raises(ValueError, match="apply to images"):
        read_descriptor_sets(tmp_path / "descriptors.npz", {"dense": True})


@pytest.mark.parametrize("shape", [(30, 8), (3, 10, 8)])
def test_npy_descriptor_files_hold_one_or_many_sets(tmp_path, shape):
    path = tmp_path / "descriptors.npy"
    np.save(path, np.random.default_rng(0).random(shape, dtype=np.float32))
    sets, report = read_descriptor_sets(path)
    assert len(sets) == (1 if len(shape) == 2 else shape[0])
    assert sets.n_features == 8 and report.skipped == {}


def test_npy_of_another_shape_is_refused(tmp_path):
    np.save(tmp_path / "flat.npy", np.zeros(5))
    with pytest.raises(ValueError, match=r"\(L, F\) or \(T, L, F\)"):
        read_descriptor_sets(tmp_path / "flat.npy")


def test_fitting_on_descriptors_or_on_their_images_gives_one_codebook(
    tmp_path, photo_sets, codebook
):
    photo_sets.save(tmp_path / "descriptors.npz")
    from_file, report = fit_codebook_to_images(tmp_path / "descriptors.npz", 16)
    assert from_file.fingerprint == codebook.fingerprint
    assert report.names == PHOTOS


def test_bad_encoding_parameters_fail_before_any_image_is_read(codebook):
    progress_calls = []
    with pytest.raises(ValueError, match="Unknown aggregator"):
        encode_images(DATA, codebook, aggregator="nope", progress=progress_calls.append)
    with pytest.raises(ValueError, match="power"):
        encode_images(DATA, codebook, power=2.0, progress=progress_calls.append)
    assert progress_calls == []


def test_missing_jax_fails_before_any_image_is_read(codebook, monkeypatch):
    monkeypatch.setitem(sys.modules, "jax", None)
    progress_calls = []
    with pytest.raises(ImportError, match=re.escape(install_command("jax"))):
        encode_images(DATA, codebook, aggregator="jax", progress=progress_calls.append)
    assert progress_calls == []


def test_progress_is_reported_after_each_image(codebook):
    calls = []
    encode_images(DATA, codebook, n_jobs=2, progress=lambda *args: calls.append(args))
    assert calls == [(n, len(PHOTOS)) for n in range(1, len(PHOTOS) + 1)]


def test_map_in_order_keeps_order_and_uses_threads():
    threads = set()

    def square(value):
        threads.add(threading.get_ident())
        return value * value

    assert list(map_in_order(square, range(50), n_jobs=4)) == [v * v for v in range(50)]
    assert threading.get_ident() not in threads


def test_map_in_order_raises_what_the_function_raises():
    def fail_on_three(value):
        if value == 3:
            raise ValueError("three")
        return value

    with pytest.raises(ValueError, match="three"):
        list(map_in_order(fail_on_three, range(10), n_jobs=2))


@pytest.mark.parametrize(("n_jobs", "error"), [(0, ValueError), (1.5, TypeError)])
def test_bad_n_jobs_are_refused(n_jobs, error):
    with pytest.raises(error, match="n_jobs must be"):
        extract_images(DATA, n_jobs=n_jobs)
