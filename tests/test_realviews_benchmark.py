"""The real-view benchmark: its builder (a tiny manifest over a git repository
and a Debian package made here), its leave-one-out scoring, its aggregation
per tier and per family, its runner and its page."""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import inspect
import json
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import vlad
from benchmarks.commands import portable_commands
from benchmarks.realviews.build import (
    build_dataset,
    find_git_dir,
    ground_truth,
    main,
    read_deb_files,
)
from benchmarks.realviews.page import merge_records, render_page
from benchmarks.realviews.run import (
    LIBRARY_MATCHING,
    VARIANTS,
    Prepared,
    Variant,
    index_asmk,
    prepare,
    run_variant,
    search_asmk,
    search_asmk_expanded,
    search_index,
    verification_settings,
    vocabulary_name,
)
from benchmarks.realviews.run import main as run_main
from benchmarks.report import machine_info
from vlad.evaluation import evaluate, step_average_precision_of_ranks
from vlad.verification import VERIFICATION_PRESETS, rerank_spatially, spatial_rerank

#: The benchmarks' own tests: a CI step of their own, not the default run.
pytestmark = pytest.mark.benchmarks

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def git(folder: Path, *arguments: str) -> str:
    completed = subprocess.run(
        ["git", "-C", str(folder), *arguments],
        capture_output=True,
        text=True,
        check=True,
        env={
            "GIT_AUTHOR_NAME": "a",
            "GIT_AUTHOR_EMAIL": "a@example.org",
            "GIT_COMMITTER_NAME": "a",
            "GIT_COMMITTER_EMAIL": "a@example.org",
            "GIT_CONFIG_GLOBAL": "/dev/null",
            "HOME": str(folder),
            "PATH": "/usr/bin:/bin:/usr/local/bin",
        },
    )
    return completed.stdout.strip()


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# Pinned files and what a later commit changes.
PINNED = {"a/1.jpg": b"scene one, first view", "a/2.jpg": b"scene one, second"}
LATER = {"a/1.jpg": b"rewritten later", "b/3.png": b"scene two", "b/4.png": b"two"}


@pytest.fixture
def repository(tmp_path):
    """``tmp_path/repos/owner/name``: a clone with two commits; the first's id."""
    folder = tmp_path / "repos" / "owner" / "name"
    folder.mkdir(parents=True)
    git(folder, "init", "-q")
    for path, data in PINNED.items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_bytes(data)
    git(folder, "add", ".")
    git(folder, "commit", "-q", "-m", "first")
    pinned = git(folder, "rev-parse", "HEAD")
    for path, data in LATER.items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_bytes(data)
    git(folder, "add", ".")
    git(folder, "commit", "-q", "-m", "second")
    return folder, pinned


def make_manifest(path: Path, commit: str, images: list[dict]) -> Path:
    manifest = {
        "format": "real-view retrieval manifest",
        "version": 1,
        "sources": {
            "repo": {
                "kind": "git",
                "repo": "owner/name",
                "commit": commit,
                "licence": "test",
            },
        },
        "scenes": {
            "one": {"family": "walkaround", "tier": "standard", "what_changes": "v"},
            "two": {"family": "planar", "tier": "extreme", "what_changes": "w"},
        },
        "images": images,
    }
    path.write_text(json.dumps(manifest))
    return path


def image(name, path, data, scene):
    return {
        "name": f"images/{name}",
        "source": "repo",
        "path": path,
        "sha256": sha256(data),
        "scene": scene,
    }


def tiny_images():
    return [
        image("0000.jpg", "a/1.jpg", PINNED["a/1.jpg"], "one"),  # pinned, not HEAD
        image("0001.png", "b/3.png", LATER["b/3.png"], "two"),  # HEAD only
        image("0002.jpg", "a/2.jpg", PINNED["a/2.jpg"], "one"),
        image("0003.png", "b/4.png", LATER["b/4.png"], "two"),
        image("0004.png", "b/4.png", LATER["b/4.png"], None),  # a distractor
    ]


@needs_git
def test_build_writes_the_pinned_bytes_and_the_leave_one_out_truth(
    tmp_path, repository
):
    _, pinned = repository
    manifest = make_manifest(tmp_path / "manifest.json", pinned, tiny_images())
    out = tmp_path / "bench"
    record = build_dataset(out, repos=tmp_path / "repos", manifest=manifest)
    assert (out / "images/0000.jpg").read_bytes() == PINNED["a/1.jpg"]
    assert (out / "images/0003.png").read_bytes() == LATER["b/4.png"]
    assert sorted(p.name for p in (out / "images").iterdir()) == [
        "0000.jpg",
        "0001.png",
        "0002.jpg",
        "0003.png",
        "0004.png",
    ]
    truth = json.loads((out / "ground_truth.json").read_text())
    assert truth == {
        "0000.jpg": {
            "relevant": ["0002.jpg"],
            "junk": ["0000.jpg"],
            "tags": ["walkaround", "standard"],
        },
        "0001.png": {
            "relevant": ["0003.png"],
            "junk": ["0001.png"],
            "tags": ["planar", "extreme"],
        },
        "0002.jpg": {
            "relevant": ["0000.jpg"],
            "junk": ["0002.jpg"],
            "tags": ["walkaround", "standard"],
        },
        "0003.png": {
            "relevant": ["0001.png"],
            "junk": ["0003.png"],
            "tags": ["planar", "extreme"],
        },
    }
    vlad.evaluation.load_ground_truth(out / "ground_truth.json")
    assert record["counts"] == {
        "images": 5,
        "scene_images": 4,
        "distractors": 1,
        "scenes": 2,
        "queries": 4,
        "queries_by_family": {"planar": 2, "walkaround": 2},
        "queries_by_tier": {"extreme": 2, "standard": 2},
    }
    assert record["sources"]["repo"]["read_at_head"] == 3  # 0001, 0003, 0004
    assert json.loads((out / "dataset.json").read_text()) == record
    assert not [path for path in tmp_path.iterdir() if ".partial" in path.name]


