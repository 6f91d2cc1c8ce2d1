"""Query expansion by spatially verified images (vlad.verification.expand_verified):
compared with a plain loop over the queries, for an ASMK index and a VLAD
index, at full depth and cut to the top k; what it keeps and refuses."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from verified_scenes import N_IMAGES, scenes

import vlad
from vlad.asmk import build_asmk_index
from vlad.search import build_index
from vlad.verification import expand_verified, rerank_spatially, spatial_rerank


@pytest.fixture(scope="module")
def sets():
    return scenes()


@pytest.fixture(scope="module")
def codebook(sets):
    return vlad.fit_codebook(sets, 8, n_jobs=1)


def asmk_search(sets, codebook):
    index = build_asmk_index(sets, codebook, binary=False)
    return functools.partial(index.search, multiple_assignment=2)


def vlad_search(sets, codebook):
    index = build_index(vlad.encode(sets, codebook, n_jobs=1), sets.names)

    def search(queries, k):
        vectors = vlad.encode(queries, codebook, n_jobs=1)
        return index.search(vectors, k, query_names=list(queries.names))

    return search


def plain_loop(sets, search, k, depth, images, min_inliers):
    """For each query: search, verify the first ``depth``, concatenate the
    query's descriptors with those of its first ``images`` verified others,
    search again; the verified first, then the second search's others, ``k``
    in all."""
    names = list(sets.names)
    rankings = {}
    for row, query in enumerate(names):
        alone = vlad.DescriptorSets.from_list([sets[row]], [query])
        first = search(alone, k).queries[0].names
        ranking, inliers = spatial_rerank(
            sets.keypoints_of(row),
            sets[row],
            [names.index(name) for name in first],
            sets,
            depth=depth,
            min_inliers=min_inliers,
        )
        verified = [
            names[r] for r, n in zip(ranking, inliers, strict=True) if n >= min_inliers
        ]
        others = [names.index(name) for name in verified if name != query][:images]
        if not others:
            rankings[query] = [names[r] for r in ranking]
            continue
        expanded = np.concatenate([sets[row]] + [sets[r] for r in others])
        again = search(
            vlad.DescriptorSets.from_list([expanded], [query]), N_IMAGES
        ).queries[0]
        rest = [name for name in again.names if name not in verified]
        rankings[query] = (verified + rest)[:k]
    return rankings


@pytest.mark.parametrize("kind", ["asmk", "vlad"])
@pytest.mark.parametrize(
    ("k", "depth", "images"),
    [pytest.param(12, 12, 10, marks=pytest.mark.slow), (6, 4, 1)],
)
def test_expansion_equals_a_plain_loop(sets, codebook, kind, k, depth, images):
    search = {"asmk": asmk_search, "vlad": vlad_search}[kind](sets, codebook)
    results = rerank_spatially(search(sets, k), sets, sets, depth=depth, n_jobs=1)
    expanded = expand_verified(results, sets, sets, search, images=images)
    expected = plain_loop(sets, search, k, depth, images, min_inliers=12)
    assert expanded.rankings() == expected
    # Some query was expanded, and its ranking changed.
    assert expanded.rankings() != results.rankings() or kind == "vlad"
    for before, after in zip(results, expanded, strict=True):
        assert len(after.names) == len(before.names)
        known = dict(zip(before.names, before.inliers.tolist(), strict=True))
        assert after.inliers.tolist() == [known.get(n, -1) for n in after.names]
        n_verified = int(np.count_nonzero(before.inliers >= 12))
        assert after.names[:n_verified] == before.names[:n_verified]
        np.testing.assert_array_equal(
            after.scores[:n_verified], before.scores[:n_verified]
        )
        assert [sets.names[row] for row in after.rows] == list(after.names)
    assert expanded.record["verified_expansion"] == {
        "images": images,
        "min_inliers": 12,
    }
    assert (
        expanded.record["spatial_verification"]
        == results.record["spatial_verification"]
    )


def test_a_lower_min_inliers_brings_those_images_first(sets, codebook):
    search = asmk_search(sets, codebook)
    results = rerank_spatially(
        search(sets, N_IMAGES), sets, sets, depth=N_IMAGES, min_inliers=40, n_jobs=1
    )
    expanded = expand_verified(results, sets, sets, search, min_inliers=12)
    expected = plain_loop(sets, search, N_IMAGES, N_IMAGES, 10, min_inliers=12)
    assert expanded.rankings() == expected
    assert expanded.record["verified_expansion"]["min_inliers"] == 12


def test_queries_that_verified_nothing_else_keep_their_results(sets, codebook):
    search = asmk_search(sets, codebook)
    calls = []

    def counted(queries, k):
        calls.append(list(queries.names))
        return search(queries, k)

    results = rerank_spatially(search(sets, N_IMAGES), sets, sets, n_jobs=1)
    expanded = expand_verified(results, sets, sets, counted)
    # One second search, of the five queries with a verified view.
    assert calls == [["00.jpg", "01.jpg", "02.jpg", "05.jpg", "06.jpg"]]
    for before, after in zip(results, expanded, strict=True):
        if before.query not in calls[0]:
            assert after is before


def test_results_not_verified_and_bad_settings_are_refused(sets, codebook):
    search = asmk_search(sets, codebook)
    plain = search(sets, 4)
    with pytest.raises(ValueError, match="needs spatially verified results"):
        expand_verified(plain, sets, sets, search)
    verified = rerank_spatially(plain, sets, sets, n_jobs=1)
    with pytest.raises(ValueError, match="images must be an integer >= 1"):
        expand_verified(verified, sets, sets, search, images=0)
    with pytest.raises(ValueError, match="min_inliers must be an integer >= 1"):
        expand_verified(verified, sets, sets, search, min_inliers=0)
    fewer = vlad.DescriptorSets.from_list(
        [sets[0]], ["00.jpg"], keypoints=[sets.keypoints_of(0)]
    )
    with pytest.raises(ValueError, match="verified image '01.jpg' has no descriptors"):
        expand_verified(verified, sets, fewer, search)
