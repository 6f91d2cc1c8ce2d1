"""hloc's HDF5 feature files (vlad.formats._hloc): local features written as
hloc's extract_features.py writes them, read as descriptor sets by fit, encode
and search; global features written by encode and read back by a reader made
from hloc's pairs_from_retrieval.py; pairs files read as hloc and COLMAP read
them; one-line errors for damaged and wrongly laid-out files."""

from __future__ import annotations

import os
import re
import sys
from collections import defaultdict

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from photos import DATA

import vlad
from vlad._extras import install_command
from vlad.cli._main import main as cli
from vlad.formats import _hloc as hloc
from vlad.formats import read_global_features, write_global_features
from vlad.formats._descriptor_files import read_descriptor_file

h5py = pytest.importorskip("h5py")

#: Names as hloc makes them (relative paths), with a space and non-ASCII.
NAMES = ["db/0001.jpg", "db/0002.jpg", "a.jpg", "query/day/q 1.jpg", "café/日本.png"]


# What hloc does, written from its source: extract_features.main's loop,
# utils.io.list_h5_names and pairs_from_retrieval.get_descriptors.


def hloc_write_local(path, name, pred, as_half=True):
    """extract_features.main: one image's predictions into the features file."""
    if as_half:
        for k in pred:
            dt = pred[k].dtype
            if (dt == np.float32) and (dt != np.float16):
                pred[k] = pred[k].astype(np.float16)
    with h5py.File(str(path), "a", libver="latest") as fd:
        if name in fd:
            del fd[name]
        grp = fd.create_group(name)
        for k, v in pred.items():
            grp.create_dataset(k, data=v)
        if "keypoints" in pred:
            grp["keypoints"].attrs["uncertainty"] = 1.0


def hloc_list_h5_names(path):
    """utils.io.list_h5_names."""
    names = []
    with h5py.File(str(path), "r", libver="latest") as fd:

        def visit_fn(_, obj):
            if isinstance(obj, h5py.Dataset):
                names.append(obj.parent.name.strip("/"))

        fd.visititems(visit_fn)
    return list(set(names))


def hloc_get_descriptors(names, path, key="global_descriptor"):
    """pairs_from_retrieval.get_descriptors (as float32 NumPy, not torch)."""
    with h5py.File(str(path), "r", libver="latest") as fd:
        desc = [fd[n][key].__array__() for n in names]
    return np.stack(desc, 0).astype(np.float32)


def hloc_parse_retrieval(path):
    """utils.parsers.parse_retrieval."""
    retrieval = defaultdict(list)
    with open(path) as f:
        for p in f.read().rstrip("\n").split("\n"):
            if len(p) == 0:
                continue
            q, r = p.split()
            retrieval[q].append(r)
    return dict(retrieval)


def colmap_read_pairs(path):
    """COLMAP's ReadImagePairsText (matches_importer): trim the line, skip
    empty and '#' lines, the names up to the first and the next space."""
    pairs = []
    for line in open(path, encoding="utf-8").read().split("\n"):
        line = line.strip(" \t\n\v\f\r")
        if not line or line[0] == "#":
            continue
        first, _, rest = line.partition(" ")
        pairs.append((first.strip(), rest.partition(" ")[0].strip()))
    return pairs


def predictions(rng, n_keypoints, n_features=64):
    """What a local feature extractor gives hloc for one image: keypoints
    (N, 2), scores (N,), descriptors (D, N) and the image size."""
    return {
        "keypoints": rng.uniform(0, 640, (n_keypoints, 2)).astype(np.float32),
        "scores": rng.uniform(0, 1, n_keypoints).astype(np.float32),
        "descriptors": rng.normal(size=(n_features, n_keypoints)).astype(np.float32),
        "image_size": np.array([640, 480]),
    }


def write_local_features(path, names, *, as_half=True, n_features=64, seed=0):
    """An hloc local features file of ``names``; returns each image's
    predictions as written (float16 where ``as_half``)."""
    rng = np.random.default_rng(seed)
    written = {}
    for index, name in enumerate(names):
        pred = predictions(rng, 20 + 7 * index, n_features)
        hloc_write_local(path, name, pred, as_half)
        written[name] = pred
    return written


