"""vlad.pipeline.search_verified (ASMK, spatial verification, query expansion
by the verified images) against a plain loop and against the three calls it
makes, the same from an index folder (vlad.pipeline.search_index), and
vlad.verification.check_verification against rerank_spatially's own refusals."""

from __future__ import annotations

import functools
import inspect

import numpy as np
import pytest
from test_verified_expansion import plain_loop
from verified_scenes import N_IMAGES, scenes

import vlad
from vlad.asmk import build_asmk_index
from vlad.pipeline import VERIFICATION_KEYS, search_index, search_verified
from vlad.search import build_index
from vlad.verification import check_verification, expand_verified, rerank_spatially


@pytest.fixture(scope="module")
def sets():
    return scenes()


@pytest.fixture(scope="module")
def index(sets):
    return build_asmk_index(sets, vlad.fit_codebook(sets, 8, n_jobs=1), binary=False)


@pytest.mark.parametrize("stop_fraction", [0.0, 0.2])
def test_it_equals_a_plain_loop_over_the_queries(sets, index, stop_fraction):
    """Both searches with the same words per descriptor and stop list."""
    settings = {"multiple_assignment": 2, "stop_fraction": stop_fraction}
    results = search_verified(
        index, sets, sets, 6, depth=4, expand=1, n_jobs=1, **settings
    )
    search = functools.partial(index.search, **settings)
    expected = plain_loop(sets, search, 6, 4, 1, min_inliers=12)
    assert results.rankings() == expected
    assert results.record["verified_expansion"] == {"images": 1, "min_inliers": 12}
    assert results.record["spatial_verification"]["depth"] == 4
    assert (results.record["stop_words"] > 0) == (stop_fraction > 0)
    # The expansion changed some ranking: the second search took place.
    alone = search_verified(
        index, sets, sets, 6, depth=4, expand=0, n_jobs=1, **settings
    )
    assert results.rankings() != alone.rankings()


def test_it_makes_the_three_calls_with_its_settings(sets, index):
    """Every image by default, the verification settings passed on, the
    second search with the same multiple assignment."""
    settings = {"matching": "mutual", "verify_keypoints": 0, "model": "affine"}
    results = search_verified(
        index,
        sets,
        sets,
        depth=6,
        min_inliers=10,
        expand=2,
        verification=settings,
        n_jobs=1,
    )
    search = functools.partial(index.search, n_jobs=1)
    verified = rerank_spatially(
        search(sets, N_IMAGES),
        sets,
        sets,
        depth=6,
        min_inliers=10,
        n_jobs=1,
        **settings,
    )
    expected = expand_verified(verified, sets, sets, search, images=2)
    assert results.rankings() == expected.rankings()
    assert all(len(result.names) == N_IMAGES for result in results)
    for got, want in zip(results, expected, strict=True):
        np.testing.assert_array_equal(got.inliers, want.inliers)
    assert results.record["spatial_verification"]["model"] == "affine"
    assert results.record["spatial_verification"]["max_keypoints"] is None


def test_an_index_folder_searched_as_vlad_search_does_gives_the_same(
    sets, index, tmp_path
):
    index.save(tmp_path / "index")
    sets.save(tmp_path / "descriptors.npz")
    run = search_index(
        tmp_path / "index",
        tmp_path / "descriptors.npz",
        top=5,
        rerank=["spatial"],
        rerank_depth=5,
        expand_verified=1,
        multiple_assignment=2,
        database_descriptors=tmp_path / "descriptors.npz",
        n_jobs=1,
    )
    direct = search_verified(
        index, sets, sets, 5, depth=5, expand=1, multiple_assignment=2, n_jobs=1
    )
    assert run.results.rankings() == direct.rankings()
    assert (
        run.results.record["verified_expansion"]
        == (direct.record["verified_expansion"])
    )


@pytest.mark.parametrize(
    "settings",
    [
        {"depth": -1},
        {"min_inliers": 0},
        {"verification": {"ratio": 1.5}},
        {"verification": {"verify_keypoints": 5}},
        {"verification": {"matching": "nearest"}},
        {"verification": {"model": "projective"}},
        {"verification": {"reprojection_threshold": 0}},
        {"verification": {"preset": "superpoint"}},
    ],
)
def test_bad_settings_are_refused_before_the_search(sets, index, settings):
    """The message is rerank_spatially's; queries that the search itself
    would refuse (another width) show that nothing was searched first."""
    with pytest.raises(ValueError) as from_rerank:
        rerank_spatially(
            index.search(sets, 2),
            sets,
            sets,
            depth=settings.get("depth"),
            min_inliers=settings.get("min_inliers"),
            **settings.get("verification", {}),
        )
    wider = vlad.DescriptorSets.from_list(
        [np.ones((3, 16), dtype=np.float32)], ["q"], keypoints=[np.ones((3, 4))]
    )
    with pytest.raises(ValueError) as caught:
        search_verified(index, wider, sets, **settings)
    assert str(caught.value) == str(from_rerank.value)
    assert "\n" not in str(caught.value)


def test_misuse_is_refused_in_one_line(sets, index):
    with pytest.raises(ValueError, match="verification may hold matching, .*'depth'"):
        search_verified(index, sets, sets, verification={"depth": 3})
    for expand in (-1, True, 1.5):
        with pytest.raises(ValueError, match="expand must be an integer >= 0"):
            search_verified(index, sets, sets, expand=expand)
    vectors = build_index(np.eye(3, dtype=np.float32), ["a", "b", "c"])
    with pytest.raises(
        TypeError, match=r"index must be an ASMKIndex \(.*\); got VectorIndex"
    ):
        search_verified(vectors, sets, sets)
    keywords = inspect.signature(rerank_spatially).parameters
    assert set(VERIFICATION_KEYS) <= set(keywords)


@pytest.mark.parametrize(
    "settings",
    [
        {"depth": 0, "min_inliers": 1, "verify_keypoints": 8},
        {"ratio": 1.0, "matching": "ratio", "verify_keypoints": 0},
        {"model": "affine", "reprojection_threshold": 2.5, "preset": "aliked"},
        {},
    ],
)
def test_check_verification_accepts_what_rerank_spatially_accepts(sets, settings):
    assert check_verification(**settings) is None
    rerank_spatially(vlad.search.SearchResults([], {}), sets, sets, **settings)
