"""Build the real-view benchmark's folder from its manifest.

::

    python -m benchmarks.realviews.build OUT --repos DIR [--debs DIR]
        [--manifest PATH] [--overwrite]

writes::

    OUT/images/NNNN.jpg     every image of the manifest, under its neutral name
                            (NNNN.png for the PNG files)
    OUT/ground_truth.json   query name -> {"relevant", "junk", "tags"}
    OUT/dataset.json        counts, the manifest's version, sources and licences

The manifest (``manifest.json``, format ``"real-view retrieval manifest"``)
names each image's source, its path there and the sha256 of its bytes. A
``git`` source is a repository at a pinned commit, read from a folder of
clones or bare copies (``--repos``); a ``deb`` source is a Debian package at a
pinned version, read from its ``.deb`` (``--debs``, or ``apt-get download``
into a cache). The bytes are written as they are, never re-encoded.

Every file's sha256 is checked, and a file that is missing or differs stops
the build with one line naming it: the scores of two builds are comparable
only when they hold the same images.

Every image of a scene is a query; its relevant images are the other images
of its scene, and the query itself (in the database too: leave-one-out) is
junk, so finding it neither helps nor costs. Its tags are its scene's family
and tier. Names in ``ground_truth.json`` are relative to ``OUT/images``. The
folder is built hidden beside ``OUT`` and takes its place when complete
(:func:`benchmarks.files.replace_folder`).
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import io
import json
import os
import re
import subprocess
import sys
import tarfile
from collections.abc import Sequence
from pathlib import Path

from benchmarks.files import replace_folder

__all__ = [
    "DEFAULT_DEB_CACHE",
    "DEFAULT_MANIFEST",
    "FORMAT_VERSION",
    "build_dataset",
    "find_deb",
    "find_git_dir",
    "ground_truth",
    "load_manifest",
    "main",
    "read_deb_files",
    "read_git_file",
    "summary",
]

FORMAT = "vlad real-view benchmark"
FORMAT_VERSION = 1
MANIFEST_FORMAT = "real-view retrieval manifest"
MANIFEST_VERSION = 1
#: Beside the checkout, as the project's folders are laid out.
DEFAULT_MANIFEST = (
    Path(__file__).resolve().parents[2].parent / "shared/realviews/manifest.json"
)
#: Where ``apt-get download`` puts the packages when ``--debs`` is not given.
DEFAULT_DEB_CACHE = (
    Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    / "vlad/realviews-debs"
)
_NAME = re.compile(r"images/[A-Za-z0-9][A-Za-z0-9._-]*")
_SOURCE_FIELDS = {"git": ("repo", "commit"), "deb": ("package", "version")}


def _fail(manifest: Path, what: str) -> ValueError:
    return ValueError(f"{manifest}: {what}")


def load_manifest(path: str | os.PathLike) -> dict:
    """Read and check a manifest.

    Returns
    -------
    dict
        The manifest: ``sources`` (key to ``kind``, ``repo`` and ``commit`` or
        ``package`` and ``version``, ``licence``), ``scenes`` (name to
        ``family``, ``tier``, ``what_changes``) and ``images`` (``name``,
        ``source``, ``path``, ``sha256``, ``scene`` or None).

    Raises
    ------
    FileNotFoundError
        No such file.
    ValueError
        Not such a manifest: the message names the file and the first fault.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"manifest {path} not found; pass --manifest PATH")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError) as error:
        raise _fail(path, f"not JSON ({error})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != MANIFEST_FORMAT:
        raise _fail(path, f"expected a JSON object with format {MANIFEST_FORMAT!r}")
    if manifest.get("version") != MANIFEST_VERSION:
        raise _fail(
            path,
            f"version {manifest.get('version')!r}; this builder reads version "
            f"{MANIFEST_VERSION}",
        )
    sources, scenes, images = (
        manifest.get(key) for key in ("sources", "scenes", "images")
    )
    if not (isinstance(sources, dict) and isinstance(scenes, dict)):
        raise _fail(path, "'sources' and 'scenes' must be objects")
    if not isinstance(images, list) or not images:
        raise _fail(path, "'images' must be a non-empty list")
    for key, source in sources.items():
        kind = source.get("kind") if isinstance(source, dict) else None
        if kind not in _SOURCE_FIELDS:
            raise _fail(
                path, f"source {key!r}: kind must be one of {list(_SOURCE_FIELDS)}"
            )
        for field in _SOURCE_FIELDS[kind]:
            if not isinstance(source.get(field), str) or not source[field]:
                raise _fail(path, f"source {key!r}: no {field!r}")
    for key, scene in scenes.items():
        if not isinstance(scene, dict) or not all(
            isinstance(scene.get(field), str) for field in ("family", "tier")
        ):
            raise _fail(path, f"scene {key!r}: 'family' and 'tier' must be strings")
    seen: set[str] = set()
    for image in images:
        if not isinstance(image, dict):
            raise _fail(
                path, f"an image entry is {type(image).__name__}, not an object"
            )
        name = image.get("name")
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise _fail(path, f"image name {name!r} is not images/<file name>")
        if name in seen:
            raise _fail(path, f"image {name} is listed twice")
        seen.add(name)
        if image.get("source") not in sources:
            raise _fail(path, f"image {name}: unknown source {image.get('source')!r}")
        if image.get("scene") is not None and image["scene"] not in scenes:
            raise _fail(path, f"image {name}: unknown scene {image['scene']!r}")
        if not isinstance(image.get("path"), str) or not re.fullmatch(
            r"[0-9a-f]{64}", str(image.get("sha256"))
        ):
            raise _fail(path, f"image {name}: 'path' and a hex 'sha256' are needed")
    return manifest


def find_git_dir(repos: str | os.PathLike, repo: str) -> Path:
    """The git directory of ``repo`` (``owner/name``) in the folder ``repos``.

    Looks for ``owner+name/repo`` (a bare copy), ``owner+name``,
    ``owner/name`` and ``name``, each a clone (with ``.git``) or a bare
    repository.

    Raises
    ------
    FileNotFoundError
        None of them is there.
    """
    owner, name = repo.split("/", 1)
    repos = Path(repos)
    candidates = [
        repos / f"{owner}+{name}" / "repo",
        repos / f"{owner}+{name}",
        repos / owner / name,
        repos / name,
    ]
    for candidate in candidates:
        if (candidate / ".git").exists():
            return candidate / ".git"
        if (candidate / "HEAD").is_file() and (candidate / "objects").is_dir():
            return candidate
    raise FileNotFoundError(
        f"no copy of {repo} in {repos} (looked for {owner}+{name}, {owner}/{name} "
        f"and {name}); clone it there: git clone https://github.com/{repo} "
        f"{repos / name}"
    )


def read_git_file(git_dir: str | os.PathLike, commit: str, path: str):
    """The bytes of ``path`` at ``commit``, or at ``HEAD`` when the copy lacks
    the commit (or the file there), and the revision read.

    Returns
    -------
    (bytes, str) or (None, None)
        ``None, None`` when neither revision has the file.
    """
    for revision in (commit, "HEAD"):
        completed = subprocess.run(
            [
                "git",
                "--git-dir",
                str(git_dir),
                "cat-file",
                "blob",
                f"{revision}:{path}",
            ],
            capture_output=True,
            check=False,
        )
        if completed.returncode == 0:
            return completed.stdout, revision
    return None, None


def _deb_file_name(package: str, version: str) -> str:
    # apt-get writes an epoch's ":" as "%3a".
    return f"{package}_{version.replace(':', '%3a')}_"


def find_deb(
    debs: str | os.PathLike, package: str, version: str, *, download: bool = True
) -> Path:
    """The ``.deb`` of ``package`` at ``version`` in the folder ``debs``,
    downloaded there with ``apt-get download`` when absent.

    Raises
    ------
    FileNotFoundError
        Absent, and not downloaded (``download`` false, or apt-get failed: the
        message gives its last line).
    """
    debs = Path(debs)
    prefix = _deb_file_name(package, version)
    found = sorted(debs.glob(f"{prefix}*.deb")) if debs.is_dir() else []
    if found:
        return found[0]
    if not download:
        raise FileNotFoundError(f"no {prefix}*.deb in {debs}")
    debs.mkdir(parents=True, exist_ok=True)
    try:
        completed = subprocess.run(
            ["apt-get", "download", f"{package}={version}"],
            cwd=debs,
            capture_output=True,
            text=True,
            check=False,
        )
    except FileNotFoundError:
        raise FileNotFoundError(
            f"no {prefix}*.deb in {debs}, and no apt-get to download it; put the "
            "package there (--debs DIR)"
        ) from None
    found = sorted(debs.glob(f"{prefix}*.deb"))
    if completed.returncode or not found:
        lines = (completed.stderr or completed.stdout).strip().splitlines()
        raise FileNotFoundError(
            f"apt-get download {package}={version} failed"
            + (f": {lines[-1]}" if lines else "")
            + f"; put the package in {debs} (--debs DIR)"
        )
    return found[0]


def read_deb_files(deb: str | os.PathLike, paths: Sequence[str]) -> dict[str, bytes]:
    """The bytes of the files ``paths`` (``./usr/...`` or ``usr/...``) that
    the package ``deb`` installs; those it does not hold are left out."""
    completed = subprocess.run(
        ["dpkg-deb", "--fsys-tarfile", str(deb)], capture_output=True, check=False
    )
    if completed.returncode:
        message = completed.stderr.decode(errors="replace").strip().splitlines()
        raise ValueError(
            f"dpkg-deb cannot read {deb}" + (f": {message[-1]}" if message else "")
        )
    wanted = {path.removeprefix("./"): path for path in paths}
    files = {}
    with tarfile.open(fileobj=io.BytesIO(completed.stdout)) as archive:
        for member in archive.getmembers():
            key = member.name.removeprefix("./")
            if key in wanted and (member.isfile() or member.issym()):
                handle = archive.extractfile(member)
                if handle is not None:
                    files[wanted[key]] = handle.read()
    return files


def _read_sources(
    manifest: dict, repos: Path | None, debs: Path | None
) -> tuple[dict[str, bytes], dict[str, collections.Counter]]:
    """Every image's bytes by name, and which revision each source was read at."""
    by_source = collections.defaultdict(list)
    for image in manifest["images"]:
        by_source[image["source"]].append(image)
    found: dict[str, bytes] = {}
    revisions: dict[str, collections.Counter] = {}
    for key, images in by_source.items():
        source = manifest["sources"][key]
        if source["kind"] == "git":
            if repos is None:
                raise FileNotFoundError(
                    f"source {key} is the repository {source['repo']}: pass --repos "
                    "DIR, a folder of clones or bare copies"
                )
            git_dir = find_git_dir(repos, source["repo"])
            revisions[key] = collections.Counter()
            for image in images:
                data, revision = read_git_file(git_dir, source["commit"], image["path"])
                if data is not None:
                    found[image["name"]] = data
                    revisions[key]["commit" if revision != "HEAD" else "HEAD"] += 1
        else:
            deb = find_deb(
                DEFAULT_DEB_CACHE if debs is None else debs,
                source["package"],
                source["version"],
            )
            files = read_deb_files(deb, [image["path"] for image in images])
            for image in images:
                if image["path"] in files:
                    found[image["name"]] = files[image["path"]]
    return found, revisions


def _check(manifest: dict, found: dict[str, bytes]) -> None:
    """Raise one line naming the first missing or differing file."""
    problems = []
    for image in manifest["images"]:
        where = f"{image['name']} ({image['source']}: {image['path']})"
        data = found.get(image["name"])
        if data is None:
            problems.append(f"{where} is missing from its source")
            continue
        digest = hashlib.sha256(data).hexdigest()
        if digest != image["sha256"]:
            problems.append(
                f"{where} has sha256 {digest[:12]}..., expected "
                f"{image['sha256'][:12]}..."
            )
    if problems:
        more = f" (and {len(problems) - 1} more files)" if len(problems) > 1 else ""
        raise ValueError(problems[0] + more)


def ground_truth(manifest: dict) -> dict[str, dict]:
    """Each scene image's entry: the other images of its scene relevant,
    itself junk (leave-one-out), tags ``[family, tier]``; names relative to
    ``OUT/images``, queries sorted.

    Examples
    --------
    >>> manifest = {
    ...     "scenes": {"s": {"family": "planar", "tier": "standard"}},
    ...     "images": [
    ...         {"name": "images/0.jpg", "scene": "s"},
    ...         {"name": "images/1.jpg", "scene": None},
    ...         {"name": "images/2.jpg", "scene": "s"},
    ...     ],
    ... }
    >>> ground_truth(manifest)["0.jpg"]
    {'relevant': ['2.jpg'], 'junk': ['0.jpg'], 'tags': ['planar', 'standard']}
    """
    members = collections.defaultdict(list)
    for image in manifest["images"]:
        if image["scene"] is not None:
            members[image["scene"]].append(image["name"].removeprefix("images/"))
    entries = {}
    for scene, names in members.items():
        tags = [manifest["scenes"][scene]["family"], manifest["scenes"][scene]["tier"]]
        for query in names:
            entries[query] = {
                "relevant": [name for name in names if name != query],
                "junk": [query],
                "tags": tags,
            }
    return dict(sorted(entries.items()))


def _record(manifest: dict, manifest_path: Path, truth: dict, revisions: dict) -> dict:
    """What ``dataset.json`` holds."""
    images = manifest["images"]
    in_scenes = [image for image in images if image["scene"] is not None]
    per_source = collections.Counter(image["source"] for image in images)
    scenes = {}
    for name, scene in sorted(manifest["scenes"].items()):
        scenes[name] = {
            **scene,
            "images": [
                image["name"].removeprefix("images/")
                for image in in_scenes
                if image["scene"] == name
            ],
        }
    sources = {}
    for key, source in manifest["sources"].items():
        sources[key] = {**source, "images": per_source[key]}
        if key in revisions:
            sources[key]["read_at_head"] = revisions[key]["HEAD"]
    tags = collections.Counter(tag for entry in truth.values() for tag in entry["tags"])
    families = sorted({scene["family"] for scene in manifest["scenes"].values()})
    tiers = sorted({scene["tier"] for scene in manifest["scenes"].values()})
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "manifest": {
            "file": manifest_path.name,
            "sha256": hashlib.sha256(manifest_path.read_bytes()).hexdigest(),
            "format": manifest["format"],
            "version": manifest["version"],
        },
        "licence_note": "these files are for local evaluation only; do not "
        "redistribute them (each source's licence is below)",
        "counts": {
            "images": len(images),
            "scene_images": len(in_scenes),
            "distractors": len(images) - len(in_scenes),
            "scenes": len(manifest["scenes"]),
            "queries": len(truth),
            "queries_by_family": {family: tags[family] for family in families},
            "queries_by_tier": {tier: tags[tier] for tier in tiers},
        },
        "sources": sources,
        "scenes": scenes,
        "images": [
            {key: image[key] for key in ("name", "source", "path", "sha256", "scene")}
            for image in images
        ],
    }