def reference_sets(path):
    """Descriptor sets built from what hloc's own reading gives: images in
    sorted name order, descriptors transposed to rows, keypoints x, y and
    their scores in place of sizes."""
    names = sorted(hloc_list_h5_names(path))
    with h5py.File(str(path), "r") as fd:
        blocks = [fd[n]["descriptors"].__array__().T for n in names]
        positions = [fd[n]["keypoints"].__array__() for n in names]
        scores = [fd[n]["scores"].__array__() for n in names]
    keypoints = [
        np.column_stack([p, s, np.zeros(len(p))]).astype(np.float32)
        for p, s in zip(positions, scores, strict=True)
    ]
    return vlad.DescriptorSets.from_list(
        [b.astype(np.float32) for b in blocks], names, keypoints=keypoints
    )


@pytest.fixture
def features(tmp_path):
    path = tmp_path / "feats-superpoint.h5"
    write_local_features(path, NAMES)
    return path


@pytest.mark.parametrize("as_half", [True, False])
def test_local_features_read_as_hloc_reads_them(tmp_path, as_half):
    path = tmp_path / "feats.h5"
    written = write_local_features(path, NAMES, as_half=as_half)
    sets = read_descriptor_file(path)
    expected = reference_sets(path)
    assert sets.names == sorted(NAMES) == expected.names
    np.testing.assert_array_equal(sets.offsets, expected.offsets)
    np.testing.assert_array_equal(sets.descriptors, expected.descriptors)
    np.testing.assert_array_equal(sets.keypoints, expected.keypoints)
    for t, name in enumerate(sets.names):
        np.testing.assert_array_equal(sets[t], written[name]["descriptors"].T)
        np.testing.assert_array_equal(
            sets.keypoints_of(t)[:, :2], written[name]["keypoints"]
        )
        # Scores stand in for sizes: verification keeps the strongest.
        np.testing.assert_array_equal(
            sets.keypoints_of(t)[:, 2], written[name]["scores"]
        )
    assert sets.dtype == np.float32
    assert sets.metadata == {
        "extractor": "hloc",
        "file": "feats.h5",
        "n_features": 64,
        "dtype": "float16" if as_half else "float32",
        "keypoint_strength": "scores",
    }


# What each of hloc's local feature extractors returns beside keypoints and
# descriptors (hloc/extractors/*.py, read from hloc's source), and so which
# dataset tells how strong each keypoint is.
EXTRACTOR_STRENGTHS = {
    "superpoint": "scores",  # SuperGlue's SuperPoint: keypoints, scores, descriptors
    "r2d2": "scores",
    "d2net": "scores",
    "aliked": "keypoint_scores",  # LightGlue's ALIKED: keypoint_scores
    "disk": "keypoint_scores",  # kornia's DISK: detection_scores as keypoint_scores
    "dog": "scales",  # SIFT: scales and oris beside scores that are all 0
}


def extractor_predictions(extractor, keypoints, descriptors, strength):
    """One image's predictions as hloc's ``extractor`` returns them (float32,
    as the models give), with ``strength`` under the name it writes, and the
    image size extract_features.main adds."""
    pred = {"keypoints": keypoints, "descriptors": descriptors}
    if extractor == "dog":
        pred["scales"] = strength
        pred["oris"] = np.zeros_like(strength)
        pred["scores"] = np.zeros_like(strength)  # "no scores for SIFT yet"
    else:
        pred[EXTRACTOR_STRENGTHS[extractor]] = strength
    pred["image_size"] = np.array([640, 480])
    return pred


