"""Hostile folders: symbolic link loops, links to folders and to devices,
named pipes, unreadable files and folders, names that break lines.

Nothing found in a folder vanishes: it is read, or skipped and listed with
its reason; links to folders are followed, loops are not.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import vlad
from hostile.conftest import (
    assert_one_line_error,
    privileges_dropped,
    record,
    run_vlad,
)
from hostile.makers import encoded
from vlad.images._files import find_images, walk_images

JPEG = encoded(".jpg")


@pytest.fixture
def linked_folder(tmp_path):
    """Photos, with a link loop, a link to itself, a dangling link, a link to
    a device, a named pipe, a link to a folder outside and a folder whose
    name looks like an image's."""
    root = tmp_path / "photos"
    (root / "sub").mkdir(parents=True)
    (root / "a.jpg").write_bytes(JPEG)
    (root / "sub" / "b.jpg").write_bytes(JPEG)
    (root / "sub" / "loop").symlink_to("..")
    (root / "self.jpg").symlink_to("self.jpg")
    (root / "gone.jpg").symlink_to("missing.jpg")
    (root / "zero.jpg").symlink_to(os.devnull)
    os.mkfifo(root / "pipe.jpg")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "c.png").write_bytes(encoded(".png"))
    (root / "linked").symlink_to(outside)
    (root / "album.jpg").mkdir()
    (root / "album.jpg" / "d.jpg").write_bytes(JPEG)
    return root


EXPECTED_NAMES = ["a.jpg", "album.jpg/d.jpg", "linked/c.png", "sub/b.jpg"]
EXPECTED_SKIPPED = {
    "gone.jpg": "No such file or directory",
    "pipe.jpg": "not a regular file",
    "self.jpg": "Too many levels of symbolic links",
    "sub/loop/": "a link to a folder that holds it (a loop): not followed",
    "zero.jpg": "not a regular file",
}


def test_links_are_followed_and_loops_reported(linked_folder):
    images, problems = walk_images(linked_folder)
    assert problems == {"sub/loop/": EXPECTED_SKIPPED["sub/loop/"]}
    names = [image.name for image in images]
    assert names == sorted(
        EXPECTED_NAMES + ["gone.jpg", "pipe.jpg", "self.jpg", "zero.jpg"]
    )
    record("skipped and reported")


def test_a_folder_of_links_is_extracted_skipping_and_listing(linked_folder, caplog):
    sets, report = vlad.extract_images(linked_folder, {"max_side": 128}, n_jobs=2)
    assert report.names == EXPECTED_NAMES == sets.names
    assert set(report.skipped) == set(EXPECTED_SKIPPED)
    for name, reason in EXPECTED_SKIPPED.items():
        assert reason in report.skipped[name]
        assert f"skipped {name}: " in caplog.text
    assert report.n_found == len(report.names) + len(report.skipped)
    record("skipped and reported", len(EXPECTED_SKIPPED))
    record("handled", len(EXPECTED_NAMES))


# The three commands walk the folder with one function, which the default run
# checks in test_a_folder_of_links_is_extracted_skipping_and_listing above; a
# run of each command takes seconds: with the slow tests.
@pytest.mark.slow
@pytest.mark.parametrize("command", ["extract", "fit", "encode"])
def test_every_command_survives_the_links(
    linked_folder, tmp_path, codebook_path, command
):
    output = tmp_path / ("out.npy" if command == "encode" else "out.npz")
    extra = ["-c", codebook_path] if command == "encode" else []
    extra += ["--n-clusters", 4] if command == "fit" else []
    result = run_vlad(command, linked_folder, *extra, "-o", output, "--max-side", 128)
    assert result.returncode == 0, result.stderr
    for name in EXPECTED_SKIPPED:
        assert f"skipped {name}: " in result.stderr
    assert output.exists()
    record("skipped and reported")


def test_links_to_one_folder_are_walked_once(tmp_path):
    """Two links to the next level at each of 24 levels: 2**24 paths to
    walk without memory of the folders walked, 24 folders with it."""
    levels = [tmp_path / f"level{i}" for i in range(25)]
    for level in levels:
        level.mkdir()
    for level, below in zip(levels[:-1], levels[1:], strict=True):
        (level / "left").symlink_to(below)
        (level / "right").symlink_to(below)
    (levels[-1] / "deep.jpg").write_bytes(JPEG)
    [image] = find_images(levels[0])
    assert image.name == "left/" * 24 + "deep.jpg"
    record("handled")


# Encodes a folder of photos at full size;
# test_unreadable_files_and_folders_are_listed is the default run's.
@pytest.mark.slow
def test_names_that_break_lines_are_skipped_not_shifted(tmp_path, codebook_path):
    folder = tmp_path / "photos"
    folder.mkdir()
    for name in ["a.jpg", "b\n.jpg", "c\r.jpg", "d.jpg"]:
        (folder / name).write_bytes(JPEG)
    output = tmp_path / "v.npy"
    result = run_vlad("encode", folder, "-c", codebook_path, "-o", output)
    assert result.returncode == 0, result.stderr
    names = output.with_suffix(".names.txt").read_text().splitlines()
    assert names == ["a.jpg", "d.jpg"]
    vectors = np.load(output)
    single = vlad.encode_images(folder / "a.jpg", codebook_path, n_jobs=1).vectors
    np.testing.assert_allclose(vectors[:1], single, atol=1e-6)
    assert "b\\x0a.jpg" in result.stderr and "c\\x0d.jpg" in result.stderr
    record("skipped and reported", 2)


def test_unreadable_files_and_folders_are_listed(open_folder, codebook_path):
    """Run as an unprivileged user (root reads everything)."""
    switch = privileges_dropped()
    photos = open_folder / "photos"
    (photos / "locked").mkdir(parents=True)
    (photos / "a.jpg").write_bytes(JPEG)
    (photos / "locked" / "b.jpg").write_bytes(JPEG)
    (photos / "secret.jpg").write_bytes(JPEG)
    (photos / "secret.jpg").chmod(0o000)
    (photos / "locked").chmod(0o000)
    photos.chmod(0o755)
    output = open_folder / "v.npy"
    result = run_vlad("encode", photos, "-c", codebook_path, "-o", output, **switch)
    assert result.returncode == 0, result.stderr
    assert (
        "skipped locked/: cannot list the folder (Permission denied)" in result.stderr
    )
    assert "skipped secret.jpg: Permission denied" in result.stderr
    assert output.with_suffix(".names.txt").read_text() == "a.jpg\n"
    record("skipped and reported", 2)


def test_an_unreadable_input_folder_is_a_usage_error(open_folder):
    switch = privileges_dropped()
    photos = open_folder / "photos"
    photos.mkdir()
    (photos / "a.jpg").write_bytes(JPEG)
    photos.chmod(0o000)
    result = run_vlad("extract", photos, "-o", open_folder / "d.npz", **switch)
    assert result.returncode == 2
    assert_one_line_error(result.stderr, "is not readable")
