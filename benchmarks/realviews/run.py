"""Run named search variants on the real-view benchmark and evaluate them.

::

    python -m benchmarks.realviews.run DATASET [--work DIR] [--descriptors PATH]
        [--variant NAME ...] [--jobs N] [--json PATH]
        [--asmk-words N] [--asmk-sample N] [--asmk-multiple-assignment N]
        [--asmk-stop-fraction F]
        [--codebook-cache DIR] [--matching M] [--ratio R] [--min-inliers N]
        [--verify-keypoints N]

``DATASET`` is a folder built by :mod:`benchmarks.realviews.build`. Every
image of ``DATASET/images`` is in the database, and every scene image is also
a query (leave-one-out: the ground truth makes it junk in its own ranking).
Descriptors are extracted once, with vlad's defaults, into ``--work``
(default ``DATASET/work``) and reused; ``--descriptors`` reads those of the
same images from a file instead: a ``vlad extract`` file, or hloc's local
features (an ``.h5``, learned features such as ALIKED or SuperPoint).

A variant is an entry of :data:`VARIANTS`: a :class:`Variant` whose ``setup``
builds what its search needs from the :class:`Prepared` data (codebook,
vectors, index: offline work, timed as a whole) and whose ``search`` ranks the
database for every query (timed per query). The codebook is fitted on all the
database's descriptors, as ``vlad fit`` on the folder would, and shared by the
variants that use the same K and encoding; the ASMK variants' vocabulary
(``--asmk-words``, fitted on ``--asmk-sample`` descriptors) can be kept in
``--codebook-cache`` and loaded by later runs; their searches assign each
query descriptor to its ``--asmk-multiple-assignment`` nearest words and leave
out the stop list of ``--asmk-stop-fraction``. The variants that verify as
``vlad search --rerank spatial`` does take its ``--matching``, ``--ratio``,
``--min-inliers`` and ``--verify-keypoints``; those not given suit the
descriptors, as ``vlad search`` chooses them
(:func:`vlad.verification.verification_preset`: SIFT's or ALIKED's), and the
variants' names carry the settings given that differ from them (e.g.
``asmk-spatial-50-ratio0.8-min12`` on ALIKED's); vlad 0.4's verification keeps
its own. Each variant's rankings (the whole database, best first) are scored
by :func:`vlad.evaluation.evaluate`: mAP (revisitop's), Recall@1, @5 and @10,
overall and per tag (tier and family), and the step-wise mAP beside it
(:attr:`vlad.evaluation.Evaluation.step_map`). The ASMK variants that verify
(``asmk-spatial-N``, ``asmk-spatial-N-qe``) are
:func:`vlad.pipeline.search_verified`, the search ``vlad search --rerank
spatial [--expand-verified]`` makes of an ASMK index.

A new method plugs in as one more entry::

    VARIANTS["mine"] = Variant("what it is", setup_mine, search_mine)

with ``setup_mine(prepared) -> state`` and ``search_mine(prepared, state)``
returning query name -> database names, best first.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import inspect
import json
import math
import os
import shlex
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

import vlad
from benchmarks.files import atomic_write
from benchmarks.report import machine_info
from vlad.asmk import ASMKIndex, build_asmk_index
from vlad.core import DEFAULT_N_CLUSTERS
from vlad.evaluation import evaluate, load_ground_truth
from vlad.pipeline import read_descriptor_sets, search_verified
from vlad.search import QueryExpansion, VectorIndex, build_index
from vlad.verification import (
    VerificationPreset,
    VerificationSettings,
    check_verification,
    expand_verified,
    rerank_spatially,
    spatial_rerank,
    verification_preset,
)

__all__ = [
    "KS",
    "VARIANTS",
    "Prepared",
    "Variant",
    "main",
    "prepare",
    "run_variant",
]

#: Cut-offs of Recall@k.
KS = (1, 5, 10)
#: PCA-whitening dimension of the ``pca-128`` variant.
PCA_DIMENSION = 128
#: Words of the ASMK variants' vocabulary unless told otherwise.
ASMK_WORDS = 4096
#: Descriptors sampled to fit a codebook unless told otherwise (``vlad fit``'s
#: default).
SAMPLE = inspect.signature(vlad.fit_codebook).parameters["sample"].default
#: Verified images (besides the query) whose descriptors join the query's in
#: the ``-qe`` variants' second search: the library's default.
EXPANDED_IMAGES = expand_verified.__kwdefaults__["images"]
#: vlad 0.4's spatial verification: Lowe's ratio test at 0.8 (brute-force
#: matches of every keypoint), an affine transform by RANSAC, 8 inliers.
SPATIAL_04 = {
    "matching": "ratio",
    "ratio": 0.8,
    "model": "affine",
    "min_inliers": 8,
    "verify_keypoints": 0,
}
#: The matching of ``vlad search --rerank spatial``.
LIBRARY_MATCHING = "mutual+ratio"


@dataclass
class Prepared:
    """The descriptors and ground truth of one benchmark folder, and the
    vectors made from them so far.

    Attributes
    ----------
    descriptors : vlad.DescriptorSets
        Every image of the folder (the database), named relative to
        ``DATASET/images``; the queries are among them.
    ground_truth : dict of str to QueryTruth
    queries : list of str
        The ground truth's queries.
    n_jobs : int or None
        Threads of k-means, encoding and spatial verification.
    seconds : dict of str to float
        Time of each shared step (descriptors, each codebook, each encoding).
    asmk_words : int
        Words of the ASMK variants' vocabulary.
    asmk_sample : int
        Descriptors sampled to fit it.
    asmk_multiple_assignment : int or None
        Nearest words of each query descriptor in the ASMK searches; None for
        each index's default (``ASMKIndex.default_multiple_assignment``).
    asmk_stop_fraction : float
        The ASMK searches' stop list (``stop_fraction`` of
        :meth:`vlad.asmk.ASMKIndex.search`; 0: none).
    codebook_cache : Path or None
        A folder where the ASMK vocabulary is kept as ``asmk-<words>.npz``:
        fitted and saved there once, loaded afterwards.
    verification : dict
        Settings of :func:`vlad.verification.rerank_spatially` (``matching``,
        ``ratio``, ``min_inliers``, ``verify_keypoints``, 0 for every keypoint)
        for the variants that verify as ``vlad search --rerank spatial``
        does; those left out suit the descriptors (:attr:`preset`). vlad
        0.4's verification (``spatial-0.4-N``) keeps its own.
    asmk_codebook_record : dict
        How the ASMK vocabulary came (``path``, ``fitted``) and its fit's wall
        and CPU seconds (``fit_seconds``, ``fit_cpu_seconds``, those of the
        run that fitted it when it was loaded); empty until it is needed.
    """

    descriptors: vlad.DescriptorSets
    ground_truth: dict
    queries: list[str]
    n_jobs: int | None = None
    seconds: dict[str, float] = field(default_factory=dict)
    asmk_words: int = ASMK_WORDS
    asmk_sample: int = SAMPLE
    asmk_multiple_assignment: int | None = None
    asmk_stop_fraction: float = 0.0
    codebook_cache: Path | None = None
    verification: dict = field(default_factory=dict)
    asmk_codebook_record: dict = field(default_factory=dict)
    _codebooks: dict = field(default_factory=dict, repr=False)
    _vectors: dict = field(default_factory=dict, repr=False)

    def codebook(
        self, clusters: int = DEFAULT_N_CLUSTERS, sample: int = SAMPLE
    ) -> vlad.Codebook:
        """A codebook of ``clusters`` centres fitted on ``sample`` of the
        database's descriptors (seed as ``vlad fit``), fitted once."""
        if clusters not in self._codebooks:
            start, cpu = time.perf_counter(), time.process_time()
            codebook = vlad.fit_codebook(
                self.descriptors, clusters, sample=sample, n_jobs=self.n_jobs
            )
            seconds = time.perf_counter() - start
            self._codebooks[clusters] = vlad.Codebook(
                codebook.centers,
                codebook.metadata
                | {
                    "fit_seconds": seconds,
                    "fit_cpu_seconds": time.process_time() - cpu,
                },
            )
            self.seconds[f"codebook K={clusters}"] = seconds
        return self._codebooks[clusters]

    def asmk_codebook(self) -> vlad.Codebook:
        """The ASMK variants' vocabulary: :attr:`asmk_words` words fitted on
        :attr:`asmk_sample` descriptors, or loaded from :attr:`codebook_cache`
        (and saved there when fitted).

        Raises
        ------
        ValueError
            The cached codebook was fitted otherwise (words, sample, seed or
            descriptors).
        """
        words = self.asmk_words
        if words in self._codebooks:
            return self._codebooks[words]
        path = (
            self.codebook_cache / f"asmk-{words}.npz" if self.codebook_cache else None
        )
        if path is None or not path.exists():
            codebook = self.codebook(words, self.asmk_sample)
            if path is not None:
                path.parent.mkdir(parents=True, exist_ok=True)
                codebook.save(path, overwrite=False)
            fitted = True
        else:
            start = time.perf_counter()
            codebook = vlad.Codebook.load(path)
            expected = {
                "n_clusters": words,
                "seed": 0,
                "n_training_descriptors": min(
                    self.asmk_sample, len(self.descriptors.descriptors)
                ),
                "descriptor": self.descriptors.metadata,
            }
            found = {"n_clusters": codebook.n_clusters} | {
                key: codebook.metadata.get(key) for key in list(expected)[1:]
            }
            for key, value in expected.items():
                if found[key] != value:
                    raise ValueError(
                        f"the cached codebook {path} has {key} {found[key]!r}, "
                        f"expected {value!r}; remove it to fit it again"
                    )
            self._codebooks[words] = codebook
            self.seconds[f"codebook K={words} (loaded)"] = time.perf_counter() - start
            fitted = False
        self.asmk_codebook_record = {
            "path": None if path is None else str(path),
            "fitted": fitted,
            "words": words,
            "sample": self.asmk_sample,
            "fit_seconds": codebook.metadata.get("fit_seconds"),
            "fit_cpu_seconds": codebook.metadata.get("fit_cpu_seconds"),
        }
        return codebook

    def vectors(
        self,
        clusters: int = DEFAULT_N_CLUSTERS,
        options: vlad.EncodingOptions | None = None,
    ) -> np.ndarray:
        """The database's VLAD vectors with :meth:`codebook` ``(clusters)``,
        made once per ``(clusters, options)``.

        Returns
        -------
        ndarray of shape (n_images, clusters * n_features)
        """
        options = options or vlad.EncodingOptions()
        key = (clusters, options)
        if key not in self._vectors:
            codebook = self.codebook(clusters)
            start = time.perf_counter()
            self._vectors[key] = vlad.encode(
                self.descriptors, codebook, options, n_jobs=self.n_jobs
            )
            label = f"encoding K={clusters}{_changes(options)}"
            self.seconds[label] = time.perf_counter() - start
        return self._vectors[key]

    @property
    def preset(self) -> VerificationPreset:
        """The verification settings that suit the descriptors, as ``vlad
        search`` chooses them from their record."""
        return verification_preset(self.descriptors.metadata)

    @property
    def min_inliers(self) -> int:
        """Inliers that verify an image in the variants' verification."""
        return self.verification.get("min_inliers", self.preset.settings.min_inliers)

    def query_rows(self) -> np.ndarray:
        """Rows of :attr:`descriptors` of the queries, in :attr:`queries`' order."""
        rows = {name: row for row, name in enumerate(self.descriptors.names)}
        return np.array([rows[name] for name in self.queries], dtype=np.int64)


