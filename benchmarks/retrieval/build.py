"""Build the retrieval benchmark's folder from the bundled and installed photos.

::

    python -m benchmarks.retrieval.build OUT [--source NAME_OR_FOLDER ...]
        [--seed 0] [--max-side 1024] [--distractors N] [--every 2] [--overwrite]

writes::

    OUT/database/originals/<source>-<stem>.jpg
    OUT/database/distractors/<source>-<stem>.jpg
    OUT/queries/<source>-<stem>__<transform>-<tier>.jpg
    OUT/queries/<source>-<stem>__real-pair-<tier>.jpg
    OUT/ground_truth.json   query name -> {"relevant", "junk", "tags"}
    OUT/sources.json        every source photograph: origin, package, licence, role
    OUT/dataset.json        seed, max_side, the transform table, sources, counts

Names in ``ground_truth.json`` are relative to ``OUT/queries`` (the keys) and
to ``OUT/database`` (the relevant images), with ``/`` separators.

Which photograph plays which part:

- every photograph of a folder source (the bundled ``data/`` included) is an
  original;
- of the wallpaper packages' photographs, taken together in name order,
  every ``every``-th (the first, the ``every + 1``-th, ...) is an original
  and the others are distractors; ``opencv-doc``'s photographs are all
  distractors;
- each real pair's first photograph is an original, its second a query;
- a distractor whose thumbnail hash is within :data:`DUPLICATE_DISTANCE` bits
  of an original's, a pair's or an earlier distractor's is left out as a
  duplicate (a resolution variant, a copy in another folder); ``distractors``
  then keeps that many, evenly spaced in name order.

Every image is shrunk so its longer side is at most ``max_side`` and stored
as JPEG at :data:`~benchmarks.retrieval.transforms.STORED_QUALITY`; the
queries are made from the shrunk original. The folder is built
hidden beside ``OUT`` and takes its place when complete
(:func:`benchmarks.files.replace_folder`).
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from benchmarks.files import replace_folder
from benchmarks.retrieval.sources import (
    BUNDLED_FOLDER,
    PACKAGE_SOURCES,
    RealPair,
    SourceImage,
    find_folder,
    find_package,
    find_real_pairs,
)
from benchmarks.retrieval.transforms import (
    STORED_QUALITY,
    TIERS,
    TRANSFORMS,
    apply_transform,
    query_quality,
    query_rng,
    resize_to_max_side,
)

__all__ = [
    "DEFAULT_SOURCES",
    "DUPLICATE_DISTANCE",
    "FORMAT_VERSION",
    "Selection",
    "build_dataset",
    "main",
    "read_photo",
    "select_distractors",
    "summary",
    "thumbnail_hash",
]

FORMAT_VERSION = 1
#: Every source a default build looks for: the bundled photographs, then the
#: packages (the real pairs come with ``opencv``).
DEFAULT_SOURCES = ("data", *PACKAGE_SOURCES)
#: Thumbnail hashes this many bits apart or fewer (of 64) are one photograph.
DUPLICATE_DISTANCE = 4


@dataclasses.dataclass
class Selection:
    """The photographs of a build, by the part they play.

    Attributes
    ----------
    originals : list of SourceImage
        Each gets one query per transform and tier.
    distractors : list of SourceImage
    pairs : list of (SourceImage, SourceImage, RealPair)
        The first photograph is also among ``originals``.
    duplicates : list of (SourceImage, str)
        Distractors left out, with the name of the photograph they repeat.
    found, missing : list of str
        The sources that gave photographs, and those that gave none.
    """

    originals: list[SourceImage]
    distractors: list[SourceImage]
    pairs: list[tuple[SourceImage, SourceImage, RealPair]]
    duplicates: list[tuple[SourceImage, str]]
    found: list[str]
    missing: list[str]


def read_photo(path: str | Path, max_side: int) -> np.ndarray:
    """A photograph in colour (BGR, ``uint8``), shrunk to ``max_side``.

    Raises
    ------
    ValueError
        OpenCV cannot decode the file.
    """
    import cv2

    encoded = np.frombuffer(Path(path).read_bytes(), np.uint8)
    image = cv2.imdecode(encoded, cv2.IMREAD_COLOR)
    if image is None:
        raise ValueError(f"{path} is not an image OpenCV can decode")
    return resize_to_max_side(image, max_side)


def thumbnail_hash(image: np.ndarray) -> np.ndarray:
    """The 64-bit difference hash of an image: its grey 9 x 8 thumbnail's
    horizontal gradient signs.

    Parameters
    ----------
    image : ndarray of uint8 of shape (height, width, 3)

    Returns
    -------
    bits : ndarray of bool of shape (64,)

    Examples
    --------
    >>> ramp = np.tile(np.arange(0, 256, 4, dtype=np.uint8), (64, 1))
    >>> bits = thumbnail_hash(np.dstack([ramp] * 3))
    >>> int(bits.sum())
    64
    """
    import cv2

    grey = cv2.cvtColor(image, cv2.COLOR_BGR2GRAY)
    thumbnail = cv2.resize(grey, (9, 8), interpolation=cv2.INTER_AREA).astype(int)
    return (thumbnail[:, 1:] > thumbnail[:, :-1]).ravel()


def select_distractors(
    candidates: Sequence[tuple[str, np.ndarray]],
    protected: Sequence[tuple[str, np.ndarray]],
    limit: int | None = None,
    distance: int = DUPLICATE_DISTANCE,
) -> tuple[list[int], list[tuple[int, str]]]:
    """Which candidate distractors to keep, in their order.

    Parameters
    ----------
    candidates : sequence of (name, bits)
        The candidates in name order, each with its :func:`thumbnail_hash`.
    protected : sequence of (name, bits)
        The originals and the pairs' photographs.
    limit : int, optional
        At most this many are kept, evenly spaced among the others.
    distance : int
        A candidate this many bits or fewer from a protected photograph or an
        earlier kept candidate is a duplicate.

    Returns
    -------
    kept : list of int
        Indices into ``candidates``.
    duplicates : list of (int, str)
        Index of each duplicate and the name of the photograph it repeats.

    Examples
    --------
    >>> a, b = np.zeros(64, bool), np.ones(64, bool)
    >>> select_distractors([("x", a), ("y", b), ("z", b)], [("o", a)])
    ([1], [(0, 'o'), (2, 'y')])
    """
    seen = list(protected)
    kept: list[int] = []
    duplicates: list[tuple[int, str]] = []
    for index, (name, bits) in enumerate(candidates):
        near = [
            other for other, seen_bits in seen if (bits != seen_bits).sum() <= distance
        ]
        if near:
            duplicates.append((index, near[0]))
            continue
        seen.append((name, bits))
        kept.append(index)
    if limit is not None and limit < len(kept):
        kept = [kept[i * len(kept) // limit] for i in range(limit)]
    return kept, duplicates


def _find(source: str | Path) -> tuple[str, list[SourceImage], str]:
    """``(name, photographs, role)`` of one ``--source``: a package source's
    name, ``"data"`` or a folder (role ``"original"``)."""
    if isinstance(source, str) and source in PACKAGE_SOURCES:
        return source, find_package(source), PACKAGE_SOURCES[source].role
    if source == "data" or Path(source).resolve() == BUNDLED_FOLDER:
        return "data", find_folder(BUNDLED_FOLDER, "data"), "original"
    if not Path(source).is_dir():
        raise FileNotFoundError(
            f"source={str(source)!r} is neither a folder nor one of "
            f"{sorted(['data', *PACKAGE_SOURCES])}"
        )
    images = find_folder(source)
    return (images[0].source if images else Path(source).name), images, "original"


def _select(
    sources: Sequence[str | Path], every: int, limit: int | None, max_side: int
) -> Selection:
    """Find the photographs of ``sources`` and give each its part."""
    fixed: list[SourceImage] = []
    split: list[SourceImage] = []
    candidates: list[SourceImage] = []
    pairs: list[tuple[SourceImage, SourceImage, RealPair]] = []
    found, missing = [], []
    for source in sources:
        name, images, role = _find(source)
        (found if images else missing).append(name)
        {"original": fixed, "split": split, "distractor": candidates}[role].extend(
            images
        )
        if name == "opencv" and images:
            pairs = find_real_pairs()
    split.sort(key=lambda image: image.name)
    originals = fixed + split[::every] + [database for database, _, _ in pairs]
    candidates = sorted(
        candidates + [image for i, image in enumerate(split) if i % every],
        key=lambda image: image.name,
    )
    names = [image.name for image in originals + candidates]
    names += [query.name for _, query, _ in pairs]
    repeated = sorted(name for name, n in collections.Counter(names).items() if n > 1)
    if repeated:
        raise ValueError(f"two sources give photographs named {repeated}")
    # "__" separates a query's original from its transform.
    unsplittable = sorted(name for name in names if "__" in name)
    if unsplittable:
        raise ValueError(f"photograph names may not hold '__': {unsplittable}")

    def hashes(images):
        return [
            (im.name, thumbnail_hash(read_photo(im.path, max_side))) for im in images
        ]

    protected = hashes(originals + [query for _, query, _ in pairs])
    kept, duplicates = select_distractors(hashes(candidates), protected, limit)
    return Selection(
        originals=sorted(originals, key=lambda image: image.name),
        distractors=[candidates[i] for i in kept],
        pairs=pairs,
        duplicates=[(candidates[i], other) for i, other in duplicates],
        found=found,
        missing=missing,
    )


def _write_jpeg(path: Path, image: np.ndarray, quality: int) -> None:
    import cv2

    ok, encoded = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, quality])
    if not ok:
        raise ValueError(f"OpenCV could not encode {path.name} as JPEG")
    path.write_bytes(encoded.tobytes())


def _write_json(path: Path, value) -> None:
    path.write_text(
        json.dumps(value, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
    )


def _write(folder: Path, selection: Selection, seed: int, max_side: int) -> dict:
    """Write every image and the ground truth into ``folder``; the counts."""
    for sub in ("database/originals", "database/distractors", "queries"):
        (folder / sub).mkdir(parents=True)
    ground_truth: dict[str, dict] = {}
    records: list[dict] = []
    pair_of = {
        database.name: (query, pair) for database, query, pair in selection.pairs
    }
    for original in selection.originals:
        relevant = f"originals/{original.name}.jpg"
        image = read_photo(original.path, max_side)
        _write_jpeg(folder / "database" / relevant, image, STORED_QUALITY)
        record = {"name": f"database/{relevant}", "role": "original"}
        for transform in TRANSFORMS:
            for tier in TIERS:
                query = f"{original.name}__{transform}-{tier}.jpg"
                rng = query_rng(seed, query)
                transformed = apply_transform(image, transform, tier, rng)
                quality = query_quality(transform, tier)
                _write_jpeg(folder / "queries" / query, transformed, quality)
                ground_truth[query] = {
                    "relevant": [relevant], "junk": [], "tags": [transform, tier]
                }  # fmt: skip
        if original.name in pair_of:
            photo, pair = pair_of[original.name]
            query = f"{photo.name}__real-pair-{pair.tier}.jpg"
            image = read_photo(photo.path, max_side)
            _write_jpeg(folder / "queries" / query, image, STORED_QUALITY)
            ground_truth[query] = {
                "relevant": [relevant], "junk": [], "tags": ["real-pair", pair.tier]
            }  # fmt: skip
            record["pair"] = f"queries/{query}"
            records.append(
                {"name": f"queries/{query}", "role": "pair", "relevant": relevant,
                 "change": pair.change, **photo.record()}
            )  # fmt: skip
        records.append({**record, **original.record()})
    for distractor in selection.distractors:
        name = f"distractors/{distractor.name}.jpg"
        image = read_photo(distractor.path, max_side)
        _write_jpeg(folder / "database" / name, image, STORED_QUALITY)
        records.append({"name": f"database/{name}", "role": "distractor",
                        **distractor.record()})  # fmt: skip
    for duplicate, other in selection.duplicates:
        records.append({"name": None, "role": "duplicate", "duplicate_of": other,
                        **duplicate.record()})  # fmt: skip
    _write_json(folder / "ground_truth.json", dict(sorted(ground_truth.items())))
    records.sort(key=lambda record: (record["name"] is None, record["name"] or ""))
    _write_json(folder / "sources.json", records)
    tags = collections.Counter(
        tag for entry in ground_truth.values() for tag in entry["tags"]
    )
    return {
        "originals": len(selection.originals),
        "distractors": len(selection.distractors),
        "duplicates_left_out": len(selection.duplicates),
        "real_pairs": len(selection.pairs),
        "queries": len(ground_truth),
        "queries_by_tier": {tier: tags[tier] for tier in TIERS},
        "queries_by_transform": {
            name: tags[name] for name in [*TRANSFORMS, "real-pair"]
        },
    }


def _check_int(name: str, value, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name}={value!r} is below {minimum}")


def build_dataset(
    out: str | Path,
    sources: Sequence[str | Path] | None = None,
    *,
    seed: int = 0,
    max_side: int = 1024,
    distractors: int | None = None,
    every: int = 2,
    overwrite: bool = False,
) -> dict:
    """Build the benchmark folder ``out``; its ``dataset.json`` record.

    Parameters
    ----------
    out : path-like
        The folder to create, built hidden beside it and renamed when complete.
    sources : sequence of str or path-like, optional
        Names from :data:`DEFAULT_SOURCES` or folders of photographs (all of
        whose images are originals). Default: every one of
        :data:`DEFAULT_SOURCES`; those not installed are recorded as missing.
    seed : int, default=0
        Seeds every random parameter of the queries.
    max_side : int, default=1024
        Longer side of every stored image, at most.
    distractors : int, optional
        Keep at most this many distractors. Default: all found.
    every : int, default=2
        Every ``every``-th wallpaper photograph is an original.
    overwrite : bool, default=False
        Replace an existing ``out``.

    Returns
    -------
    record : dict
        What ``dataset.json`` holds.

    Raises
    ------
    FileExistsError
        ``out`` exists and ``overwrite`` is false.
    """
    _check_int("seed", seed, 0)
    _check_int("max_side", max_side, 32)
    _check_int("every", every, 1)
    if distractors is not None:
        _check_int("distractors", distractors, 0)
    out = Path(out)
    if out.exists() and not overwrite:
        raise FileExistsError(f"{out} exists; pass --overwrite to replace it")
    selection = _select(
        list(DEFAULT_SOURCES if sources is None else sources),
        every,
        distractors,
        max_side,
    )
    with replace_folder(out, overwrite=overwrite) as partial:
        counts = _write(partial, selection, seed, max_side)
        record = {
            "format_version": FORMAT_VERSION,
            "seed": seed,
            "max_side": max_side,
            "every": every,
            "distractors_limit": distractors,
            "stored_quality": STORED_QUALITY,
            "duplicate_distance": DUPLICATE_DISTANCE,
            "tiers": list(TIERS),
            "transforms": TRANSFORMS,
            "real_pairs": [
                {
                    "database": f"originals/{database.name}.jpg",
                    "query": f"{query.name}__real-pair-{pair.tier}.jpg",
                    "tier": pair.tier,
                    "change": pair.change,
                }
                for database, query, pair in selection.pairs
            ],  # fmt: skip
            "sources_found": selection.found,
            "sources_missing": selection.missing,
            "counts": counts,
        }
        _write_json(partial / "dataset.json", record)
    return record


def summary(out: str | Path, record: dict) -> str:
    """One line: what a build wrote."""
    counts = record["counts"]
    tiers = ", ".join(f"{k} {v}" for k, v in counts["queries_by_tier"].items())
    kinds = ", ".join(f"{k} {v}" for k, v in counts["queries_by_transform"].items())
    missing = ", ".join(record["sources_missing"]) or "none"
    return (
        f"{out}: {counts['originals']} originals, {counts['queries']} queries "
        f"({tiers}; {kinds}), {counts['real_pairs']} real pairs, "
        f"{counts['distractors']} distractors ({counts['duplicates_left_out']} "
        f"duplicates left out); sources {', '.join(record['sources_found'])}; "
        f"missing {missing}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    """The command line; returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.retrieval.build",
        description="Build the retrieval benchmark folder OUT.",
    )
    parser.add_argument("out", metavar="OUT", help="the folder to create")
    parser.add_argument(
        "--source", action="append", metavar="NAME_OR_FOLDER",
        help=f"a source ({', '.join(DEFAULT_SOURCES)}) or a folder of originals; "
        "repeat for several (default: all sources)",
    )  # fmt: skip
    parser.add_argument("--seed", type=int, default=0, help="default: 0")
    parser.add_argument("--max-side", type=int, default=1024, help="default: 1024")
    parser.add_argument(
        "--distractors", type=int, default=None, metavar="N",
        help="keep at most N distractors (default: all)",
    )  # fmt: skip
    parser.add_argument(
        "--every", type=int, default=2,
        help="every n-th wallpaper photograph is an original (default: 2)",
    )  # fmt: skip
    parser.add_argument("--overwrite", action="store_true", help="replace OUT")
    args = parser.parse_args(argv)
    try:
        record = build_dataset(
            args.out,
            args.source,
            seed=args.seed,
            max_side=args.max_side,
            distractors=args.distractors,
            every=args.every,
            overwrite=args.overwrite,
        )
    except (ValueError, TypeError, FileNotFoundError, FileExistsError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(summary(args.out, record))
    return 0


if __name__ == "__main__":
    sys.exit(main())