@needs_git
def test_an_absent_commit_falls_back_to_head_and_the_sha256_decides(
    tmp_path, repository
):
    images = [
        image("0000.jpg", "a/2.jpg", PINNED["a/2.jpg"], "one"),  # same at HEAD
        image("0001.jpg", "a/1.jpg", LATER["a/1.jpg"], "one"),
    ]
    manifest = make_manifest(tmp_path / "manifest.json", "0" * 40, images)
    record = build_dataset(
        tmp_path / "out", repos=tmp_path / "repos", manifest=manifest
    )
    assert record["sources"]["repo"]["read_at_head"] == 2
    assert (tmp_path / "out/images/0001.jpg").read_bytes() == LATER["a/1.jpg"]


@needs_git
def test_a_sha256_mismatch_is_one_line_naming_the_file(tmp_path, repository, capsys):
    _, pinned = repository
    images = tiny_images()
    images[2]["sha256"] = sha256(b"something else")
    manifest = make_manifest(tmp_path / "manifest.json", pinned, images)
    out = tmp_path / "bench"
    with pytest.raises(ValueError, match=r"^images/0002.jpg \(repo: a/2.jpg\) has "):
        build_dataset(out, repos=tmp_path / "repos", manifest=manifest)
    arguments = [
        str(out),
        "--repos",
        str(tmp_path / "repos"),
        "--manifest",
        str(manifest),
    ]
    assert main(arguments) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "images/0002.jpg" in error
    assert not out.exists()
    assert not [path for path in tmp_path.iterdir() if ".partial" in path.name]


@needs_git
def test_a_file_missing_from_its_source_is_named(tmp_path, repository):
    _, pinned = repository
    images = [*tiny_images(), image("0005.jpg", "c/gone.jpg", b"x", None)]
    manifest = make_manifest(tmp_path / "manifest.json", pinned, images)
    with pytest.raises(
        ValueError,
        match=r"^images/0005.jpg \(repo: c/gone.jpg\) is "
        "missing from its source$",
    ):
        build_dataset(tmp_path / "out", repos=tmp_path / "repos", manifest=manifest)


@needs_git
def test_an_existing_folder_is_kept_without_overwrite(tmp_path, repository):
    _, pinned = repository
    manifest = make_manifest(tmp_path / "manifest.json", pinned, tiny_images())
    out = tmp_path / "bench"
    out.mkdir()
    with pytest.raises(FileExistsError, match="--overwrite"):
        build_dataset(out, repos=tmp_path / "repos", manifest=manifest)
    build_dataset(out, repos=tmp_path / "repos", manifest=manifest, overwrite=True)
    assert (out / "images/0000.jpg").is_file()


@needs_git
def test_repositories_are_found_in_every_layout(tmp_path, repository):
    clone, _ = repository
    repos = tmp_path / "layouts"
    repos.mkdir()
    assert find_git_dir(tmp_path / "repos", "owner/name") == clone / ".git"
    subprocess.run(
        [
            "git",
            "clone",
            "-q",
            "--bare",
            str(clone),
            str(repos / "owner+name" / "repo"),
        ],
        check=True,
    )
    assert find_git_dir(repos, "owner/name") == repos / "owner+name" / "repo"
    shutil.move(repos / "owner+name" / "repo", repos / "name")
    assert find_git_dir(repos, "owner/name") == repos / "name"
    with pytest.raises(
        FileNotFoundError, match="no copy of owner/other in .*git clone"
    ):
        find_git_dir(repos, "owner/other")