def _changes(options: vlad.EncodingOptions) -> str:
    """The options that differ from the defaults, as ``", power=0.5"``."""
    default = vlad.EncodingOptions()
    return "".join(
        f", {item.name}={getattr(options, item.name)!r}"
        for item in dataclasses.fields(options)
        if getattr(options, item.name) != getattr(default, item.name)
    )


@dataclass(frozen=True)
class Variant:
    """A way to search, by name in :data:`VARIANTS`.

    Attributes
    ----------
    description : str
        One line for the page.
    setup : callable
        ``setup(prepared) -> state``: what the search needs, built offline.
    search : callable
        ``search(prepared, state) -> rankings``: query name to database
        names, best first, for every query of ``prepared.queries``.
    vocabulary : bool
        Whether it uses the ASMK vocabulary: its results then name the
        vocabulary's size (see :func:`vocabulary_name`).
    """

    description: str
    setup: Callable[[Prepared], Any]
    search: Callable[[Prepared, Any], Mapping[str, Sequence[str]]]
    vocabulary: bool = False


def vocabulary_name(
    name: str,
    words: int,
    multiple_assignment: int | None = None,
    stop_fraction: float = 0.0,
) -> str:
    """``name`` of an ASMK variant run with ``words`` words,
    ``multiple_assignment`` words per query descriptor and the stop list of
    ``stop_fraction``: itself with :data:`ASMK_WORDS`, the index's default
    (None) and no stop list, the size, ``ma<N>`` and ``stop<F>`` after
    ``asmk`` otherwise.

    Examples
    --------
    >>> vocabulary_name("asmk-spatial-50-qe", 16384), vocabulary_name("asmk", 5000)
    ('asmk-16k-spatial-50-qe', 'asmk-5000')
    >>> vocabulary_name("asmk-star", ASMK_WORDS)
    'asmk-star'
    >>> vocabulary_name("asmk-spatial-50", 16384, 3)
    'asmk-16k-ma3-spatial-50'
    >>> vocabulary_name("asmk", ASMK_WORDS, None, 0.3)
    'asmk-stop0.3'
    """
    prefix = "asmk"
    if words != ASMK_WORDS:
        prefix += "-" + (f"{words // 1024}k" if words % 1024 == 0 else str(words))
    if multiple_assignment is not None:
        prefix += f"-ma{multiple_assignment}"
    if stop_fraction:
        prefix += f"-stop{stop_fraction:g}"
    return name.replace("asmk", prefix, 1)


