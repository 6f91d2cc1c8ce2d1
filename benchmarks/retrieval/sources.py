"""Where the photographs of the retrieval benchmark come from, and their licences.

Three kinds of source, each a literal table here:

- the bundled photographs in ``data/`` (:data:`BUNDLED_FOLDER`), whose
  licences are the table of ``data/README.md``;
- Debian packages of freely licensed desktop wallpapers and sample images
  (:data:`PACKAGE_SOURCES`), chosen by hand to be photographs, not renders,
  and read from where the packages install them. Each licence is the one the
  package's ``/usr/share/doc/PACKAGE/copyright`` (machine-readable, DEP-5)
  gives the file;
- real pairs of photographs of one scene that ``opencv-doc`` ships
  (:data:`REAL_PAIRS`).

A missing package is not an error: :func:`find_package` then finds nothing.
Install them all with::

    apt-get install --no-install-recommends plasma-workspace-wallpapers \\
        mate-backgrounds lomiri-wallpapers-16.04 lomiri-wallpapers-20.04 \\
        lxqt-themes palapeli-data opencv-doc
"""

from __future__ import annotations

import dataclasses
import fnmatch
import re
import subprocess
from pathlib import Path, PurePosixPath

from vlad.images import IMAGE_EXTENSIONS

__all__ = [
    "APT_PACKAGES",
    "BUNDLED_FOLDER",
    "COPYRIGHT_FOLDER",
    "PACKAGE_SOURCES",
    "REAL_PAIRS",
    "PackageSource",
    "RealPair",
    "SourceImage",
    "find_folder",
    "find_package",
    "find_real_pairs",
    "licence_of",
    "package_version",
    "read_copyright",
]

#: The photographs bundled with vlad.
BUNDLED_FOLDER = Path(__file__).resolve().parents[2] / "data"
#: Where Debian installs every package's copyright file.
COPYRIGHT_FOLDER = Path("/usr/share/doc")


@dataclasses.dataclass(frozen=True)
class PackageSource:
    """Photographs that one Debian package installs.

    Attributes
    ----------
    package : str
        The Debian package.
    root : str
        The folder the package installs them under.
    source_prefix : str
        The folder of the package's source tree that ``root`` holds, as its
        copyright file names paths (``""`` for the top).
    photos : dict of str to str
        Stem to a glob pattern under ``root``. A pattern matching several files
        matches resolution variants of one photograph: the one with the most
        pixels is used, the others never.
    role : {"split", "distractor"}
        ``"split"``: every n-th photograph (in name order, across the split
        sources) is an original and the rest are distractors; ``"distractor"``:
        all are distractors.
    """

    package: str
    root: str
    source_prefix: str
    photos: dict[str, str]
    role: str = "split"


@dataclasses.dataclass(frozen=True)
class RealPair:
    """Two photographs of one scene: ``database`` is an original, ``query`` a
    query whose relevant image is it (paths under ``opencv-doc``'s examples)."""

    database: str
    query: str
    tier: str
    change: str


@dataclasses.dataclass(frozen=True)
class SourceImage:
    """One photograph, where it comes from and its licence.

    ``name`` (``source-stem``) is what the benchmark calls it.
    """

    source: str
    stem: str
    path: Path
    package: str | None
    version: str | None
    licence: str
    copyright: str

    @property
    def name(self) -> str:
        return f"{self.source}-{self.stem}"

    def record(self) -> dict:
        """The JSON description of this photograph for ``sources.json``."""
        origin = self.path
        if origin.is_relative_to(BUNDLED_FOLDER.parent):
            # Checkout-relative, so that the record does not name this machine.
            origin = origin.relative_to(BUNDLED_FOLDER.parent)
        return {
            "origin": origin.as_posix(),
            "source": self.source,
            "package": self.package,
            "version": self.version,
            "licence": self.licence,
            "copyright": self.copyright,
        }