@pytest.mark.parametrize("as_half", [True, False])
@pytest.mark.parametrize("extractor", sorted(EXTRACTOR_STRENGTHS))
def test_every_extractor_s_keypoint_strength_is_read(tmp_path, extractor, as_half):
    path = tmp_path / f"feats-{extractor}.h5"
    rng = np.random.default_rng(0)
    written = {}
    for name, n in (("a.jpg", 9), ("b.jpg", 14)):
        pred = extractor_predictions(
            extractor,
            rng.uniform(0, 640, (n, 2)).astype(np.float32),
            rng.normal(size=(32, n)).astype(np.float32),
            rng.uniform(0.5, 20, n).astype(np.float32),
        )
        hloc_write_local(path, name, pred, as_half)
        written[name] = pred
    dataset = EXTRACTOR_STRENGTHS[extractor]
    sets = read_descriptor_file(path)
    assert sets.metadata["keypoint_strength"] == dataset
    for t, name in enumerate(sets.names):
        np.testing.assert_array_equal(
            sets.keypoints_of(t)[:, 2], written[name][dataset]
        )
        assert written[name][dataset].dtype == (np.float16 if as_half else np.float32)


@pytest.mark.parametrize("extractor", ["aliked", "disk", "dog", "superpoint"])
def test_verification_keeps_each_extractor_s_strongest_keypoints(tmp_path, extractor):
    """Two views of one scene whose 40 matching keypoints are the strongest of
    each image but come after 40 weak, unrelated ones in the file: matching
    the 40 strongest verifies the pair; the first 40 in the file's order (what
    is read without the strengths) would not."""
    from vlad.verification._spatial import count_inliers

    rng = np.random.default_rng(3)
    shared = rng.normal(size=(128, 40)).astype(np.float32)
    positions = rng.uniform(0, 600, (40, 2)).astype(np.float32)
    views = {
        "a.jpg": (positions, shared),
        "b.jpg": (
            positions * 0.9 + 20,
            shared + 0.02 * rng.normal(size=shared.shape).astype(np.float32),
        ),
    }
    path = tmp_path / f"feats-{extractor}.h5"
    for name, (strong_positions, strong) in views.items():
        weak = rng.normal(size=(128, 40)).astype(np.float32)
        pred = extractor_predictions(
            extractor,
            np.vstack([rng.uniform(0, 600, (40, 2)), strong_positions]).astype(
                np.float32
            ),
            np.hstack([weak, strong]),
            np.concatenate([rng.uniform(0, 1, 40), rng.uniform(2, 3, 40)]).astype(
                np.float32
            ),
        )
        hloc_write_local(path, name, pred, as_half=True)
    sets = read_descriptor_file(path)
    found = count_inliers(
        sets.keypoints_of(0),
        sets[0],
        sets.keypoints_of(1),
        sets[1],
        verify_keypoints=40,
    )
    assert found >= 30
    in_file_order = [sets.keypoints_of(t).copy() for t in (0, 1)]
    for keypoints in in_file_order:
        keypoints[:, 2] = 0
    unordered = count_inliers(
        in_file_order[0], sets[0], in_file_order[1], sets[1], verify_keypoints=40
    )
    assert unordered < 12


def test_lazy_reading_gives_the_same_sets_chunk_after_chunk(features, monkeypatch):
    monkeypatch.setattr(hloc, "CHUNK_IMAGES", 2)
    lazy = read_descriptor_file(features, lazy=True)
    expected = reference_sets(features)
    assert isinstance(lazy, hloc.HlocLocalFeatures)
    assert len(lazy) == len(expected) and lazy.names == expected.names
    np.testing.assert_array_equal(lazy.lengths, expected.lengths)
    for t in [4, 0, 3, 1, 2]:  # out of order: chunks are read again
        np.testing.assert_array_equal(lazy[t], expected[t])
        np.testing.assert_array_equal(lazy.keypoints_of(t), expected.keypoints_of(t))
    part = lazy.between(1, 4)
    assert part.names == expected.names[1:4]
    np.testing.assert_array_equal(part.descriptors, expected.between(1, 4).descriptors)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    st.dictionaries(
        st.lists(
            st.text(st.sampled_from("ab .é"), min_size=1, max_size=3).filter(
                lambda part: part not in (".", "..")
            ),
            min_size=1,
            max_size=3,
        ).map("/".join),
        st.integers(0, 4),
        min_size=1,
        max_size=5,
    )
)
def test_any_names_and_lengths_read_back(tmp_path_factory, lengths):
    # A name that is a folder of another ("a" and "a/b") cannot come from hloc.
    assume(
        all(not other.startswith(name + "/") for name in lengths for other in lengths)
    )
    path = tmp_path_factory.mktemp("any") / "feats.h5"
    rng = np.random.default_rng(0)
    for name, length in lengths.items():
        hloc_write_local(path, name, predictions(rng, length, 3), as_half=False)
    sets = read_descriptor_file(path)
    assert sets.names == sorted(lengths)
    assert sets.lengths.tolist() == [lengths[name] for name in sorted(lengths)]
    np.testing.assert_array_equal(sets.descriptors, reference_sets(path).descriptors)