def verification_name(
    name: str, verification: Mapping[str, Any], preset: VerificationSettings
) -> str:
    """``name`` of a variant that verifies as ``vlad search`` does, run with
    ``verification``'s settings instead of those that suit the descriptors
    (``preset``): itself followed by those that differ (``-mutual``,
    ``-ratio0.95``, ``-min20``, ``-kp2048``, ``-kpall``). Other variants keep
    their names.

    Examples
    --------
    >>> from vlad.verification import VERIFICATION_PRESETS
    >>> sift = VERIFICATION_PRESETS["sift"]
    >>> mutual = {"matching": "mutual", "min_inliers": 20}
    >>> verification_name("asmk-spatial-50-qe", mutual, sift)
    'asmk-spatial-50-qe-mutual-min20'
    >>> verification_name("spatial-0.4-20", {"matching": "mutual"}, sift)
    'spatial-0.4-20'
    >>> verification_name("spatial-20", {"verify_keypoints": 0, "ratio": 0.95}, sift)
    'spatial-20-ratio0.95-kpall'
    >>> verification_name("spatial-20", {"ratio": 0.9}, VERIFICATION_PRESETS["aliked"])
    'spatial-20'
    """
    if "spatial-" not in name or "spatial-0.4" in name:
        return name
    # The preset's record names the keypoint cap as results files do.
    recorded = {
        "verify_keypoints" if key == "max_keypoints" else key: value
        for key, value in preset.record().items()
    }
    defaults = {"matching": LIBRARY_MATCHING, **recorded}
    changed = {
        key: value
        for key, value in verification.items()
        if value != defaults[key]
        and not (key == "verify_keypoints" and value == 0 and defaults[key] is None)
    }
    if "matching" in changed:
        name += f"-{changed['matching']}"
    if "ratio" in changed:
        name += f"-ratio{changed['ratio']:g}"
    if "min_inliers" in changed:
        name += f"-min{changed['min_inliers']}"
    if "verify_keypoints" in changed:
        keypoints = changed["verify_keypoints"]
        name += f"-kp{keypoints or 'all'}"
    return name