def _stems(*paths: str) -> dict[str, str]:
    """Each path keyed by its file name without the extension."""
    return {PurePosixPath(path).stem: path for path in paths}


_PLASMA_PHOTOS = (
    "BytheWater", "ColdRipple", "DarkestHour", "EveningGlow", "FallenLeaf",
    "Grey", "Kite", "OneStandsOut", "Path", "summer_1am",
)  # fmt: skip

PACKAGE_SOURCES: dict[str, PackageSource] = {
    "plasma": PackageSource(
        "plasma-workspace-wallpapers",
        "/usr/share/wallpapers",
        "",
        {name: f"{name}/contents/images/*" for name in _PLASMA_PHOTOS},
    ),
    "mate": PackageSource(
        "mate-backgrounds",
        "/usr/share/backgrounds/mate",
        "",
        _stems(
            *(
                f"nature/{name}.jpg"
                for name in (
                    "Aqua",
                    "Blinds",
                    "Dune",
                    "FreshFlower",
                    "Garden",
                    "GreenMeadow",
                    "LadyBird",
                    "RainDrops",
                    "Storm",
                    "TwoWings",
                    "Wood",
                    "YellowFlower",
                )  # fmt: skip
            )
        ),
    ),
    "lomiri": PackageSource(
        "lomiri-wallpapers-16.04",
        "/usr/share/backgrounds",
        "16.04",
        _stems(
            "Bridge_by_Sander_Klootwijk.jpg",
            "Dragonfly_by_Bolly.jpg",
            "Picture_0B_by_freespace.jpg",
            "Picture_1A_by_freespace.jpg",
            "Wine_by_Jakkub_Mede.jpg",
            "aitzgorri_by_Aitzol_Berasategi.jpg",
            "free_by_Peter_Nerlich.jpg",
            "friends_by_Aitzol_Berasategi.jpg",
            "life_by_Aitzol_Berasategi.jpg",
            "picosdeeuropa_by_Aitzol_Berasategi.jpg",
            "seeding_by_Clements_Engelhardt.jpg",
            "sunset_by_Aitzol_Berasategi.jpg",
        ),
    ),
    "lomiri20": PackageSource(
        "lomiri-wallpapers-20.04",
        "/usr/share/backgrounds",
        "20.04",
        _stems("Kleiber_by_Lukas_Baubkus.jpg"),
    ),
    "lxqt": PackageSource(
        "lxqt-themes",
        "/usr/share/lxqt",
        "",
        _stems(
            *(
                f"wallpapers/{name}"
                for name in (
                    "Butterfly-Kenneth-Wimer.jpg",
                    "Valendas.png",
                    "after-the-rain.jpg",
                    "appleflower.png",
                    "beam.png",
                    "butterfly.png",
                    "cloud.png",
                    "drop.png",
                    "flowers.png",
                    "fog.jpg",
                    "this-is-not-windows.jpg",
                )  # fmt: skip
            )
        ),
    ),
    "palapeli": PackageSource(
        "palapeli-data",
        "/usr/share/palapeli",
        "",
        _stems(
            "collection/castle-maintenon.jpg",
            "collection/cincinnati-bridge.jpg",
            "collection/citrus-fruits.jpg",
            "collection/european-honey-bee.jpg",
            "collection/panther-chameleon-female.jpg",
        ),
    ),
    # Photographs only: no drawings, renders, logos, charts or calibration
    # boards. The tutorial images of the HTML manual are left out: most are
    # screenshots, and some show the real pairs' scenes side by side.
    "opencv": PackageSource(
        "opencv-doc",
        "/usr/share/doc/opencv-doc/examples",
        "samples",
        {
            **_stems(
                *(
                    f"data/{name}"
                    for name in (
                        "apple.jpg",
                        "baboon.jpg",
                        "board.jpg",
                        "building.jpg",
                        "butterfly.jpg",
                        "chicky_512.png",
                        "fruits.jpg",
                        "home.jpg",
                        "licenseplate_motion.jpg",
                        "messi5.jpg",
                        "orange.jpg",
                        "smarties.png",
                        "squirrel_cls.jpg",
                        "starry_night.jpg",
                        "stuff.jpg",
                        "sudoku.png",
                    )  # fmt: skip
                )
            ),
            "alphamat-plant": "alphamat/input_images/plant.jpg",
            "dnn_superres-butterfly": "dnn_superres/butterfly.png",
            "hfs-000": "hfs/data/000.jpg",
            "hfs-001": "hfs/data/001.jpg",
            "hfs-002": "hfs/data/002.jpg",
            "reg-home": "reg/home.png",
            **{f"text-scenetext0{i}": f"text/scenetext0{i}.jpg" for i in range(1, 7)},
            **{
                f"text-word0{i}": f"text/scenetext_segmented_word0{i}.jpg"
                for i in range(1, 6)
            },
        },
        role="distractor",
    ),
}