def _write_json(path: Path, value) -> None:
    path.write_text(
        json.dumps(value, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
    )


def build_dataset(
    out: str | os.PathLike,
    *,
    repos: str | os.PathLike | None = None,
    debs: str | os.PathLike | None = None,
    manifest: str | os.PathLike = DEFAULT_MANIFEST,
    overwrite: bool = False,
) -> dict:
    """Build the benchmark folder ``out``; its ``dataset.json`` record.

    Parameters
    ----------
    out : path-like
        The folder to create, built hidden beside it and renamed when complete.
    repos : path-like, optional
        A folder of clones or bare copies of the git sources (see
        :func:`find_git_dir`); needed when the manifest has git sources.
    debs : path-like, optional
        A folder of the ``.deb`` sources; those absent are downloaded there
        with ``apt-get download``. Default :data:`DEFAULT_DEB_CACHE`.
    manifest : path-like, default=DEFAULT_MANIFEST
    overwrite : bool, default=False
        Replace an existing ``out``.

    Returns
    -------
    dict

    Raises
    ------
    FileExistsError
        ``out`` exists and ``overwrite`` is false.
    FileNotFoundError
        A source is not there and cannot be fetched.
    ValueError
        A bad manifest, or a file missing from its source or whose sha256
        differs (the first one is named).
    """
    out = Path(out)
    manifest_path = Path(manifest)
    if out.exists() and not overwrite:
        raise FileExistsError(f"{out} exists; pass --overwrite to replace it")
    loaded = load_manifest(manifest_path)
    found, revisions = _read_sources(
        loaded,
        None if repos is None else Path(repos),
        None if debs is None else Path(debs),
    )
    _check(loaded, found)
    truth = ground_truth(loaded)
    record = _record(loaded, manifest_path, truth, revisions)
    with replace_folder(out, overwrite=overwrite) as partial:
        (partial / "images").mkdir(parents=True)
        for image in loaded["images"]:
            (partial / image["name"]).write_bytes(found[image["name"]])
        _write_json(partial / "ground_truth.json", truth)
        _write_json(partial / "dataset.json", record)
    return record


def summary(out: str | os.PathLike, record: dict) -> str:
    """One line: what a build wrote."""
    counts = record["counts"]
    tiers = ", ".join(f"{k} {v}" for k, v in counts["queries_by_tier"].items())
    families = ", ".join(f"{k} {v}" for k, v in counts["queries_by_family"].items())
    at_head = sum(
        source.get("read_at_head", 0) for source in record["sources"].values()
    )
    return (
        f"{out}: {counts['images']} images ({counts['scene_images']} of "
        f"{counts['scenes']} scenes, {counts['distractors']} distractors), "
        f"{counts['queries']} queries ({tiers}; {families}); every sha256 checked"
        + (f"; {at_head} files read at HEAD (pinned commit absent)" if at_head else "")
    )


def main(argv: Sequence[str] | None = None) -> int:
    """The command line; returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.realviews.build",
        description="Build the real-view benchmark folder OUT from its manifest.",
    )
    parser.add_argument("out", metavar="OUT", help="the folder to create")
    parser.add_argument(
        "--repos", metavar="DIR",
        help="folder of clones or bare copies of the manifest's repositories "
        "(DIR/owner+name[/repo], DIR/owner/name or DIR/name)",
    )  # fmt: skip
    parser.add_argument(
        "--debs", metavar="DIR",
        help="folder of the manifest's .deb packages; absent ones are downloaded "
        f"there with apt-get (default: {DEFAULT_DEB_CACHE})",
    )  # fmt: skip
    parser.add_argument(
        "--manifest", metavar="PATH", default=DEFAULT_MANIFEST,
        help=f"default: {DEFAULT_MANIFEST}",
    )  # fmt: skip
    parser.add_argument("--overwrite", action="store_true", help="replace OUT")
    args = parser.parse_args(argv)
    try:
        record = build_dataset(
            args.out,
            repos=args.repos,
            debs=args.debs,
            manifest=args.manifest,
            overwrite=args.overwrite,
        )
    except (ValueError, FileNotFoundError, FileExistsError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(summary(args.out, record))
    return 0


if __name__ == "__main__":
    sys.exit(main())