@dataclass
class Indexed:
    """An index of the database's vectors and the queries' vectors."""

    index: VectorIndex
    query_vectors: np.ndarray


def index_vectors(
    prepared: Prepared,
    *,
    clusters: int = DEFAULT_N_CLUSTERS,
    options: vlad.EncodingOptions | None = None,
    pca: int | None = None,
) -> Indexed:
    """Exact index of the database's vectors (optionally PCA-whitened)."""
    vectors = prepared.vectors(clusters, options)
    index = build_index(vectors, prepared.descriptors.names, pca=pca)
    return Indexed(index, vectors[prepared.query_rows()])


def search_index(
    prepared: Prepared,
    indexed: Indexed,
    *,
    expansion: QueryExpansion | None = None,
    depth: int | None = None,
    verification: Mapping[str, Any] | None = None,
) -> dict[str, list[str]]:
    """The whole database ranked for every query, as ``vlad search`` does:
    optionally query expansion, then spatial verification of the first
    ``depth`` (the query itself, first, among them) with ``verification``'s
    settings (default: :attr:`Prepared.verification`)."""
    results = indexed.index.search(
        indexed.query_vectors,
        indexed.index.n_images,
        query_names=prepared.queries,
        expansion=expansion,
    )
    return _verified(prepared, results, depth, verification)


def _verified(prepared: Prepared, results, depth, verification) -> dict:
    """``results``' rankings after spatial verification of the first ``depth``."""
    if depth:
        results = rerank_spatially(
            results,
            prepared.descriptors,
            prepared.descriptors,
            depth=depth,
            n_jobs=prepared.n_jobs,
            **(prepared.verification if verification is None else verification),
        )
    return results.rankings()


def index_asmk(prepared: Prepared, *, binary: bool) -> ASMKIndex:
    """ASMK (or, ``binary``, ASMK*) index of the database's descriptors with
    the vocabulary of :meth:`Prepared.asmk_codebook`."""
    codebook = prepared.asmk_codebook()
    return build_asmk_index(prepared.descriptors, codebook, binary=binary)


def asmk_queries(prepared: Prepared) -> vlad.DescriptorSets:
    """The queries' descriptor sets, with their keypoints, from the database's."""
    sets = prepared.descriptors
    return vlad.DescriptorSets.from_list(
        [sets[row] for row in prepared.query_rows()],
        names=prepared.queries,
        keypoints=[sets.keypoints_of(row) for row in prepared.query_rows()],
        metadata=sets.metadata,
    )


def search_asmk(
    prepared: Prepared, index: ASMKIndex, *, depth: int | None = None
) -> dict[str, list[str]]:
    """The whole database ranked for every query by the ASMK kernel
    (:attr:`Prepared.asmk_multiple_assignment` words per query descriptor,
    the index's default as ``vlad search`` unless told otherwise), optionally
    verified spatially (:func:`vlad.pipeline.search_verified` without its second
    search)."""
    queries = asmk_queries(prepared)
    if not depth:
        return index.search(
            queries,
            index.n_images,
            multiple_assignment=prepared.asmk_multiple_assignment,
            stop_fraction=prepared.asmk_stop_fraction,
        ).rankings()
    return _search_verified(prepared, index, queries, depth, expand=0).rankings()