#: The real same-scene pairs of ``opencv-doc`` (paths under its examples).
REAL_PAIRS = (
    RealPair("data/aero1.jpg", "data/aero3.jpg", "hard", "aerial views, moved camera"),
    RealPair("data/aloeL.jpg", "data/aloeR.jpg", "easy", "stereo pair (Middlebury)"),
    RealPair(
        "data/basketball1.png", "data/basketball2.png", "easy", "consecutive frames"
    ),
    RealPair(
        "data/box.png", "data/box_in_scene.png", "hard", "object, then in clutter"
    ),
    RealPair(
        "data/ela_original.jpg", "data/ela_modified.jpg", "easy", "drawing pasted in"
    ),
    RealPair("data/graf1.png", "data/graf3.png", "hard", "viewpoint about 30 degrees"),
    RealPair("data/left.jpg", "data/right.jpg", "hard", "books from two viewpoints"),
    RealPair("data/leuvenA.jpg", "data/leuvenB.jpg", "hard", "street, partial overlap"),
    RealPair(
        "data/rubberwhale1.png", "data/rubberwhale2.png", "easy", "consecutive frames"
    ),
)

#: Every package a full build reads, for ``apt-get install``.
APT_PACKAGES = tuple(sorted({source.package for source in PACKAGE_SOURCES.values()}))


def read_copyright(package: str) -> list[dict[str, str]]:
    """The paragraphs of a package's machine-readable copyright file.

    Each paragraph maps a field (``Files``, ``Copyright``, ``License``, ...)
    to its value, continuation lines joined with newlines. Empty when the
    package is not installed.
    """
    path = COPYRIGHT_FOLDER / package / "copyright"
    if not path.is_file():
        return []
    paragraphs: list[dict[str, str]] = []
    field = None
    current: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        if not line.strip():
            if current:
                paragraphs.append(current)
            current, field = {}, None
        elif line[0] in " \t" and field is not None:
            current[field] += "\n" + line.strip()
        elif ":" in line and not line.startswith("#"):
            field, value = line.split(":", 1)
            current[field] = value.strip()
    if current:
        paragraphs.append(current)
    return paragraphs


def licence_of(paragraphs: list[dict[str, str]], source_path: str) -> tuple[str, str]:
    """``(licence, copyright)`` of a file of the package's source tree.

    As the copyright format says, the last ``Files`` paragraph with a pattern
    matching the path wins (``*`` matches ``/`` too).
    """
    licence, holder = "unknown", ""
    for paragraph in paragraphs:
        patterns = paragraph.get("Files", "").split()
        if any(fnmatch.fnmatchcase(source_path, pattern) for pattern in patterns):
            licence = paragraph.get("License", "unknown").splitlines()[0]
            holder = " ".join(paragraph.get("Copyright", "").split())
    return licence, holder


def package_version(package: str) -> str | None:
    """The installed version of a Debian package, or None."""
    try:
        process = subprocess.run(
            ["dpkg-query", "-W", "-f=${Version}", package],
            capture_output=True,
            text=True,
            check=False,
        )
    except OSError:
        return None
    return process.stdout.strip() or None if process.returncode == 0 else None


