"""ASMK indexes split in shards, searched on a Dask cluster as one index.

The shards are ASMK index folders of the same codebook and kernel settings
(each built by ``vlad index --method asmk`` on a part of the collection, on
any machine); the collection is their images, shard after shard. The client
assigns the queries' descriptors to their words once and scatters the
queries' words and codes (a few hundred kilobytes a query) to the workers;
one task per shard opens its folder memory-mapped (once per worker process),
ranks its own images for every query and returns its ``k`` best: images and
scores, nothing else. The client merges them into each query's ``k`` best,
ties to the image of the earlier shard and row, as one index orders them.

An image's score depends only on the query and that image, save for idf
and the stop list: with idf the client sums the shards' word counts into
the collection's idf weights and scatters them, and each worker computes
its shard's self-similarities with them (once per worker and shard); the
stop list (``stop_fraction``) is the collection's commonest words, which the
client leaves out of the queries before scattering them. The results are
then those of one index of every image: the same images, ranks and scores.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from vlad.asmk._files import load_asmk_index
from vlad.asmk._index import ASMKIndex
from vlad.asmk._parts import renamed
from vlad.asmk._scoring import (
    empty_reason,
    query_words,
    ranked_images,
    stop_record,
    without_stop_words,
    words_per_descriptor,
)
from vlad.asmk._weights import (
    IndexWeights,
    idf_self_similarities,
    stop_words_of,
    word_weights,
)
from vlad.core._parameters import STOP_FRACTION, K
from vlad.core._validation import checked_names
from vlad.errors import VladError
from vlad.pipeline._cluster import TASK_RETRIES, require_client
from vlad.search._results import SearchResults, empty_result, results_from_arrays

__all__ = ["search_asmk_shards"]

#: What must be the same in every shard for them to make one index.
_SHARED = (
    "n_words",
    "n_features",
    "binary",
    "alpha",
    "threshold",
    "idf",
    "quantizer",
    "quantizer_parameters",
)
# Shards opened in this (worker) process, by path and index.json's state.
_OPENED: dict[tuple, tuple[ASMKIndex, dict]] = {}
_OPENED_LOCK = threading.Lock()


def search_asmk_shards(
    shards: Sequence[str | os.PathLike],
    query_sets,
    k: int = K.default,
    *,
    client: Any,
    multiple_assignment: int | None = None,
    query_names: Sequence[str] | None = None,
    stop_fraction: float = STOP_FRACTION.default,
) -> SearchResults:
    """The ``k`` best images of each query among the shards' images.

    Parameters
    ----------
    shards : sequence of path-like
        ASMK index folders of the same codebook and settings, on a file
        system every worker sees under the same paths; their images, shard
        after shard, are the collection searched.
    query_sets : DescriptorSets, ShardedDescriptorSets or list of arrays
        The queries' descriptors, of the shards' kind.
    k : int, default=10
        Images per query.
    client : distributed.Client
        The cluster's client (see :func:`vlad.pipeline.dask_client`).
    multiple_assignment : int, optional
        Words each query descriptor is assigned to (default the index's: 5
        for ASMK*, 3 for ASMK).
    query_names : sequence of str, optional
        Default the sets' names.
    stop_fraction : float, default=0.0
        The queries leave out the collection's commonest words, which
        together hold at most this fraction of its entries (as
        :meth:`vlad.asmk.ASMKIndex.search`; counted over every shard).

    Returns
    -------
    SearchResults
        As :meth:`vlad.asmk.ASMKIndex.search` of one index holding every
        shard's images in order; rows and names are the collection's.

    Raises
    ------
    ValueError
        No shard, shards of other codebooks or settings, queries of another
        kind, bad ``k``, ``multiple_assignment`` or ``stop_fraction``.
    ImportError
        Without ``vlad-toolkit[dask]``.
    """
    require_client(client)
    k = K.check(k)
    paths = [str(Path(shard).resolve()) for shard in shards]
    if not paths:
        raise VladError("shards must name at least one ASMK index folder")
    opened = [load_asmk_index(path, mmap=True) for path in paths]
    first = opened[0]
    for path, index in zip(paths, opened, strict=True):
        _check_same_kind(first, index, paths[0], path)
    firsts = np.cumsum([0] + [index.n_images for index in opened])
    stored = sum(int(np.count_nonzero(_has_words(index))) for index in opened)
    n_nearest = words_per_descriptor(first, multiple_assignment)
    stop_fraction = STOP_FRACTION.check(stop_fraction)
    segments = [segment for index in opened for segment in index.segments]
    stopped = stop_words_of(segments, first.n_words, stop_fraction)
    queries, reasons = [], []
    for part in query_words(first, query_sets, n_nearest):
        part, part_reasons = without_stop_words(part, stopped)
        queries.append(part)
        reasons.extend(part_reasons)
    found = []
    if stored:
        # One object each, sent once to every worker: the queries' words and
        # codes, and with idf the collection's word weights.
        weights = word_weights(segments, first.n_words, stored) if first.idf else None
        # A key of its own (hash=False): a key from the content would be the
        # same for the same queries searched again, and releasing the
        # earlier search's data could then drop this one's.
        [shared] = client.scatter([(queries, weights)], broadcast=True, hash=False)
        futures = [
            client.submit(
                _shard_best,
                path,
                shared,
                min(k, stored),
                pure=False,
                retries=TASK_RETRIES,
            )  # fmt: skip
            for path in paths
        ]
        found = client.gather(futures)
    names = np.array([name for index in opened for name in index.names], dtype=object)
    results = []
    position = 0
    for part_names, _, _, _ in queries:
        for name in part_names:
            reason = empty_reason(reasons[position], stored)
            if reason is not None:
                results.append(empty_result(name, reason))
            else:
                rows, scores = _merged(
                    [shard[position] for shard in found], firsts, min(k, stored)
                )
                results.extend(
                    results_from_arrays([name], names, scores[None, :], rows[None, :])
                )
            position += 1
    if query_names is not None:
        query_names = checked_names(query_names, len(results), "images")
        for place, name in enumerate(query_names):
            results[place] = renamed(results[place], name)
    notes = []
    if k > stored:
        notes.append(
            f"k={k} but the shards hold {stored} images with descriptors: each "
            f"query gets at most {stored}"
        )
    record = {
        "k": k,
        "multiple_assignment": n_nearest,
        **stop_record(stop_fraction, stopped),
        "index": {
            **first.record(),
            "n_images": int(firsts[-1]),
            "n_entries": sum(index.n_entries for index in opened),
        },
        "shards": paths,
    }
    return SearchResults(results, record, notes)


def _check_same_kind(first: ASMKIndex, index: ASMKIndex, first_path, path) -> None:
    if index.codebook.fingerprint != first.codebook.fingerprint:
        raise VladError(
            f"{path} holds another codebook than {first_path} (fingerprints "
            f"{index.codebook.fingerprint} and {first.codebook.fingerprint}): "
            "shards of one index share their codebook"
        )
    ours, theirs = first.record(), index.record()
    for key in _SHARED:
        if ours[key] != theirs[key]:
            raise VladError(
                f"{path} has {key}={theirs[key]!r} but {first_path} has "
                f"{ours[key]!r}: shards of one index share their settings"
            )


def _has_words(index: ASMKIndex) -> np.ndarray:
    return np.concatenate([segment.image_entries for segment in index.segments]) > 0


def _opened_shard(path: str, weights: np.ndarray | None) -> tuple[ASMKIndex, Any]:
    """The shard at ``path``, opened once per worker process (again when its
    index.json changes), and its weights (the collection's, with idf)."""
    state = os.stat(Path(path) / "index.json")
    key = (path, state.st_mtime_ns, state.st_size, state.st_ino)
    with _OPENED_LOCK:
        if key not in _OPENED:
            for stale in [other for other in _OPENED if other[0] == path]:
                del _OPENED[stale]
            _OPENED[key] = (load_asmk_index(path, mmap=True), {})
        index, by_weights = _OPENED[key]
    if weights is None:
        return index, index._statistics_now()
    digest = hashlib.sha256(weights.tobytes()).hexdigest()
    if digest not in by_weights:
        has_words = _has_words(index)
        by_weights.clear()
        by_weights[digest] = IndexWeights(
            weights,
            idf_self_similarities(index.segments, weights, index.n_images),
            has_words,
            int(np.count_nonzero(has_words)),
        )
    return index, by_weights[digest]


def _shard_best(path: str, shared: tuple, k: int) -> list:
    """Each query's ``k`` best images of the shard at ``path`` (fewer if it
    holds fewer): ``(rows, scores)``, rows the shard's own; ``shared`` holds
    the queries (as :func:`query_words` makes them) and the weights."""
    queries, weights = shared
    index, statistics = _opened_shard(path, weights)
    best = []
    for _, words, codes, bounds in queries:
        for t in range(len(bounds) - 1):
            first, last = bounds[t], bounds[t + 1]
            if first == last or statistics.stored == 0:
                best.append((np.zeros(0, np.int64), np.zeros(0, np.float64)))
                continue
            best.append(
                ranked_images(
                    index.segments,
                    words[first:last],
                    codes[first:last],
                    statistics,
                    min(k, statistics.stored),
                    binary=index.binary,
                    alpha=index.alpha,
                    threshold=index.threshold,
                    n_features=index.n_features,
                )
            )
    return best


def _merged(found: list, firsts: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` best of the shards' bests, by score, ties to the lower row
    of the collection."""
    rows = np.concatenate(
        [
            np.asarray(rows, np.int64) + firsts[shard]
            for shard, (rows, _) in enumerate(found)
        ]
    )
    scores = np.concatenate([scores for _, scores in found])
    order = np.lexsort((rows, -scores))[:k]
    return rows[order], scores[order]