def _search_verified(prepared, index, queries, depth, expand):
    """:func:`vlad.pipeline.search_verified` with the variants' settings."""
    verification = dict(prepared.verification)
    min_inliers = verification.pop("min_inliers", None)
    return search_verified(
        index,
        queries,
        prepared.descriptors,
        depth=depth,
        min_inliers=min_inliers,
        expand=expand,
        multiple_assignment=prepared.asmk_multiple_assignment,
        stop_fraction=prepared.asmk_stop_fraction,
        verification=verification,
        n_jobs=prepared.n_jobs,
    )


def search_asmk_expanded(
    prepared: Prepared,
    index: ASMKIndex,
    *,
    depth: int,
    expanded: int = EXPANDED_IMAGES,
    reverify: bool = False,
) -> dict[str, list[str]]:
    """ASMK, spatial verification of the top ``depth``, then query expansion
    by the verified images: :func:`vlad.pipeline.search_verified`, as ``vlad
    search --rerank spatial --expand-verified`` makes it. The query's
    descriptors and those of its first ``expanded`` verified images
    (:attr:`Prepared.min_inliers` or more) search the index again, as one
    query. The verified images keep their places first; the second search
    ranks all the others. With ``reverify``, the second search's first
    ``depth`` images not verified yet are verified too, and those verified
    follow the first ones, most inliers first."""
    sets = prepared.descriptors
    queries = asmk_queries(prepared)
    again = _search_verified(prepared, index, queries, depth, expand=expanded)
    if not reverify:
        return again.rankings()
    image_rows = {name: row for row, name in enumerate(sets.names)}
    settings = again.record["spatial_verification"]
    rankings = {}
    for result, row in zip(again.queries, prepared.query_rows(), strict=True):
        first = [
            name
            for name, inliers in zip(result.names, result.inliers, strict=True)
            if inliers >= prepared.min_inliers
        ]
        # Images verified by the first pass carry their inliers (0 or more);
        # the second search's first ``depth`` of the others are verified now.
        fresh = [
            name
            for name, inliers in zip(result.names, result.inliers, strict=True)
            if inliers < 0
        ]
        ranking, inliers = spatial_rerank(
            sets.keypoints_of(row),
            sets[row],
            np.array([image_rows[name] for name in fresh[:depth]], dtype=np.int64),
            sets,
            n_jobs=prepared.n_jobs,
            **{
                key: settings[key]
                for key in ("matching", "model", "ratio", "min_inliers")
            },
            verify_keypoints=settings["max_keypoints"],  # the record's name
        )
        first += [
            sets.names[int(found)] for found in ranking[inliers >= prepared.min_inliers]
        ]
        kept = set(first)
        rankings[result.query] = first + [
            name for name in result.names if name not in kept
        ]
    return rankings


def _variants() -> dict[str, Variant]:
    k = DEFAULT_N_CLUSTERS
    variants = {
        "defaults": Variant(
            f"vlad 0.4 defaults: RootSIFT, K={k}, power 1, intra and L2 "
            "normalisation, exact search",
            index_vectors,
            search_index,
        ),
        "k64": Variant(
            "K=64", functools.partial(index_vectors, clusters=64), search_index
        ),
        "k128": Variant(
            "K=128", functools.partial(index_vectors, clusters=128), search_index
        ),
        "power-0.5": Variant(
            "power normalisation 0.5 (signed square root)",
            functools.partial(index_vectors, options=vlad.EncodingOptions(power=0.5)),
            search_index,
        ),
        f"pca-{PCA_DIMENSION}": Variant(
            f"PCA-whitening to {PCA_DIMENSION} dimensions, learnt on the database",
            functools.partial(index_vectors, pca=PCA_DIMENSION),
            search_index,
        ),
        "qe": Variant(
            "alpha query expansion (3 neighbours, alpha 3: vlad search --rerank qe)",
            index_vectors,
            functools.partial(search_index, expansion=QueryExpansion()),
        ),
    }
    for depth in (20, 50, 100):
        variants[f"spatial-0.4-{depth}"] = Variant(
            f"vlad 0.4's spatial verification of the top {depth} (ratio test, "
            "affine RANSAC, 8 inliers: --matching ratio --geometry affine "
            f"--min-inliers 8 --verify-keypoints 0 --rerank-depth {depth})",
            index_vectors,
            functools.partial(search_index, depth=depth, verification=SPATIAL_04),
        )
    for depth in (20, 50, 100):
        variants[f"spatial-{depth}"] = Variant(
            f"spatial verification of the top {depth} (vlad search --rerank "
            f"spatial --rerank-depth {depth}: mutual nearest neighbours with "
            "the ratio test, fundamental matrix by MAGSAC++)",
            index_vectors,
            functools.partial(search_index, depth=depth),
        )
    for binary, name, label in ((True, "asmk-star", "ASMK*"), (False, "asmk", "ASMK")):
        variants[name] = Variant(
            f"{label} over an inverted file (vlad index --method asmk"
            f"{'' if binary else ' --full'})",
            functools.partial(index_asmk, binary=binary),
            search_asmk,
            vocabulary=True,
        )
    for depth in (20, 50, 100):
        variants[f"asmk-spatial-{depth}"] = Variant(
            f"ASMK, then spatial verification of the top {depth}",
            functools.partial(index_asmk, binary=False),
            functools.partial(search_asmk, depth=depth),
            vocabulary=True,
        )
    for depth in (20, 50, 100):
        variants[f"asmk-spatial-{depth}-qe"] = Variant(
            f"ASMK, spatial verification of the top {depth}, then the query's "
            f"descriptors and those of its first {EXPANDED_IMAGES} verified images "
            "search again as one query; the verified images stay first",
            functools.partial(index_asmk, binary=False),
            functools.partial(search_asmk_expanded, depth=depth),
            vocabulary=True,
        )
    for depth in (20, 50):
        variants[f"asmk-spatial-{depth}-qe-verified"] = Variant(
            f"asmk-spatial-{depth}-qe, then spatial verification of the second "
            f"search's first {depth} images not verified yet; those verified "
            "follow the first ones",
            functools.partial(index_asmk, binary=False),
            functools.partial(search_asmk_expanded, depth=depth, reverify=True),
            vocabulary=True,
        )
    return variants