@pytest.mark.skipif(shutil.which("dpkg-deb") is None, reason="needs dpkg-deb")
def test_a_debian_package_is_read_and_checked(tmp_path):
    root = tmp_path / "package"
    (root / "DEBIAN").mkdir(parents=True)
    (root / "DEBIAN/control").write_text(
        "Package: photos\nVersion: 1.0-1\nArchitecture: all\n"
        "Maintainer: a <a@example.org>\nDescription: test\n"
    )
    photo = root / "usr/share/photos/p.jpg"
    photo.parent.mkdir(parents=True)
    photo.write_bytes(b"a photograph")
    debs = tmp_path / "debs"
    debs.mkdir()
    deb = debs / "photos_1.0-1_all.deb"
    subprocess.run(
        ["dpkg-deb", "--root-owner-group", "-b", str(root), str(deb)],
        check=True,
        capture_output=True,
    )
    path = "./usr/share/photos/p.jpg"
    assert read_deb_files(deb, [path, "./usr/none"]) == {path: b"a photograph"}
    manifest = {
        "format": "real-view retrieval manifest",
        "version": 1,
        "sources": {
            "d": {
                "kind": "deb",
                "package": "photos",
                "version": "1.0-1",
                "licence": "test",
            }
        },
        "scenes": {"s": {"family": "planar", "tier": "standard"}},
        "images": [
            {
                "name": "images/0.jpg",
                "source": "d",
                "path": path,
                "sha256": sha256(b"a photograph"),
                "scene": "s",
            }
        ],
    }
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    record = build_dataset(
        tmp_path / "out", debs=debs, manifest=tmp_path / "manifest.json"
    )
    assert (tmp_path / "out/images/0.jpg").read_bytes() == b"a photograph"
    assert record["counts"]["queries"] == 1


# Scoring: leave-one-out on hand-made rankings.

SCENES = {
    "s": {"family": "walkaround", "tier": "standard"},
    "t": {"family": "planar", "tier": "extreme"},
}
MEMBERS = {"a": "s", "b": "s", "c": "s", "d": "t", "e": "t", "x": None, "y": None}
MANIFEST = {
    "scenes": SCENES,
    "images": [{"name": f"images/{n}", "scene": s} for n, s in MEMBERS.items()],
}


def test_the_query_itself_does_not_count_wherever_it_is():
    truth = ground_truth(MANIFEST)
    # a: relevant b and c. Its own place changes nothing; with it taken out,
    # b is at place 2 and c at 3 (from 1).
    rankings = {
        "a": ["a", "x", "b", "c", "d", "e", "y"],
        "b": ["x", "b", "a", "y", "c", "d", "e"],
        "c": ["y", "x", "d", "e", "a", "b", "c"],
        "d": ["d", "e", "a", "b", "c", "x", "y"],
        "e": ["a", "b", "c", "x", "y", "d", "e"],
    }
    evaluation = evaluate(rankings, truth, ks=(1, 5))
    scores = {query.query: query.scores for query in evaluation.queries}
    # revisitop's trapezoid: relevant j (from 0) at place r adds
    # (j / r + (j + 1) / (r + 1)) / 2, with j / r = 1 at r = 0.
    assert scores["a"]["AP"] == pytest.approx(((0 + 1 / 2) + (1 / 2 + 2 / 3)) / 4)
    assert scores["b"]["AP"] == pytest.approx(((0 + 1 / 2) + (1 / 3 + 2 / 4)) / 4)
    assert scores["c"]["AP"] == pytest.approx(((0 + 1 / 5) + (1 / 5 + 2 / 6)) / 4)
    assert scores["d"]["AP"] == 1.0
    assert scores["e"]["AP"] == pytest.approx((0 + 1 / 6) / 2)
    assert [scores[q]["recall@1"] for q in "abcde"] == [0, 0, 0, 1, 0]
    assert [scores[q]["recall@5"] for q in "abcde"] == [1, 1, 1, 1, 0]
    steps = {
        q.query: step_average_precision_of_ranks(list(q.ranks), q.n_relevant)
        for q in evaluation.queries
    }
    assert steps["a"] == pytest.approx((1 / 2 + 2 / 3) / 2)
    assert steps["c"] == pytest.approx((1 / 5 + 2 / 6) / 2)
    assert steps["e"] == pytest.approx(1 / 6)


def brute_force_step_ap(ranking, relevant, query):
    """Precision at each relevant image of the ranking without the query,
    averaged over all relevant images: a plain loop."""
    kept = [name for name in ranking if name != query]
    total, found = 0.0, 0
    for place, name in enumerate(kept, start=1):
        if name in relevant:
            found += 1
            total += found / place
    return total / len(relevant)


@given(st.permutations(list(MEMBERS)), st.sampled_from("abcde"))
def test_leave_one_out_scores_equal_a_plain_loop_without_the_query(order, query):
    truth = ground_truth(MANIFEST)
    relevant = set(truth[query]["relevant"])
    with_query = evaluate({query: list(order)}, {query: truth[query]})
    without = [name for name in order if name != query]
    no_query = evaluate({query: without}, {query: truth[query]})
    assert with_query.queries[0].scores == no_query.queries[0].scores
    evaluated = with_query.queries[0]
    assert step_average_precision_of_ranks(
        list(evaluated.ranks), evaluated.n_relevant
    ) == (pytest.approx(brute_force_step_ap(order, relevant, query)))
    first = next(i for i, name in enumerate(without) if name in relevant)
    assert evaluated.scores["recall@1"] == float(first < 1)
    assert evaluated.scores["recall@5"] == float(first < 5)