def test_fit_and_encode_match_the_same_descriptors_in_memory(features, tmp_path):
    expected = reference_sets(features)
    codebook, _ = vlad.fit_codebook_to_images(features, 4, n_jobs=1)
    reference = vlad.fit_codebook(expected, 4, n_jobs=1)
    np.testing.assert_allclose(codebook.centers, reference.centers, atol=1e-6)
    assert codebook.metadata["descriptor"]["extractor"] == "hloc"
    encoded = vlad.encode_images(features, codebook, n_jobs=1)
    assert encoded.names == expected.names
    np.testing.assert_allclose(
        encoded.vectors, vlad.encode(expected, codebook, n_jobs=1), atol=1e-6
    )


def test_an_asmk_index_of_local_features_matches_the_same_sets_in_memory(
    features, monkeypatch
):
    """An ASMK index reads hloc's local features a part at a time (parts of
    two images here) and scores as an index of the same sets in memory."""
    from vlad.asmk import _build as asmk
    from vlad.asmk import _parts as asmk_parts

    monkeypatch.setattr(asmk_parts, "_PART_IMAGES", 2)
    expected = reference_sets(features)
    codebook = vlad.fit_codebook(expected, 8, n_jobs=1)
    from_file = asmk.build_asmk_index(
        hloc.open_local_features(features), codebook, binary=False
    )
    in_memory = asmk.build_asmk_index(expected, codebook, binary=False)
    assert from_file.names == in_memory.names == expected.names
    found, reference = from_file.search(expected, 3), in_memory.search(expected, 3)
    assert found.rankings() == reference.rankings()
    for ours, theirs in zip(found, reference, strict=True):
        np.testing.assert_allclose(ours.scores, theirs.scores, rtol=1e-6)


def test_a_codebook_of_another_dimension_or_kind_is_refused(features, tmp_path):
    other = tmp_path / "feats-disk.h5"
    write_local_features(other, NAMES[:2], n_features=32)
    codebook, _ = vlad.fit_codebook_to_images(other, 2, n_jobs=1)
    with pytest.raises(ValueError, match="features") as raised:
        vlad.encode_images(features, codebook, n_jobs=1)
    assert "\n" not in str(raised.value)
    with pytest.raises(ValueError, match="give hloc's local features, an .h5"):
        vlad.encode_images(DATA, codebook, n_jobs=1)
    sift = tmp_path / "feats-sift.h5"
    write_local_features(sift, NAMES[:2], n_features=128)
    sift_codebook, _ = vlad.fit_codebook_to_images(
        DATA, 2, descriptor_options={"max_keypoints": 50}, n_jobs=1
    )
    with pytest.raises(
        ValueError, match="'opencv-sift' descriptors but these are"
    ) as raised:
        vlad.encode_images(sift, sift_codebook, n_jobs=1)
    assert "\n" not in str(raised.value)


def global_features_as_hloc_writes(path, vectors, names, as_half=True):
    """extract_features.main with a global extractor (NetVLAD): a group per
    image with global_descriptor (D,) and image_size."""
    for vector, name in zip(vectors, names, strict=True):
        pred = {
            "global_descriptor": vector.astype(np.float32),
            "image_size": np.array([640, 480]),
        }
        hloc_write_local(path, name, pred, as_half)