#: Name -> :class:`Variant`, in the order they run by default.
VARIANTS: dict[str, Variant] = _variants()


def _json_step_map(step_map: dict) -> dict:
    """:attr:`vlad.evaluation.Evaluation.step_map` for JSON: NaN as None."""

    def number(value: float) -> float | None:
        return None if math.isnan(value) else value

    return {
        "mean": number(step_map["mean"]),
        "by_tag": {tag: number(value) for tag, value in step_map["by_tag"].items()},
    }


def run_variant(prepared: Prepared, name: str) -> dict:
    """Set up, search and evaluate one variant of :data:`VARIANTS`.

    Returns
    -------
    dict
        ``variant`` (``name``, or :func:`vocabulary_name`'s for an ASMK
        variant), ``description``, ``setup_seconds``, ``search_seconds``,
        ``ms_per_query`` (wall clock), ``cpu_ms_per_query`` (CPU time of the
        process's threads), ``load_average`` (the machine's over the last
        minute, when the search ended), ``evaluation`` (:meth:`Evaluation.to_dict`),
        ``step_map`` (:attr:`vlad.evaluation.Evaluation.step_map`, NaN as
        None) and, for an ASMK index, ``index`` (its ``nbytes`` and
        ``n_entries``).

    Raises
    ------
    ValueError
        ``name`` is not a variant.
    """
    if name not in VARIANTS:
        raise ValueError(f"Unknown variant {name!r}; expected one of {list(VARIANTS)}")
    variant = VARIANTS[name]
    before = sum(prepared.seconds.values())
    start = time.perf_counter()
    state = variant.setup(prepared)
    # Codebooks and vectors shared with other variants are preparation.
    setup_seconds = (
        time.perf_counter() - start - (sum(prepared.seconds.values()) - before)
    )
    start, cpu_start = time.perf_counter(), time.process_time()
    rankings = variant.search(prepared, state)
    search_seconds = time.perf_counter() - start
    # CPU time of every thread: what a query costs, however busy the machine.
    cpu_seconds = time.process_time() - cpu_start
    evaluation = evaluate(rankings, prepared.ground_truth, ks=KS)
    description = variant.description
    if variant.vocabulary:
        assigned = prepared.asmk_multiple_assignment
        if assigned == state.default_multiple_assignment:
            assigned = None  # the default, named as such
        name = vocabulary_name(
            name, prepared.asmk_words, assigned, prepared.asmk_stop_fraction
        )
        description += f"; {prepared.asmk_words} words" + (
            f" fitted on {prepared.asmk_sample} sampled descriptors"
            if prepared.asmk_sample != SAMPLE
            else ""
        )
        if assigned is not None:
            description += f"; multiple assignment {assigned}"
    preset = prepared.preset
    verified_name = verification_name(name, prepared.verification, preset.settings)
    if "spatial-" in name and "spatial-0.4" not in name:
        description += f"; verification as suits {preset.name} ({preset.reason})"
    if verified_name != name:
        name = verified_name
        description += ", but with " + ", ".join(
            f"{key} {value}" for key, value in sorted(prepared.verification.items())
        )
    return {
        "variant": name,
        "description": description,
        "setup_seconds": setup_seconds,
        "search_seconds": search_seconds,
        "ms_per_query": 1000 * search_seconds / len(prepared.queries),
        "cpu_ms_per_query": 1000 * cpu_seconds / len(prepared.queries),
        # How busy the machine was: the wall clock means little without it.
        "load_average": os.getloadavg()[0],
        "evaluation": evaluation.to_dict(),
        "step_map": _json_step_map(evaluation.step_map),
    } | (
        {"index": {"nbytes": state.nbytes, "n_entries": state.n_entries}}
        if isinstance(state, ASMKIndex)
        else {}
    )