def test_per_tier_and_per_family_means_by_hand():
    truth = ground_truth(MANIFEST)
    rankings = {
        "a": ["b", "c", "a"],  # AP 1
        "b": ["x", "a", "c"],  # a at 2, c at 3: (1/2 + 2/3) / 2 step-wise
        "c": ["c", "y", "x", "a", "b"],  # a at 3, b at 4 (c removed)
        "d": ["e"],  # AP 1
        # e absent from the rankings: AP 0
    }
    evaluation = evaluate(rankings, truth, ks=(1, 5))
    trapezoid = {
        "a": 1.0,
        "b": ((0 + 1 / 2) + (1 / 2 + 2 / 3)) / 4,
        "c": ((0 + 1 / 3) + (1 / 3 + 2 / 4)) / 4,
        "d": 1.0,
        "e": 0.0,
    }
    steps = {
        "a": 1.0,
        "b": (1 / 2 + 2 / 3) / 2,
        "c": (1 / 3 + 2 / 4) / 2,
        "d": 1.0,
        "e": 0.0,
    }
    by_tag = evaluation.by_tag
    standard = ["a", "b", "c"]  # walkaround, standard
    extreme = ["d", "e"]  # planar, extreme
    for tags, queries in (
        (("standard", "walkaround"), standard),
        (("extreme", "planar"), extreme),
    ):
        for tag in tags:
            assert by_tag[tag]["n_queries"] == len(queries)
            assert by_tag[tag]["mAP"] == pytest.approx(
                sum(trapezoid[q] for q in queries) / len(queries)
            )
            assert evaluation.step_map["by_tag"][tag] == pytest.approx(
                sum(steps[q] for q in queries) / len(queries)
            )
    assert by_tag["standard"]["recall@1"] == pytest.approx(1 / 3)
    assert by_tag["extreme"]["recall@1"] == pytest.approx(1 / 2)
    assert evaluation.mean["mAP"] == pytest.approx(sum(trapezoid.values()) / 5)
    assert evaluation.step_map["mean"] == pytest.approx(sum(steps.values()) / 5)


# The runner: named variants on made-up descriptors.


@pytest.fixture(scope="module")
def prepared():
    rng = np.random.default_rng(0)
    names = [f"{n:02d}.jpg" for n in range(12)]
    arrays = [rng.random((60, 8), dtype=np.float32) for _ in names]
    keypoints = [rng.random((60, 4), dtype=np.float32) for _ in names]
    sets = vlad.DescriptorSets.from_list(arrays, names, keypoints=keypoints)
    manifest = {
        "scenes": SCENES,
        "images": [
            {"name": f"images/{n}", "scene": "st"[i % 2] if i < 6 else None}
            for i, n in enumerate(names)
        ],
    }
    truth = vlad.evaluation.ground_truth_from_mapping(ground_truth(manifest))
    return Prepared(sets, truth, list(truth), n_jobs=1)


@pytest.mark.parametrize("name", ["k64", "qe", "power-0.5"])
def test_a_variant_ranks_the_whole_database_for_every_query(prepared, name):
    row = run_variant(prepared, name)
    evaluation = row["evaluation"]
    assert evaluation["n_queries"] == 6 and not evaluation["missing_queries"]
    assert set(evaluation["by_tag"]) == {"standard", "extreme", "walkaround", "planar"}
    assert 0 <= evaluation["mean"]["mAP"] <= 1 and row["ms_per_query"] > 0
    rankings = VARIANTS[name].search(prepared, VARIANTS[name].setup(prepared))
    assert all(
        sorted(ranking) == prepared.descriptors.names for ranking in rankings.values()
    )


def test_a_new_variant_plugs_in_by_name(prepared, monkeypatch):
    # Each query ranks its scene's other image first, then the rest by name.
    def perfect(prepared, state):
        rankings = {}
        for query, truth in prepared.ground_truth.items():
            rest = [n for n in prepared.descriptors.names if n not in truth.relevant]
            rankings[query] = [*truth.relevant, *rest]
        return rankings

    monkeypatch.setitem(VARIANTS, "perfect", Variant("oracle", lambda p: None, perfect))
    row = run_variant(prepared, "perfect")
    assert row["evaluation"]["mean"]["mAP"] == 1.0
    assert row["step_map"]["mean"] == 1.0
    with pytest.raises(ValueError, match="Unknown variant 'nothing'; expected one of"):
        run_variant(prepared, "nothing")


def test_the_page_has_every_variant_tier_and_family(prepared):
    rows = [run_variant(prepared, name) for name in ("k64", "qe")]
    record = {
        "command": "python -m benchmarks.realviews.run DATASET",
        "machine": machine_info(),
        "dataset": None,
        "descriptors": {},
        "preparation_seconds": {"descriptors": 0.1},
        "variants": rows,
    }
    page = render_page(record, ["results.json"])
    assert "python -m benchmarks.realviews.run DATASET" in page
    assert "| ms/query | CPU ms/query |" in page
    assert "load average (1 minute) was" in page
    for text in (
        "`k64`",
        "`qe`",
        "standard (3) mAP",
        "extreme (3) R@5",
        "walkaround (3) mAP",
        "planar (3) R@1",
    ):
        assert text in page


