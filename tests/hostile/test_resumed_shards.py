"""``vlad extract --resume`` and ``vlad encode --resume`` keep a finished
shard only when it is as it was written: a shard whose record was edited
(per-image counts moved between images, keeping their sum) or whose record
has no checksum (written by vlad 0.4) is made again."""

from __future__ import annotations

import json

import pytest
from photos import DATA
from shard_folders import folder_bytes

from hostile.conftest import invoke, record
from vlad.pipeline._extraction import extract_images_to_folder

OPTIONS = {"max_side": 128}


def first_record(folder):
    return next(path for path in sorted(folder.glob("part-00000-*.json")))


@pytest.fixture
def extracted(tmp_path):
    folder = tmp_path / "d"
    extract_images_to_folder(DATA, folder, OPTIONS, shard_images=4, n_jobs=1)
    return folder, folder_bytes(folder)


def _move_one_descriptor(shard: dict) -> None:
    lengths = shard["lengths"]
    giver = next(i for i, n in enumerate(lengths) if n > 0)
    lengths[giver] -= 1
    lengths[(giver + 1) % len(lengths)] += 1


@pytest.mark.parametrize("edit", ["counts", "no checksum"])
def test_resume_makes_an_edited_or_unchecked_shard_again(extracted, edit):
    folder, expected = extracted
    path = first_record(folder)
    shard = json.loads(path.read_bytes())
    if edit == "counts":
        _move_one_descriptor(shard)
    else:
        del shard["checksum"]
    path.write_text(json.dumps(shard))
    extract_images_to_folder(
        DATA, folder, OPTIONS, shard_images=4, n_jobs=1, resume=True
    )
    assert folder_bytes(folder) == expected
    record("handled")


def test_the_command_line_resumes_an_edited_shard_to_the_same_bytes(extracted):
    folder, expected = extracted
    path = first_record(folder)
    shard = json.loads(path.read_bytes())
    _move_one_descriptor(shard)
    path.write_text(json.dumps(shard))
    invoke(
        "extract", DATA, "--max-side", 128, "--shard-images", 4, "-o", folder,
        "--resume", "-q", "-j", 1,
    )  # fmt: skip
    assert folder_bytes(folder) == expected
    record("handled")