def _image_names(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.iterdir() if path.is_file())


def prepare(
    dataset: Path,
    work: Path,
    *,
    descriptors: Path | None = None,
    n_jobs: int | None = None,
) -> Prepared:
    """Read (or extract once into ``work``) the descriptors of every image,
    and the ground truth.

    Raises
    ------
    ValueError
        ``descriptors`` are not of the folder's images.
    """
    images = dataset / "images"
    cache = work / "descriptors.npz"
    seconds = {}
    start = time.perf_counter()
    if descriptors is not None:
        sets, _ = read_descriptor_sets(descriptors)
    elif cache.exists():
        sets = vlad.DescriptorSets.load(cache)
    else:
        sets, _ = vlad.extract_images(images, n_jobs=n_jobs)
        work.mkdir(parents=True, exist_ok=True)
        sets.save(cache)
    seconds["descriptors"] = time.perf_counter() - start
    expected = _image_names(images)
    if sorted(sets.names) != expected:
        missing = sorted(set(expected) - set(sets.names))
        extra = sorted(set(sets.names) - set(expected))
        raise ValueError(
            f"the descriptors {descriptors or cache} are not of the {len(expected)} "
            f"images of {images}: "
            + (f"{missing[0]!r} has none" if missing else f"{extra[0]!r} is not there")
        )
    if sets.keypoints is None:
        raise ValueError(
            f"the descriptors {descriptors or cache} hold no keypoints; spatial "
            "verification needs them (vlad extract keeps them)"
        )
    truth = load_ground_truth(dataset / "ground_truth.json")
    return Prepared(sets, truth, list(truth), n_jobs, seconds)


def _percent(value) -> str:
    return "-" if value is None else f"{100 * value:.2f}"


def format_line(row: dict) -> str:
    """One variant's overall figures on one line."""
    mean = row["evaluation"]["mean"]
    return (
        f"{row['variant']}: mAP {_percent(mean['mAP'])}, R@1 "
        f"{_percent(mean['recall@1'])}, R@5 {_percent(mean['recall@5'])}, "
        f"{row['ms_per_query']:.2f} ms/query"
    )


def _dataset_record(dataset: Path) -> dict | None:
    path = dataset / "dataset.json"
    if not path.is_file():
        return None
    record = json.loads(path.read_text(encoding="utf-8"))
    return {key: record.get(key) for key in ("format_version", "manifest", "counts")}


def verification_settings(arguments: argparse.Namespace) -> dict:
    """The :attr:`Prepared.verification` of the command line's options: those
    given that take effect (``--matching mutual`` uses no ratio), and the
    matching unless it is ``vlad search``'s.

    Raises
    ------
    ValueError
        A value the library refuses (one line,
        :func:`vlad.verification.check_verification`'s), before anything runs.
    """
    settings = {"matching": arguments.matching}
    if arguments.matching != "mutual" and arguments.ratio is not None:
        settings["ratio"] = arguments.ratio
    if arguments.min_inliers is not None:
        settings["min_inliers"] = arguments.min_inliers
    if arguments.verify_keypoints is not None:
        settings["verify_keypoints"] = arguments.verify_keypoints
    check_verification(**settings)
    if settings["matching"] == LIBRARY_MATCHING:
        del settings["matching"]
    return settings