def test_the_page_shows_no_folder_of_the_machine_that_ran(prepared, tmp_path):
    rows = [run_variant(prepared, "k64")]
    work = tmp_path / "scratch space"
    record = {
        "commands": [
            shlex.join(
                [
                    *("python", "-m", "benchmarks.realviews.run", str(work / "rv")),
                    *("--descriptors", str(work / "features/desc.npz")),
                    f"--json={work / 'a.json'}",
                ]
            ),
            shlex.join(
                ["python", "-m", "benchmarks.realviews.run", str(work / "rv")]
                + ["--json", "b.json"]
            ),
        ],
        "machine": machine_info(),
        "dataset": None,
        "descriptors": {},
        "preparation_seconds": {"descriptors": 0.1},
        "variants": rows,
    }
    page = render_page(record, [str(work / "a.json"), "b.json"])
    assert str(tmp_path) not in page and "/tmp" not in page
    assert (
        "python -m benchmarks.realviews.run DATA/rv --descriptors "
        "DATA/features/desc.npz --json=DATA/a.json\n"
        "python -m benchmarks.realviews.run DATA/rv --json b.json\n"
        "python -m benchmarks.realviews.page DATA/a.json b.json\n"
    ) in page
    assert "(`DATA/` stands for the folder that held the runs' files)" in page


@pytest.mark.parametrize(
    ("commands", "expected"),
    [
        # Nothing absolute: unchanged.
        (["run DATASET --json a.json"], ["run DATASET --json a.json"]),
        # One path: its folder is the root.
        (["run /x/y/rv"], ["run DATA/rv"]),
        # Quoted paths, paths in --option=PATH, one root for all commands.
        (
            ["run '/m n/rv' '--json=/m n/o/a.json'", "page /m/n/b.json"],
            ["run 'DATA/m n/rv' '--json=DATA/m n/o/a.json'", "page DATA/m/n/b.json"],
        ),
        # The same path reads the same everywhere; "/" alone is no path.
        (["a /r/s/t /r/s/t/u", "b /"], ["a DATA/t DATA/t/u", "b /"]),
    ],
)
def test_commands_show_absolute_paths_under_one_placeholder(commands, expected):
    assert portable_commands(commands) == expected


def two_image_folder(path):
    """A benchmark folder of two (empty) images, 0.jpg the query of 1.jpg."""
    (path / "images").mkdir()
    for name in ("0.jpg", "1.jpg"):
        (path / "images" / name).write_bytes(b"")
    (path / "ground_truth.json").write_text(
        json.dumps({"0.jpg": {"relevant": ["1.jpg"], "junk": ["0.jpg"]}})
    )


def test_descriptors_of_other_images_are_refused(tmp_path, capsys):
    two_image_folder(tmp_path)
    rng = np.random.default_rng(0)
    sets = vlad.DescriptorSets.from_list(
        [rng.random((3, 8)), rng.random((3, 8))],
        ["0.jpg", "2.jpg"],
        keypoints=[rng.random((3, 4)), rng.random((3, 4))],
    )
    sets.save(tmp_path / "descriptors.npz")
    arguments = [str(tmp_path), "--descriptors", str(tmp_path / "descriptors.npz")]
    assert run_main(arguments) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "'1.jpg' has none" in error


def test_hloc_local_features_are_read_as_the_descriptors(tmp_path):
    h5py = pytest.importorskip("h5py")
    two_image_folder(tmp_path)
    rng = np.random.default_rng(0)
    features = {
        name: (rng.random((5, 2)), rng.random((5, 8))) for name in ("1.jpg", "0.jpg")
    }
    with h5py.File(tmp_path / "feats-aliked.h5", "w") as file:
        for name, (keypoints, descriptors) in features.items():
            group = file.create_group(name)
            group["keypoints"] = keypoints.astype(np.float32)
            group["descriptors"] = descriptors.T.astype(np.float16)  # one column each
    prepared = prepare(
        tmp_path, tmp_path / "work", descriptors=tmp_path / "feats-aliked.h5"
    )
    sets = prepared.descriptors
    assert sets.names == ["0.jpg", "1.jpg"]
    assert sets.metadata["extractor"] == "hloc"
    assert not (tmp_path / "work").exists()  # nothing extracted
    for row, name in enumerate(sets.names):
        keypoints, descriptors = features[name]
        np.testing.assert_array_equal(
            sets[row], descriptors.astype(np.float16).astype(np.float32)
        )
        np.testing.assert_array_equal(
            sets.keypoints_of(row)[:, :2], keypoints.astype(np.float32)
        )
    assert prepared.queries == ["0.jpg"]