def test_global_features_written_are_what_hloc_reads(tmp_path):
    vectors = np.random.default_rng(1).normal(size=(len(NAMES), 6)).astype(np.float32)
    path = tmp_path / "global-feats-vlad.h5"
    write_global_features(path, vectors, NAMES, {"codebook": {"n": 1}})
    assert sorted(hloc_list_h5_names(path)) == sorted(NAMES)
    np.testing.assert_array_equal(hloc_get_descriptors(NAMES, path), vectors)
    read, names, record = read_global_features(path)
    order = [NAMES.index(name) for name in names]
    assert names == sorted(NAMES)
    np.testing.assert_array_equal(read, vectors[order])
    assert record == {"codebook": {"n": 1}}
    assert vlad.load_vectors(path)[1] == names
    with pytest.raises(FileExistsError):
        write_global_features(path, vectors, NAMES, overwrite=False)
    assert [p.name for p in tmp_path.iterdir()] == ["global-feats-vlad.h5"]


def test_global_features_of_hloc_read_as_vectors(tmp_path):
    vectors = np.random.default_rng(2).normal(size=(3, 8)).astype(np.float32)
    path = tmp_path / "global-feats-netvlad.h5"
    global_features_as_hloc_writes(path, vectors, ["b/1.jpg", "a.jpg", "c d.jpg"])
    read, names, record = read_global_features(path)
    assert names == ["a.jpg", "b/1.jpg", "c d.jpg"] and record is None
    np.testing.assert_array_equal(read, vectors[[1, 0, 2]].astype(np.float16))
    assert read.dtype == np.float32
    assert hloc.hloc_file_kind(path) == "global"


@pytest.mark.parametrize(
    "names, message",
    [
        (["/abs.jpg"], "relative path"),
        (["a//b.jpg"], "relative path"),
        (["a/./b.jpg"], "relative path"),
        ([""], "relative path"),
        (["a/"], "relative path"),
        (["caf\udce9.jpg"], "UTF-8"),
        (["a.jpg", "a.jpg"], "distinct"),
        (["a.jpg", "a.jpg/global_descriptor"], "cannot be an hloc group"),
    ],
)
def test_names_hloc_cannot_hold_are_refused(tmp_path, names, message):
    path = tmp_path / "g.h5"
    with pytest.raises(ValueError, match=message) as raised:
        write_global_features(path, np.ones((len(names), 2)), names)
    assert "\n" not in str(raised.value)
    assert not path.exists()


def layout(path, name, **datasets):
    with h5py.File(path, "a") as file:
        group = file.create_group(name)
        for key, value in datasets.items():
            group[key] = value


