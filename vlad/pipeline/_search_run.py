"""A search from files, as ``vlad search`` makes it: an index folder, queries
given as vectors, descriptors or images, then optional query expansion,
spatial re-ranking, and query expansion by the verified images."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from vlad.asmk._files import is_asmk_index, load_asmk_index
from vlad.core._codebook import Codebook
from vlad.core._descriptors import DescriptorSets
from vlad.core._encoding import encode
from vlad.core._parameters import STOP_FRACTION
from vlad.core._pool import Progress
from vlad.errors import VladError
from vlad.formats._descriptor_files import read_descriptor_file
from vlad.images._files import MAX_PIXELS
from vlad.pipeline._batch import BatchReport
from vlad.pipeline._queries import encoding_options, read_asmk_queries, read_queries
from vlad.pipeline._verified_search import search_verified
from vlad.search._expansion import QueryExpansion
from vlad.search._index import load_index
from vlad.search._results import SearchResults
from vlad.verification._expansion import expand_verified as expand_by_verified
from vlad.verification._reranking import rerank_spatially

__all__ = ["RERANKINGS", "SearchRun", "search_index"]

PathOrPaths = str | os.PathLike | Sequence[str | os.PathLike]

#: The re-rankings :func:`search_index` makes, in the order it makes them.
RERANKINGS = ("qe", "spatial")


@dataclass(frozen=True)
class SearchRun:
    """What :func:`search_index` found, and what it read to find it.

    Attributes
    ----------
    results : SearchResults
        Every query's ranked images.
    report : BatchReport or None
        Query images skipped or without descriptors, when queries were made
        from images or descriptors; None for query vectors.
    query_descriptors : DescriptorSets or None
        The queries' descriptors with their keypoints, when ``rerank`` held
        ``"spatial"``.
    database_descriptors : DescriptorSets or None
        The index images' descriptors, when ``rerank`` held ``"spatial"``.
    max_pixels : int
        The limit on an image's pixels that the index's images were described
        with (as its record says; :data:`~vlad.images._files.MAX_PIXELS` when
        it does not): a page of the results reads them within it too.
    """

    results: SearchResults
    report: BatchReport | None = None
    query_descriptors: DescriptorSets | None = None
    database_descriptors: DescriptorSets | None = None
    max_pixels: int = MAX_PIXELS


def search_index(
    index: str | os.PathLike,
    queries: PathOrPaths,
    *,
    codebook: Codebook | str | os.PathLike | None = None,
    top: int = 10,
    rerank: Sequence[str] = (),
    qe_neighbours: int = 3,
    qe_alpha: float = 3.0,
    rerank_depth: int | None = None,
    min_inliers: int | None = None,
    verification: Mapping[str, object] | None = None,
    expand_verified: int = 0,
    database_descriptors: str | os.PathLike | None = None,
    parameters: str | None = None,
    multiple_assignment: int | None = None,
    stop_fraction: float = STOP_FRACTION.default,
    n_jobs: int | None = None,
    progress: Progress | None = None,
) -> SearchRun:
    """Search an index folder for the best images of each query.

    Parameters
    ----------
    index : path-like
        An index folder written by :meth:`vlad.search.VectorIndex.save` (``vlad
        index``) or by :meth:`vlad.asmk.ASMKIndex.save` (``vlad index --method
        asmk``); its kind is read from the folder.
    queries : path-like or sequence of path-like
        A vectors file or folder (or hloc's global features), a descriptors
        file (or hloc's local features), or image files and folders, as in
        :func:`vlad.pipeline.read_queries`. An ASMK index takes descriptors or
        images.
    codebook : Codebook or path-like, optional
        The index's codebook, needed to encode descriptors or images for a
        VLAD index; an ASMK index holds its own (one given must be the same).
    top : int, default=10
        Images per query.
    rerank : sequence of {"qe", "spatial"}, default=()
        ``"qe"``: query expansion (VLAD index only); ``"spatial"``: geometric
        verification of the first ``rerank_depth`` results. Query expansion
        runs first.
    qe_neighbours : int, default=3
        Results averaged into each query by query expansion.
    qe_alpha : float, default=3.0
        A neighbour's weight is its similarity to this power (0: average).
    rerank_depth : int, optional
        Results per query verified by spatial re-ranking; by default, as
        suits the descriptors (:data:`vlad.verification.VERIFICATION_PRESETS`: 20
        for SIFT, 50 for ALIKED).
    min_inliers : int, optional
        Inliers that verify a result; by default, as suits the descriptors
        (12 for both SIFT and ALIKED).
    verification : mapping, optional
        ``matching``, ``ratio``, ``model``, ``reprojection_threshold``,
        ``verify_keypoints`` and ``preset`` of
        :func:`vlad.verification.rerank_spatially`; ``ratio`` and
        ``verify_keypoints`` left out (or None) suit the descriptors as
        ``rerank_depth`` does.
    expand_verified : int, default=0
        After spatial re-ranking, search again with each query's descriptors
        and those of its first ``expand_verified`` verified images, as one
        query; the verified images keep their places
        (:func:`vlad.verification.expand_verified`). 0: no second search.
    database_descriptors : path-like, optional
        The index images' descriptors with keypoints (``vlad extract``'s file
        or hloc's local features), needed by spatial re-ranking.
    parameters : str, optional
        faiss search parameters for this search, such as ``"nprobe=32"`` (VLAD
        index only).
    multiple_assignment : int, optional
        ASMK index: words each query descriptor is assigned to (default: the
        index's, 5 for ASMK*, 3 for ASMK).
    stop_fraction : float, default=0.0
        ASMK index: the queries leave out the index's commonest words, which
        together hold at most this fraction of its entries (see
        :meth:`vlad.asmk.ASMKIndex.search`).
    n_jobs : int, optional
        Processes that describe query images and verify results; with an
        ASMK index, also the threads that rank its queries.
    progress : callable, optional
        ``progress(n_done, n_total)``, called as query images are described.

    Returns
    -------
    SearchRun
        The results, and the report and descriptors read on the way.

    Raises
    ------
    VladError
        An unknown re-ranking, spatial re-ranking without
        ``database_descriptors``, ``expand_verified`` without spatial
        re-ranking, query expansion or ``parameters`` with an ASMK index, or
        ``multiple_assignment`` or ``stop_fraction`` with a VLAD index.
    ValueError, OSError
        As the index, queries and descriptors are read and searched.

    See Also
    --------
    vlad.search.VectorIndex.search, vlad.asmk.ASMKIndex.search
    vlad.verification.rerank_spatially

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import vlad
    >>> from vlad.pipeline import search_index
    >>> quick = {"max_side": 256}  # small images, to be quick
    >>> codebook, _ = vlad.fit_codebook_to_images(
    ...     "data", 4, descriptor_options=quick, n_jobs=1
    ... )
    >>> encoded = vlad.encode_images("data", codebook, n_jobs=1)
    >>> folder = pathlib.Path(tempfile.mkdtemp(), "index")
    >>> vlad.search.build_index(encoded.vectors, encoded.names).save(folder)
    >>> run = search_index(folder, "data/chelsea.jpg", codebook=codebook, top=2)
    >>> run.results[0].query, run.results[0].names[0]
    ('chelsea.jpg', 'chelsea.jpg')
    """
    rerank = tuple(rerank)
    unknown = [name for name in rerank if name not in RERANKINGS]
    if unknown:
        raise VladError(
            f"rerank must hold only {' and '.join(map(repr, RERANKINGS))}; "
            f"got {unknown[0]!r}"
        )
    spatial = "spatial" in rerank
    if spatial and database_descriptors is None:
        raise VladError("spatial re-ranking needs database_descriptors")
    if (
        isinstance(expand_verified, bool)
        or not isinstance(expand_verified, int)
        or expand_verified < 0
    ):
        raise VladError(
            f"expand_verified must be an integer >= 0; got {expand_verified!r}"
        )
    if expand_verified and not spatial:
        raise VladError(
            "expand_verified expands queries by their verified images: it needs "
            "spatial re-ranking"
        )
    report = query_sets = None
    if is_asmk_index(index):
        if "qe" in rerank or parameters is not None:
            raise VladError(
                "query expansion and search parameters do not apply to an ASMK index"
            )
        asmk_index = load_asmk_index(index, mmap=True)
        query_sets, report = read_asmk_queries(
            _as_list(queries), asmk_index, codebook, n_jobs=n_jobs, progress=progress
        )
        max_pixels = _recorded_max_pixels(asmk_index.source)
        if spatial:
            database_sets = read_descriptor_file(database_descriptors)
            results = search_verified(
                asmk_index,
                query_sets,
                database_sets,
                top,
                depth=rerank_depth,
                min_inliers=min_inliers,
                expand=expand_verified,
                multiple_assignment=multiple_assignment,
                stop_fraction=stop_fraction,
                verification=verification,
                n_jobs=n_jobs,
            )
            return SearchRun(results, report, query_sets, database_sets, max_pixels)
        results = asmk_index.search(
            query_sets,
            top,
            multiple_assignment=multiple_assignment,
            stop_fraction=stop_fraction,
            n_jobs=n_jobs,
        )
    else:
        if multiple_assignment is not None:
            raise VladError("multiple_assignment applies only to an ASMK index")
        if stop_fraction != STOP_FRACTION.default:
            raise VladError("stop_fraction applies only to an ASMK index")
        if codebook is not None and not isinstance(codebook, Codebook):
            codebook = Codebook.load(codebook)
        vector_index = load_index(index, mmap=True, parameters=parameters)
        found = read_queries(
            _as_list(queries),
            vector_index,
            codebook,
            keep_descriptors=spatial,
            n_jobs=n_jobs,
            progress=progress,
        )
        report, query_sets = found.report, found.descriptor_sets
        expansion = QueryExpansion(qe_neighbours, qe_alpha) if "qe" in rerank else None
        results = vector_index.search(
            found.vectors, top, query_names=found.names, expansion=expansion
        )
        max_pixels = _recorded_max_pixels(vector_index.source)

        def search_again(sets: DescriptorSets, k: int) -> SearchResults:
            vectors = encode(
                sets, codebook, encoding_options(vector_index), n_jobs=n_jobs
            )
            return vector_index.search(
                vectors, k, query_names=list(sets.names), expansion=expansion
            )

    if not spatial:
        return SearchRun(results, report, max_pixels=max_pixels)
    database_sets = read_descriptor_file(database_descriptors)
    results = rerank_spatially(
        results,
        query_sets,
        database_sets,
        depth=rerank_depth,
        min_inliers=min_inliers,
        n_jobs=n_jobs,
        **dict(verification or {}),
    )
    if expand_verified:
        results = expand_by_verified(
            results, query_sets, database_sets, search_again, images=expand_verified
        )
    return SearchRun(results, report, query_sets, database_sets, max_pixels)


def _recorded_max_pixels(source: Mapping) -> int:
    """The ``max_pixels`` of an index's descriptor options; the default when
    its record has none (vectors from hloc, or from another extractor)."""
    options = source.get("descriptor")
    value = options.get("max_pixels") if isinstance(options, Mapping) else None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return MAX_PIXELS
    return value


def _as_list(queries: PathOrPaths) -> list:
    """One path, or a sequence of them, as a list (what the readers take)."""
    if isinstance(queries, str | os.PathLike):
        return [queries]
    return list(queries)
