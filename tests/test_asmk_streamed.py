"""An ASMK index folder written a part of the descriptors at a time, in
segments merged at the end: the same lists and results as the index built in
memory, whatever the bound on the entries held."""

from __future__ import annotations

import json

import numpy as np
import pytest
from photos import DATA, FAST_OPTIONS

import vlad
from vlad.pipeline import extract_images_to_folder
from vlad.search import build_asmk_index, load_asmk_index, write_asmk_index


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    """The bundled photos' descriptors in shards of three images, the same
    in memory, and a codebook of 32 words."""
    folder = tmp_path_factory.mktemp("streamed") / "descriptors"
    sharded = extract_images_to_folder(
        DATA, folder, FAST_OPTIONS, n_jobs=1, shard_images=3
    )
    sets = sharded.between(0, len(sharded))
    return sharded, sets, vlad.fit_codebook(sets, 32, n_jobs=1)


@pytest.mark.parametrize(
    ("segment_entries", "settings"),
    [
        (1, {}),
        pytest.param(100, {"idf": True}, marks=pytest.mark.slow),
        pytest.param(250, {"binary": False}, marks=pytest.mark.slow),
        pytest.param(10**9, {}, marks=pytest.mark.slow),
    ],
)
def test_written_in_segments_as_built_in_memory(
    shards, tmp_path, segment_entries, settings
):
    sharded, sets, codebook = shards
    whole = build_asmk_index(sets, codebook, **settings)
    written = write_asmk_index(
        sharded, codebook, tmp_path / "index", segment_entries=segment_entries,
        **settings,
    )  # fmt: skip
    assert written.n_segments == 1 and written.names == whole.names
    for name in ("word_offsets", "entry_images", "codes"):
        np.testing.assert_array_equal(getattr(written, name), getattr(whole, name))
    record = json.loads((tmp_path / "index" / "index.json").read_text())
    assert record["idf"] == bool(settings.get("idf"))
    left = sorted(path.name for path in (tmp_path / "index").iterdir())
    assert left[-1 if not settings.get("idf") else -2].startswith("segment-")
    assert len([name for name in left if name.startswith("segment-")]) == 1
    loaded = load_asmk_index(tmp_path / "index")
    found, expected = loaded.search(sets, 4), whole.search(sets, 4)
    assert found.rankings() == expected.rankings()
    for ours, theirs in zip(found, expected, strict=True):
        np.testing.assert_allclose(ours.scores, theirs.scores, rtol=1e-6)


def test_names_and_existing_folders_are_checked_before_anything_is_kept(
    shards, tmp_path
):
    sharded, _, codebook = shards
    with pytest.raises(ValueError, match="3 names for 8 images"):
        write_asmk_index(sharded, codebook, tmp_path / "index", names=["a", "b", "c"])
    assert not (tmp_path / "index").exists()
    assert not list(tmp_path.iterdir())
    (tmp_path / "index").mkdir()
    with pytest.raises(FileExistsError):
        write_asmk_index(sharded, codebook, tmp_path / "index")
    names = [f"image-{position}" for position in range(len(sharded))]
    written = write_asmk_index(
        sharded, codebook, tmp_path / "index", names=names, overwrite=True,
        segment_entries=50,
    )  # fmt: skip
    assert written.names == names