@pytest.mark.parametrize(
    "make, message",
    [
        (
            lambda p: layout(
                p, "a.jpg", keypoints=np.ones((5, 2)), descriptors=np.ones((5, 64))
            ),
            r"shape \(5, 64\) for 5 keypoints; expected \(D, 5\), one column per "
            r"keypoint \(hloc stores them transposed\)",
        ),
        (
            lambda p: layout(p, "a.jpg", descriptors=np.ones((64, 5))),
            "'a.jpg' has descriptors but no 'keypoints' dataset",
        ),
        (
            lambda p: layout(
                p, "a.jpg", keypoints=np.ones((5, 3)), descriptors=np.ones((64, 5))
            ),
            r"keypoints of shape \(5, 3\); expected \(N, 2\)",
        ),
        (
            lambda p: layout(
                p,
                "a.jpg",
                keypoints=np.ones((5, 2)),
                descriptors=np.array([["x"] * 5] * 2, dtype="S1"),
            ),
            "descriptors of dtype",
        ),
        (
            lambda p: (
                layout(
                    p, "a.jpg", keypoints=np.ones((5, 2)), descriptors=np.ones((64, 5))
                ),
                layout(
                    p, "b.jpg", keypoints=np.ones((5, 2)), descriptors=np.ones((32, 5))
                ),
            ),
            "'b.jpg' have 32 dimensions but those of 'a.jpg' have 64",
        ),
        (
            lambda p: layout(p, "a.jpg", global_descriptor=np.ones(8)),
            "holds hloc's global features",
        ),
        (
            lambda p: layout(p, "a.jpg", other=np.ones(8)),
            "holds no hloc local features",
        ),
        (
            lambda p: h5py.File(p, "w").create_dataset("descriptors", data=[[1.0]]),
            "outside any image's group",
        ),
        (lambda p: p.write_bytes(b"not HDF5 at all"), "is not a readable HDF5 file"),
        (
            lambda p: layout(
                p,
                "a.jpg",
                keypoints=np.ones((5, 2)),
                descriptors=np.ones((64, 5)),
                scores=np.ones(4),
            ),
            r"scores of shape \(4,\) for 5 keypoints; expected \(5,\), one per "
            r"keypoint",
        ),
        (
            lambda p: layout(
                p,
                "a.jpg",
                keypoints=np.ones((5, 2)),
                descriptors=np.ones((64, 5)),
                scores=np.ones(5, dtype=bool),
            ),
            "'a.jpg' has scores of dtype bool; expected real numbers",
        ),
        (
            lambda p: (
                layout(
                    p, "a.jpg", keypoints=np.ones((5, 2)), descriptors=np.ones((64, 5))
                ),
                h5py.File(p, "a").create_group("a.jpg/scores"),
            ),
            "'a.jpg' has a group named 'scores', not a dataset",
        ),
        (
            lambda p: layout(
                p,
                "a.jpg",
                keypoints=np.ones((5, 2)),
                descriptors=np.ones((64, 5)),
                keypoint_scores=np.ones(6),
            ),
            r"'a.jpg' has keypoint_scores of shape \(6,\) for 5 keypoints",
        ),
    ],
    ids=[
        "not transposed",
        "no keypoints",
        "keypoints not (N, 2)",
        "not numbers",
        "two dimensions",
        "global features",
        "no features",
        "outside a group",
        "not HDF5",
        "scores not per keypoint",
        "scores not numbers",
        "scores a group",
        "keypoint_scores not per keypoint",
    ],
)
def test_wrongly_laid_out_files_are_refused_in_one_line(tmp_path, make, message):
    path = tmp_path / "feats.h5"
    make(path)
    with pytest.raises(ValueError, match=message) as raised:
        read_descriptor_file(path)
    assert "\n" not in str(raised.value)
    assert str(path) in str(raised.value)