def test_runs_merge_into_one_page(prepared):
    first = {
        "command": "run A",
        "machine": {"cpu": "x"},
        "dataset": None,
        "n_images": 12,
        "n_queries": 6,
        "preparation_seconds": {},
        "variants": [run_variant(prepared, name) for name in ("k64", "qe")],
    }
    again = run_variant(prepared, "k64")
    again["description"] = "run again"
    first["machine"] = {"cpu": "x", "thread_pools": ["a", "b"]}
    second = first | {
        "command": "run B",
        "variants": [again],
        "machine": {"cpu": "x", "thread_pools": ["b", "a"]},
    }
    merged = merge_records([first, second], ["a.json", "b.json"])
    assert merged["commands"] == ["run A", "run B"]
    assert [row["variant"] for row in merged["variants"]] == ["k64", "qe"]
    assert merged["variants"][0]["description"] == "run again"
    assert merged["variants"][0]["command"] == "run B"
    assert merged["machines"] == [{"cpu": "x", "thread_pools": ["a", "b"]}]
    assert merge_records([merged], ["m.json"]) == merged
    other = second | {"n_queries": 5}
    with pytest.raises(ValueError, match="^b.json measures another folder than a"):
        merge_records([first, other], ["a.json", "b.json"])


def test_runs_on_other_descriptors_keep_their_variants_apart(prepared):
    rows = [run_variant(prepared, "k64")]
    plain = {
        "command": "run A",
        "machine": machine_info(),
        "dataset": None,
        "n_images": 12,
        "n_queries": 6,
        "preparation_seconds": {},
        "descriptors": {"max_side": 1024, "affine_tilts": 0, "max_keypoints": 2000},
        "variants": rows,
    }
    tilted = plain | {
        "command": "run B",
        "descriptors": {"max_side": 1024, "affine_tilts": 2, "max_keypoints": 4000},
    }
    merged = merge_records([plain, tilted], ["a.json", "b.json"])
    suffix = "affine_tilts 2, max_keypoints 4000"
    assert [row["variant"] for row in merged["variants"]] == ["k64", f"k64 ({suffix})"]
    assert merged["variants"][1]["description"].endswith(f"; descriptors with {suffix}")
    assert merged["variants"][1]["command"] == "run B"
    assert merged["descriptors"] == plain["descriptors"]
    assert merge_records([merged], ["m.json"]) == merged
    assert f"`k64 ({suffix})`" in render_page(merged)


@pytest.mark.parametrize(
    ("reverify", "verification"),
    [(False, {}), (True, {}), (True, {"matching": "mutual", "min_inliers": 30})],
)
def test_query_expansion_by_verified_images_is_a_plain_loop(
    prepared, reverify, verification
):
    # Images 0, 1 and 2 are one scene (moved, scaled and noisy copies), so
    # each verifies the others; the rest are unrelated.
    rng = np.random.default_rng(1)
    names = prepared.descriptors.names
    arrays = [rng.random((60, 8), dtype=np.float32) for _ in names]
    keypoints = [rng.random((60, 4), dtype=np.float32) * 500 for _ in names]
    for copy in (1, 2):
        arrays[copy] = arrays[0] + 0.01 * rng.random((60, 8), dtype=np.float32)
        keypoints[copy] = keypoints[0] * (1 + 0.1 * copy) + 3
    sets = vlad.DescriptorSets.from_list(arrays, names, keypoints=keypoints)
    scene = Prepared(
        sets,
        prepared.ground_truth,
        prepared.queries,
        n_jobs=1,
        asmk_words=8,
        verification=verification,
    )
    min_inliers = verification.get(
        "min_inliers", VERIFICATION_PRESETS["sift"].min_inliers
    )
    index = index_asmk(scene, binary=False)
    # ASMK of 8 words ranks these made-up images poorly: verify them all, or
    # (reverify) half of them and then the second search's next half.
    depth = 6 if reverify else len(names)
    rankings = search_asmk_expanded(scene, index, depth=depth, reverify=reverify)
    verified_others = 0
    for query in scene.queries:
        row = names.index(query)
        first = index.search([sets[row]], len(names)).queries[0].names
        ranking, inliers = spatial_rerank(
            sets.keypoints_of(row),
            sets[row],
            [names.index(name) for name in first],
            sets,
            depth=depth,
            **verification,
        )
        verified = [
            names[r] for r, n in zip(ranking, inliers, strict=True) if n >= min_inliers
        ]
        others = [names.index(name) for name in verified if name != query]
        expanded = np.concatenate([sets[row]] + [sets[r] for r in others[:10]])
        again = index.search([expanded], len(names)).queries[0].names
        if reverify:
            fresh = [name for name in again if name not in first[:depth]][:depth]
            ranking, inliers = spatial_rerank(
                sets.keypoints_of(row),
                sets[row],
                [names.index(name) for name in fresh],
                sets,
                **verification,
            )
            verified += [
                names[r]
                for r, n in zip(ranking, inliers, strict=True)
                if n >= min_inliers
            ]
        verified_others += len(verified) - (query in verified)
        expected = verified + [name for name in again if name not in verified]
        assert rankings[query] == expected
    assert verified_others >= 2