def main(argv: Sequence[str] | None = None) -> int:
    """The command line; returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.realviews.run",
        description="Evaluate search variants on a real-view benchmark folder.",
    )
    parser.add_argument("dataset", type=Path, metavar="DATASET")
    parser.add_argument(
        "--work", type=Path, help="where descriptors are kept (default: DATASET/work)"
    )
    parser.add_argument(
        "--descriptors", type=Path, metavar="PATH",
        help="a vlad extract file, or hloc's local features (.h5), of "
        "DATASET/images to use instead",
    )  # fmt: skip
    parser.add_argument(
        "--variant", action="extend", nargs="+", choices=list(VARIANTS),
        metavar="NAME",
        help=f"one or more (default: all: {', '.join(VARIANTS)})",
    )  # fmt: skip
    parser.add_argument("--jobs", type=int, default=None, help="default: every core")
    parser.add_argument(
        "--asmk-words", type=int, default=ASMK_WORDS, metavar="N",
        help=f"words of the ASMK vocabulary (default: {ASMK_WORDS})",
    )  # fmt: skip
    parser.add_argument(
        "--asmk-sample", type=int, default=SAMPLE, metavar="N",
        help=f"descriptors sampled to fit it (default: {SAMPLE})",
    )  # fmt: skip
    parser.add_argument(
        "--asmk-multiple-assignment", type=int, default=None, metavar="N",
        help="nearest words of each query descriptor in the ASMK searches "
        "(default: the index's, 5 for ASMK*, 3 for ASMK)",
    )  # fmt: skip
    parser.add_argument(
        "--asmk-stop-fraction", type=float, default=0.0, metavar="F",
        help="the ASMK searches leave out the commonest words holding at most "
        "this fraction of the index's entries (default: 0, none)",
    )  # fmt: skip
    parser.add_argument(
        "--codebook-cache", type=Path, metavar="DIR",
        help="keep the ASMK vocabulary in DIR/asmk-N.npz: fitted once, then loaded",
    )  # fmt: skip
    parser.add_argument(
        "--matching", choices=["mutual+ratio", "mutual"], default="mutual+ratio",
        help="how the verifying variants pair descriptors, as vlad search "
        "--matching (default: mutual+ratio)",
    )  # fmt: skip
    parser.add_argument(
        "--ratio", type=float, default=None, metavar="R",
        help="Lowe's ratio of --matching mutual+ratio (default: as suits the "
        "descriptors, as vlad search chooses: 0.8 for SIFT, 0.9 for ALIKED)",
    )  # fmt: skip
    parser.add_argument(
        "--min-inliers", type=int, default=None, metavar="N",
        help="inliers that verify an image (default: as suits the descriptors: "
        "12 for SIFT and ALIKED)",
    )  # fmt: skip
    parser.add_argument(
        "--verify-keypoints", type=int, default=None, metavar="N",
        help="each image's strongest keypoints matched; 0 for all (default: as "
        "suits the descriptors: 1024)",
    )  # fmt: skip
    parser.add_argument("--json", type=Path, metavar="PATH")
    arguments = parser.parse_args(argv)
    names = arguments.variant or list(VARIANTS)
    try:
        verification = verification_settings(arguments)
        prepared = prepare(
            arguments.dataset,
            arguments.work or arguments.dataset / "work",
            descriptors=arguments.descriptors,
            n_jobs=arguments.jobs,
        )
        prepared.asmk_words = arguments.asmk_words
        prepared.asmk_sample = arguments.asmk_sample
        prepared.asmk_multiple_assignment = arguments.asmk_multiple_assignment
        prepared.asmk_stop_fraction = arguments.asmk_stop_fraction
        prepared.codebook_cache = arguments.codebook_cache
        prepared.verification = verification
        if any(VARIANTS[name].vocabulary for name in names):
            prepared.asmk_codebook()
    except (ValueError, FileNotFoundError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    record = prepared.asmk_codebook_record
    if record:
        how = "fitted" if record["fitted"] else f"loaded from {record['path']}"
        if record["fit_seconds"] is not None:
            how += (
                f"{', fitted' * (not record['fitted'])} in "
                f"{record['fit_seconds']:.1f} s ({record['fit_cpu_seconds']:.1f} CPU s)"
            )
        print(f"ASMK vocabulary of {record['words']} words {how}", flush=True)
    report = {
        "machine": machine_info(),
        "dataset": _dataset_record(arguments.dataset),
        "descriptors": prepared.descriptors.metadata,
        "verification_preset": prepared.preset.record()
        | {"settings": prepared.preset.settings.record()},
        "n_images": len(prepared.descriptors),
        "n_queries": len(prepared.queries),
        "command": shlex.join(
            ["python", "-m", "benchmarks.realviews.run", *(argv or sys.argv[1:])]
        ),
        "settings": {
            "variant": names,
            "jobs": arguments.jobs,
            "asmk_words": arguments.asmk_words,
            "asmk_sample": arguments.asmk_sample,
            "asmk_multiple_assignment": arguments.asmk_multiple_assignment,
            "asmk_stop_fraction": arguments.asmk_stop_fraction,
            "codebook_cache": arguments.codebook_cache,
            "verification": prepared.verification,
        },
        "preparation_seconds": prepared.seconds,
        "asmk_codebook": prepared.asmk_codebook_record,
        "variants": [],
    }
    for name in names:
        row = run_variant(prepared, name)
        report["variants"].append(row)
        print(format_line(row), flush=True)
        if arguments.json:
            # Written after each variant: a long run keeps what it measured.
            text = json.dumps(report, indent=1, default=str) + "\n"
            with atomic_write(arguments.json) as handle:
                handle.write(text.encode("utf-8"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