def test_a_truncated_file_is_refused_in_one_line(features):
    data = features.read_bytes()
    for size in (len(data) // 2, 100, 0):
        features.write_bytes(data[:size])
        for read in (read_descriptor_file, read_global_features):
            with pytest.raises(ValueError, match="not a readable HDF5 file") as raised:
                read(features)
            assert "\n" not in str(raised.value)


def test_local_features_are_not_vectors(features):
    with pytest.raises(ValueError, match="holds hloc's local features, not global"):
        vlad.load_vectors(features)


def test_without_h5py_the_error_says_what_to_install(features, monkeypatch):
    monkeypatch.setitem(sys.modules, "h5py", None)
    for call in (
        lambda: read_descriptor_file(features),
        lambda: write_global_features(features, np.ones((1, 2)), ["a"]),
    ):
        with pytest.raises(ImportError, match=re.escape(install_command("hloc"))):
            call()


def test_fit_encode_index_search_from_the_command_line(tmp_path):
    """The round trip of docs/hloc.md: each file read as hloc and COLMAP read
    them, the pairs checked against a brute-force search of hloc's reading."""
    names = [name for name in NAMES if " " not in name]
    features = tmp_path / "feats-superpoint.h5"
    write_local_features(features, names)
    runner = CliRunner()
    paths = {key: str(tmp_path / key) for key in ("codebook.npz", "index")}
    global_feats, pairs = tmp_path / "global-feats-vlad.h5", tmp_path / "pairs.txt"
    commands = [
        ["fit", str(features), "--n-clusters", "4", "-o", paths["codebook.npz"]],
        ["encode", str(features), "-c", paths["codebook.npz"], "-o", str(global_feats)],
        ["index", str(global_feats), "-o", paths["index"]],
        ["search", paths["index"], str(global_feats), "--top", "2", "-o", str(pairs)],
    ]
    for command in commands:
        result = runner.invoke(cli, command)
        assert result.exit_code == 0, result.output
    vectors = hloc_get_descriptors(names, global_feats)
    scores = vectors @ vectors.T
    expected = {
        query: [names[j] for j in np.argsort(-scores[i], kind="stable")[:2]]
        for i, query in enumerate(names)
    }
    assert hloc_parse_retrieval(pairs) == expected
    assert colmap_read_pairs(pairs) == [
        (query, name) for query in sorted(names) for name in expected[query]
    ]
    # Queries given as local features are encoded with the codebook and find
    # the same; spatial verification reads the database's .h5 too.
    spatial = tmp_path / "spatial.txt"
    result = runner.invoke(
        cli,
        [
            "search",
            paths["index"],
            str(features),
            "-c",
            paths["codebook.npz"],
            "--top",
            "2",
            "--rerank",
            "spatial",
            "--database-descriptors",
            str(features),
            "-o",
            str(spatial),
        ],
    )
    assert result.exit_code == 0, result.output
    assert {q: sorted(r) for q, r in hloc_parse_retrieval(spatial).items()} == {
        q: sorted(r) for q, r in expected.items()
    }
    # The record kept in the .h5 refuses vectors of another codebook.
    other, other_feats = str(tmp_path / "other.npz"), str(tmp_path / "other.h5")
    for command in (
        ["fit", str(features), "--n-clusters", "3", "-o", other],
        ["encode", str(features), "-c", other, "-o", other_feats],
    ):
        assert runner.invoke(cli, command).exit_code == 0
    result = runner.invoke(cli, ["search", paths["index"], other_feats])
    assert result.exit_code == 1
    assert "made with codebook" in result.output


def test_encode_refuses_global_features_as_input(tmp_path, features):
    codebook = tmp_path / "codebook.npz"
    vlad.fit_codebook_to_images(features, 2, n_jobs=1)[0].save(codebook)
    global_feats = tmp_path / "g.h5"
    write_global_features(global_feats, np.ones((1, 2)), ["a.jpg"])
    result = CliRunner().invoke(
        cli, ["encode", str(global_feats), "-c", str(codebook), "-o", "v.npy"]
    )
    assert result.exit_code == 1
    assert "holds hloc's global features" in result.output
    assert os.linesep not in result.output.strip()


def test_info_describes_both_kinds_of_file(features, tmp_path):
    from vlad._info import describe_file

    local = describe_file(features)
    expected = reference_sets(features)
    assert local["kind"] == "descriptor sets"
    assert local["format"] == "hloc local features"
    assert local["n_images"] == len(NAMES)
    assert local["n_descriptors"] == expected.descriptors.shape[0]
    assert local["descriptors_per_image"]["max"] == expected.lengths.max()
    global_feats = tmp_path / "global-feats.h5"
    vectors = np.vstack([np.ones((2, 3)), np.zeros((1, 3))])
    write_global_features(global_feats, vectors, ["a", "b", "c"], {"inputs": ["x"]})
    summary = describe_file(global_feats)
    assert (summary["kind"], summary["n_images"], summary["n_dimensions"]) == (
        "vectors",
        3,
        3,
    )
    assert summary["n_zero_rows"] == 1 and summary["inputs"] == ["x"]


@pytest.mark.parametrize(
    ("dataset", "index", "what"),
    [("descriptors", (3, 2), "descriptors"), ("scores", 1, "scores")],
)
def test_nan_descriptors_or_scores_are_refused_in_one_line(
    tmp_path, dataset, index, what
):
    path = tmp_path / "feats.h5"
    pred = predictions(np.random.default_rng(0), 4)
    pred[dataset][index] = np.nan
    hloc_write_local(path, "a.jpg", pred)
    with pytest.raises(ValueError, match=f"NaN or infinite {what} ") as raised:
        read_descriptor_file(path)
    assert "\n" not in str(raised.value)


@pytest.mark.parametrize("reader", ["local", "global"])
def test_damaged_bytes_give_features_or_a_one_line_error(tmp_path, reader):
    """Garbage written over any part of a file: it reads (the garbage fell in
    the data) or is refused with a ValueError naming it; nothing else."""
    path = tmp_path / "feats.h5"
    if reader == "local":
        write_local_features(path, NAMES[:3])
        read = read_descriptor_file
    else:
        write_global_features(path, np.ones((3, 4)), NAMES[:3], {"a": 1})
        read = read_global_features
    data = path.read_bytes()
    rng = np.random.default_rng(0)
    outcomes = set()
    for offset in range(0, len(data), max(1, len(data) // 60)):
        damaged = bytearray(data)
        size = len(damaged[offset : offset + 16])
        damaged[offset : offset + size] = rng.bytes(size)
        path.write_bytes(bytes(damaged))
        try:
            read(path)
            outcomes.add("read")
        except ValueError as error:
            assert "\n" not in str(error) and str(path) in str(error), str(error)
            outcomes.add("refused")
    assert "refused" in outcomes


def test_colmap_s_own_reader_imports_every_pair(tmp_path):
    """COLMAP's matches_importer parser (pycolmap's ImportedPairGenerator)
    finds every image of a pairs file vlad wrote; each unordered pair once."""
    pycolmap = pytest.importorskip("pycolmap")
    from vlad.search import build_index

    names = ["db/0001.jpg", "db/0002.jpg", "query/q1.jpg", "café/日本.png"]
    vectors = np.random.default_rng(3).normal(size=(len(names), 8))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    pairs = tmp_path / "pairs.txt"
    build_index(vectors, names).search(vectors, k=3, query_names=names).write(pairs)
    database = pycolmap.Database.open(str(tmp_path / "colmap.db"))
    camera = pycolmap.Camera(
        model="SIMPLE_PINHOLE", width=640, height=480, params=[500, 320, 240]
    )
    camera_id = database.write_camera(camera)
    image_names = {
        database.write_image(pycolmap.Image(name=name, camera_id=camera_id)): name
        for name in names
    }
    options = pycolmap.ImportedPairingOptions()
    options.match_list_path = str(pairs)
    generator = pycolmap.ImportedPairGenerator(options, database)
    imported = [(image_names[a], image_names[b]) for a, b in generator.all_pairs()]
    written = [tuple(line.split(" ")) for line in pairs.read_text().splitlines()]
    assert {frozenset(pair) for pair in imported} == {
        frozenset(pair) for pair in written
    }
    assert len(imported) == len({frozenset(pair) for pair in written})


# About a second: SIFT of two photos and their matching, by COLMAP.
@pytest.mark.slow
def test_colmap_imports_an_image_with_itself_but_matches_nothing(tmp_path):
    """What docs/hloc.md says of the pairs of an image with itself that a
    pairs file of ``vlad search`` lists: COLMAP's importer gives them, its
    matcher writes nothing for them."""
    pycolmap = pytest.importorskip("pycolmap")
    from vlad.search import build_index

    names = ["chelsea.jpg", "coffee.jpg"]
    vectors = np.random.default_rng(0).normal(size=(2, 8))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    pairs = tmp_path / "pairs.txt"
    build_index(vectors, names).search(vectors, k=2, query_names=names).write(pairs)
    assert {line for line in pairs.read_text().splitlines()} >= {
        "chelsea.jpg chelsea.jpg",
        "coffee.jpg coffee.jpg",
    }
    path = str(tmp_path / "colmap.db")
    pycolmap.extract_features(
        path, str(DATA), image_names=names, device=pycolmap.Device.cpu
    )
    options = pycolmap.ImportedPairingOptions()
    options.match_list_path = str(pairs)
    database = pycolmap.Database.open(path)
    ids = {image.name: image.image_id for image in database.read_all_images()}
    generator = pycolmap.ImportedPairGenerator(options, database)
    imported = {tuple(pair) for pair in generator.all_pairs()}
    assert {(ids[name], ids[name]) for name in names} <= imported
    database.close()
    pycolmap.match_image_pairs(
        path, pairing_options=options, device=pycolmap.Device.cpu
    )
    database = pycolmap.Database.open(path)
    for name in names:
        assert not database.exists_matches(ids[name], ids[name])
        assert not database.exists_two_view_geometry(ids[name], ids[name])
    first, second = (ids[name] for name in names)
    assert database.exists_matches(first, second)
    assert database.exists_two_view_geometry(first, second)
    database.close()