def test_verification_settings_reach_and_name_the_variants_that_use_them(prepared):
    settings = {"matching": "mutual", "min_inliers": 8, "verify_keypoints": 0}
    changed = dataclasses.replace(prepared, verification=settings)
    row = run_variant(changed, "spatial-20")
    assert row["variant"] == "spatial-20-mutual-min8-kpall"
    assert "but with matching mutual" in row["description"]
    indexed = VARIANTS["spatial-20"].setup(changed)
    # The settings reach the library: its own re-ranking, called with them.
    results = indexed.index.search(
        indexed.query_vectors, indexed.index.n_images, query_names=changed.queries
    )
    sets = changed.descriptors
    expected = rerank_spatially(results, sets, sets, depth=20, **settings).rankings()
    assert search_index(changed, indexed, depth=20) == expected
    assert search_index(prepared, indexed, depth=20) == (
        rerank_spatially(results, sets, sets, depth=20).rankings()
    )
    evaluation = evaluate(expected, prepared.ground_truth, ks=(1, 5, 10))
    assert row["evaluation"]["mean"] == evaluation.to_dict()["mean"]
    # vlad 0.4's verification keeps its own settings and its name.
    assert run_variant(changed, "spatial-0.4-20")["variant"] == "spatial-0.4-20"


def test_the_asmk_vocabulary_is_fitted_once_then_loaded_from_the_cache(
    prepared, tmp_path
):
    def fresh(sample=500):
        return Prepared(
            prepared.descriptors,
            prepared.ground_truth,
            prepared.queries,
            n_jobs=1,
            asmk_words=16,
            asmk_sample=sample,
            codebook_cache=tmp_path / "codebooks",
        )

    expected = vlad.fit_codebook(prepared.descriptors, 16, sample=500, n_jobs=1)
    first = fresh()
    fitted = first.asmk_codebook()
    np.testing.assert_array_equal(fitted.centers, expected.centers)
    assert first.asmk_codebook_record["fitted"]
    assert first.asmk_codebook_record["fit_seconds"] == first.seconds["codebook K=16"]
    path = tmp_path / "codebooks" / "asmk-16.npz"
    assert first.asmk_codebook_record["path"] == str(path) and path.is_file()
    second = fresh()
    loaded = second.asmk_codebook()
    np.testing.assert_array_equal(loaded.centers, expected.centers)
    assert not second.asmk_codebook_record["fitted"]
    assert second.asmk_codebook_record["fit_seconds"] == first.seconds["codebook K=16"]
    assert "codebook K=16 (loaded)" in second.seconds
    row = run_variant(second, "asmk")
    assert row["variant"] == "asmk-16" == vocabulary_name("asmk", 16)
    assert row["description"].endswith("; 16 words fitted on 500 sampled descriptors")
    index = index_asmk(second, binary=False)
    assert row["index"] == {"nbytes": index.nbytes, "n_entries": index.n_entries}
    assert vocabulary_name("asmk-spatial-50-qe", 16384) == "asmk-16k-spatial-50-qe"
    assert vocabulary_name("asmk-star", 4096) == "asmk-star"
    # One word per query descriptor: named so, and ranked as the index's own
    # search with multiple_assignment=1 ranks.
    second.asmk_multiple_assignment = 1
    row = run_variant(second, "asmk")
    assert row["variant"] == "asmk-16-ma1"
    assert row["description"].endswith("; multiple assignment 1")
    sets = second.descriptors
    queries = [sets[row] for row in second.query_rows()]
    direct = index.search(
        queries, index.n_images, query_names=second.queries, multiple_assignment=1
    ).rankings()
    assert search_asmk(second, index) == direct
    assert (
        direct
        != index.search(queries, index.n_images, query_names=second.queries).rankings()
    )
    with pytest.raises(
        ValueError, match="has n_training_descriptors 500, expected 400"
    ):
        fresh(sample=400).asmk_codebook()


def test_the_command_line_fits_the_vocabulary_once_then_loads_it(
    prepared, tmp_path, capsys
):
    names = prepared.descriptors.names
    (tmp_path / "images").mkdir()
    for name in names:
        (tmp_path / "images" / name).write_bytes(b"")
    truth = {
        names[i]: {
            "relevant": [names[j] for j in range(6) if j % 2 == i % 2 and j != i],
            "junk": [names[i]],
        }
        for i in range(6)
    }
    (tmp_path / "ground_truth.json").write_text(json.dumps(truth))
    prepared.descriptors.save(tmp_path / "descriptors.npz")
    cache = tmp_path / "codebooks"
    arguments = [
        str(tmp_path),
        *("--descriptors", str(tmp_path / "descriptors.npz")),
        *("--variant", "asmk", "k64", "--asmk-words", "16", "--asmk-sample", "500"),
        *("--codebook-cache", str(cache), "--jobs", "1"),
    ]
    for run, how in enumerate(("fitted in", f"loaded from {cache / 'asmk-16.npz'}")):
        assert run_main([*arguments, "--json", str(tmp_path / f"{run}.json")]) == 0
        assert f"ASMK vocabulary of 16 words {how}" in capsys.readouterr().out
        record = json.loads((tmp_path / f"{run}.json").read_text())
        assert [row["variant"] for row in record["variants"]] == ["asmk-16", "k64"]
        assert record["settings"]["asmk_words"] == 16
        assert record["asmk_codebook"]["fitted"] == (run == 0)
    first, second = (
        json.loads((tmp_path / f"{run}.json").read_text()) for run in (0, 1)
    )
    assert first["variants"][0]["evaluation"] == second["variants"][0]["evaluation"]
    assert (
        first["asmk_codebook"]["fit_seconds"]
        == second["asmk_codebook"]["fit_seconds"]
        == first["preparation_seconds"]["codebook K=16"]
    )