def _pixels_in_name(path: Path) -> int:
    """``width * height`` from a name like ``2560x1440.jpg``, else 0."""
    match = re.fullmatch(r"(\d+)x(\d+)", path.stem)
    return int(match[1]) * int(match[2]) if match else 0


def _largest_variant(paths: list[Path]) -> Path:
    """The variant with the most pixels by name, then the largest file."""
    return max(paths, key=lambda path: (_pixels_in_name(path), path.stat().st_size))


def find_package(name: str) -> list[SourceImage]:
    """The photographs of one of :data:`PACKAGE_SOURCES` that are installed.

    Examples
    --------
    >>> find_package("no-such-source")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: Unknown source 'no-such-source'; expected one of [...]
    """
    if name not in PACKAGE_SOURCES:
        raise ValueError(
            f"Unknown source {name!r}; expected one of {sorted(PACKAGE_SOURCES)}"
        )
    source = PACKAGE_SOURCES[name]
    paragraphs = read_copyright(source.package)
    root = Path(source.root)
    if not paragraphs or not root.is_dir():
        return []
    version = package_version(source.package)
    found = []
    for stem, pattern in sorted(source.photos.items()):
        variants = sorted(root.glob(pattern))
        if not variants:
            continue
        path = _largest_variant(variants)
        relative = path.relative_to(root).as_posix()
        source_path = f"{source.source_prefix}/{relative}".lstrip("/")
        licence, holder = licence_of(paragraphs, source_path)
        found.append(
            SourceImage(name, stem, path, source.package, version, licence, holder)
        )
    return found


def find_real_pairs() -> list[tuple[SourceImage, SourceImage, RealPair]]:
    """``(database image, query image, pair)`` of every installed real pair."""
    source = PACKAGE_SOURCES["opencv"]
    paragraphs = read_copyright(source.package)
    root = Path(source.root)
    if not paragraphs:
        return []
    version = package_version(source.package)
    pairs = []
    for pair in REAL_PAIRS:
        images = []
        for relative in (pair.database, pair.query):
            path = root / relative
            licence, holder = licence_of(
                paragraphs, f"{source.source_prefix}/{relative}"
            )
            images.append(
                SourceImage(
                    "opencv", path.stem, path, source.package, version, licence, holder
                )
            )
        if all(image.path.is_file() for image in images):
            pairs.append((images[0], images[1], pair))
    return pairs


def _readme_licences(folder: Path) -> dict[str, tuple[str, str]]:
    """File name to ``(licence, source)`` from the Markdown table of the
    folder's ``README.md`` (rows ``| `name` | ... | source | licence |``)."""
    readme = folder / "README.md"
    if not readme.is_file():
        return {}
    licences = {}
    for line in readme.read_text(encoding="utf-8").splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) >= 3 and cells[0].startswith("`") and cells[0].endswith("`"):
            licences[cells[0].strip("`")] = (cells[-1], cells[-2])
    return licences


def find_folder(folder: str | Path, source: str | None = None) -> list[SourceImage]:
    """Every image directly in ``folder``, licences from its ``README.md`` table.

    Parameters
    ----------
    folder : path-like
    source : str, optional
        The name of the source; default: the folder's name.

    Raises
    ------
    FileNotFoundError
        ``folder`` is not a folder.
    """
    resolved = Path(folder).resolve()
    if not resolved.is_dir():
        raise FileNotFoundError(f"source={str(folder)!r} is not a folder")
    source = source or resolved.name
    licences = _readme_licences(resolved)
    images = []
    for path in sorted(resolved.iterdir()):
        if path.is_file() and path.suffix.lower() in IMAGE_EXTENSIONS:
            licence, holder = licences.get(path.name, ("unknown", ""))
            images.append(
                SourceImage(source, path.stem, path, None, None, licence, holder)
            )
    return images