def test_the_command_line_passes_its_verification_settings(prepared, tmp_path):
    (tmp_path / "images").mkdir()
    for name in prepared.descriptors.names:
        (tmp_path / "images" / name).write_bytes(b"")
    truth = {name: {"relevant": [], "junk": [name]} for name in prepared.queries}
    (tmp_path / "ground_truth.json").write_text(json.dumps(truth))
    prepared.descriptors.save(tmp_path / "descriptors.npz")
    arguments = [
        str(tmp_path),
        *("--descriptors", str(tmp_path / "descriptors.npz"), "--jobs", "1"),
        *("--variant", "asmk-spatial-20", "--asmk-words", "16", "--asmk-sample", "500"),
    ]
    settings = ["--ratio", "0.9", "--min-inliers", "9", "--verify-keypoints", "0"]
    assert run_main([*arguments, *settings, "--json", str(tmp_path / "run.json")]) == 0
    record = json.loads((tmp_path / "run.json").read_text())
    assert record["settings"]["verification"] == {
        "ratio": 0.9,
        "min_inliers": 9,
        "verify_keypoints": 0,
    }
    assert [row["variant"] for row in record["variants"]] == [
        "asmk-16-spatial-20-ratio0.9-min9-kpall"
    ]
    # Settings not given are left to the library, and the name stays.
    assert run_main([*arguments, "--json", str(tmp_path / "plain.json")]) == 0
    plain = json.loads((tmp_path / "plain.json").read_text())
    assert plain["settings"]["verification"] == {}
    assert plain["variants"][0]["variant"] == "asmk-16-spatial-20"


@pytest.mark.parametrize(
    ("option", "message"),
    [
        (["--ratio", "1.5"], r"ratio must be a number in \(0, 1\]; got 1.5"),
        (["--min-inliers", "0"], "min_inliers must be an integer >= 1; got 0"),
        (
            ["--verify-keypoints", "5"],
            "verify_keypoints must be None, 0 .every keypoint. or",
        ),
    ],
)
def test_verification_settings_the_library_refuses_stop_the_run_first(
    prepared, tmp_path, capsys, option, message
):
    prepared.descriptors.save(tmp_path / "descriptors.npz")
    arguments = [
        str(tmp_path),
        *("--descriptors", str(tmp_path / "descriptors.npz")),
        *("--variant", "spatial-20", "--json", str(tmp_path / "run.json")),
    ]
    assert run_main([*arguments, *option]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and re.search(message, error)
    assert not (tmp_path / "run.json").exists()


def test_an_unused_ratio_is_left_out_of_the_settings():
    mutual = argparse.Namespace(
        matching="mutual", ratio=0.9, min_inliers=None, verify_keypoints=None
    )
    assert verification_settings(mutual) == {"matching": "mutual"}
    assert verification_settings(
        argparse.Namespace(**{**vars(mutual), "matching": "mutual+ratio"})
    ) == {"ratio": 0.9}


def test_the_runner_s_matching_is_the_library_s():
    defaults = inspect.signature(rerank_spatially).parameters
    assert LIBRARY_MATCHING == defaults["matching"].default
    assert all(
        defaults[key].default is None
        for key in ("depth", "ratio", "min_inliers", "verify_keypoints")
    )


def test_verification_suits_the_descriptors_record(prepared):
    """Descriptors recorded as ALIKED's verify with ALIKED's settings, as
    ``vlad search`` would: the same rankings as the library called with them,
    and the variant keeps its name; the same settings given keep it too."""
    sets = prepared.descriptors
    aliked = dataclasses.replace(
        prepared,
        descriptors=vlad.DescriptorSets(
            sets.descriptors,
            sets.offsets,
            sets.names,
            {"extractor": "aliked", "model": "aliked-n16"},
            keypoints=sets.keypoints,
        ),
    )
    assert aliked.preset.name == "aliked" and aliked.min_inliers == 12
    row = run_variant(aliked, "spatial-20")
    assert row["variant"] == "spatial-20"
    assert "as suits aliked" in row["description"]
    indexed = VARIANTS["spatial-20"].setup(aliked)
    results = indexed.index.search(
        indexed.query_vectors, indexed.index.n_images, query_names=aliked.queries
    )
    explicit = rerank_spatially(
        results,
        aliked.descriptors,
        aliked.descriptors,
        depth=20,
        ratio=0.9,
        min_inliers=12,
        verify_keypoints=1024,
    )
    assert search_index(aliked, indexed, depth=20) == explicit.rankings()
    given = dataclasses.replace(aliked, verification={"ratio": 0.9})
    assert run_variant(given, "spatial-20")["variant"] == "spatial-20"
    old = dataclasses.replace(aliked, verification={"ratio": 0.8, "min_inliers": 20})
    assert run_variant(old, "spatial-20")["variant"] == "spatial-20-ratio0.8-min20"
