"""Thumbnails of the images a page shows, made once with Pillow and kept in the
folder beside the page; and finding an image's file from its name.

A page ``results.html`` keeps its images in ``results_files/``: thumbnails in
``results_files/thumbnails/``, at most :data:`THUMBNAIL_SIZE` pixels on their
longer side, EXIF orientation applied, as JPEG. An image is read as
:func:`vlad.images.read_image` reads it: its header first, and one of more
pixels than the limit is never decoded.

A thumbnail's file name is a hash of its source's path, size, modification
and status-change times and file number (inode) and of the thumbnail size: a
changed or replaced image gets a new one, even when its size and modification
time were kept. So the next page over the same images reuses it: from its own
folder, or from another page's folder beside it (linked, or copied where the
file system cannot link). Files the page no longer shows are removed (only
files named as vlad names them), so the folder holds what the page needs and
moves with it.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import re
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from vlad._extras import install_command
from vlad.core._pool import Progress, map_in_order
from vlad.errors import VladError
from vlad.images._files import MAX_PIXELS, ImageReadError, find_images, read_checked
from vlad.pages._html import escape, url

__all__ = [
    "GENERATED",
    "THUMBNAIL_SIZE",
    "ImageFolders",
    "Thumbnail",
    "make_files",
    "make_thumbnail",
    "check_page_path",
    "page_folder",
    "prune_folder",
    "require_pillow",
    "reuse_file",
    "sibling_files",
    "source_key",
    "write_file_atomically",
]

#: Pixels on a thumbnail's longer side at most.
THUMBNAIL_SIZE = 160
#: JPEG quality of thumbnails: about 6 KB for a 160 x 120 photo.
THUMBNAIL_QUALITY = 85
#: How vlad names the files it makes in a page's folder.
GENERATED = re.compile(r"[0-9a-f]{24}\.jpg")


def require_pillow():
    """The ``PIL`` package, or an ImportError that says how to install it."""
    try:
        import PIL.Image
        import PIL.ImageOps
    except ImportError:
        raise ImportError(
            "the HTML pages make thumbnails with Pillow; install it with: "
            + install_command("html")
        ) from None
    return PIL


class ImageFolders:
    """Image files by the names vlad gave them: the folders and files given to
    ``vlad encode`` (or ``vlad search``), walked as :func:`vlad.find_images`
    walks them.

    Only files found there are ever read: a name such as ``../../secret.jpg``
    that the walk did not produce finds nothing.

    Parameters
    ----------
    inputs : path-like or sequence of path-like, optional
        Image folders and files; none finds nothing.

    Raises
    ------
    FileNotFoundError, ValueError
        As :func:`vlad.find_images`: an input that does not exist, or no
        images at all.
    """

    def __init__(self, inputs: str | os.PathLike | Sequence | None = None):
        if inputs is None or (
            not isinstance(inputs, (str, os.PathLike)) and len(inputs) == 0
        ):
            self.paths: dict[str, Path] = {}
        else:
            self.paths = {image.name: image.path for image in find_images(inputs)}

    def __len__(self) -> int:
        return len(self.paths)

    def locate(self, name: str) -> Path | None:
        """The file of image ``name``, or None.

        Parameters
        ----------
        name : str
            An image's name, as the search results give it.
        """
        return self.paths.get(name)


@dataclass(frozen=True)
class Thumbnail:
    """A thumbnail in a page's folder, or why there is none.

    Attributes
    ----------
    relative : str or None
        Its path relative to the page's folder, ``/`` separated.
    width, height : int
        Its size in pixels (0 without a file).
    problem : str or None
        Why there is no thumbnail: the image was not found, or cannot be read.
    reused : bool
        Whether it was made by an earlier run.
    """

    relative: str | None
    width: int = 0
    height: int = 0
    problem: str | None = None
    reused: bool = False

    def html(self, name: str) -> str:
        """An ``<img>`` of the thumbnail (``name`` as its text alternative), or
        a placeholder saying why there is none."""
        if self.relative is None:
            problem = self.problem or "no image"
            return (
                f'<span class="placeholder" role="img" aria-label="{escape(problem)}">'
                f"{escape(problem)}</span>"
            )
        return (
            f'<img src="{url(self.relative)}" width="{self.width}" '
            f'height="{self.height}" alt="{escape(name)}" loading="lazy">'
        )


def check_page_path(page: str | os.PathLike, *, overwrite: bool = True) -> Path:
    """``page`` as a Path, refused when its folder does not exist, it is a
    folder itself, or (without ``overwrite``) it exists."""
    page = Path(page)
    if not page.parent.is_dir():
        raise FileNotFoundError(f"no such folder: {page.parent} (for the page {page})")
    if page.is_dir():
        raise VladError(f"{page} is a folder; a page is written to a file")
    if not overwrite and os.path.lexists(page):
        raise FileExistsError(f"{page} exists; pass overwrite to replace it")
    return page


def page_folder(page: str | os.PathLike) -> Path:
    """The folder beside ``page`` that holds its images: ``results_files`` for
    ``results.html``."""
    page = Path(page)
    return page.with_name(f"{page.stem}_files")


def source_key(source: Path, *extra: object) -> str:
    """A file name stem for what is made from ``source`` (and ``extra``): it
    changes when the file's path, size, modification time, status-change time
    or file number does (the last two cannot be set back by a program that
    keeps the modification time of a file it rewrites or replaces)."""
    status = source.stat()
    parts = [
        os.fsencode(source.resolve()),
        status.st_size,
        status.st_mtime_ns,
        status.st_ctime_ns,
        status.st_ino,
        *extra,
    ]
    digest = hashlib.sha256(b"\0".join(str(part).encode() for part in parts))
    return digest.hexdigest()[:24]


def write_file_atomically(path: Path, content: bytes) -> None:
    """Write ``content`` to a temporary file beside ``path``, then rename it.

    No fsync: these are caches, and a file that a crash left damaged is made
    again when it cannot be read back.
    """
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=".partial-")
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(content)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise


def sibling_files(page: Path, subfolder: str) -> dict[str, Path]:
    """The files vlad made in ``subfolder`` of the other pages' folders beside
    ``page`` (``*_files/thumbnails/`` for ``"thumbnails"``), by file name.

    A page made in the same folder as another can reuse them: the names are
    hashes of what each file was made from (see :func:`source_key`).
    """
    own = page_folder(page)
    found: dict[str, Path] = {}
    with contextlib.suppress(OSError):
        folders = sorted(
            entry.path
            for entry in os.scandir(page.parent)
            if entry.name.endswith("_files") and entry.path != str(own)
        )
        for folder in folders:
            with (
                contextlib.suppress(OSError),
                os.scandir(os.path.join(folder, subfolder)) as entries,
            ):
                for entry in entries:
                    if GENERATED.fullmatch(entry.name):
                        found.setdefault(entry.name, Path(entry.path))
    return found


def reuse_file(found: Path, target: Path) -> bool:
    """Put another page's file ``found`` at ``target``: a hard link, or a
    copy where the file system cannot link; False when it cannot be read."""
    temporary = target.with_name(f".partial-{os.urandom(8).hex()}")
    try:
        os.link(found, temporary)
    except OSError:
        try:
            content = found.read_bytes()
        except OSError:
            return False
        write_file_atomically(target, content)
        return True
    try:
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
    return True


def make_thumbnail(
    source: Path | None,
    folder: Path,
    page_parent: Path,
    size: int = THUMBNAIL_SIZE,
    *,
    max_pixels: int = MAX_PIXELS,
    elsewhere: dict[str, Path] | None = None,
) -> Thumbnail:
    """The thumbnail of ``source`` in ``folder``: reused when there (or in
    ``elsewhere``), else made.

    Parameters
    ----------
    source : Path or None
        The image; None when it was not found.
    folder : Path
        Where thumbnails are kept (it exists).
    page_parent : Path
        The page's folder, which :attr:`Thumbnail.relative` is relative to.
    size : int
        Pixels on the longer side at most.
    max_pixels : int, default=MAX_PIXELS
        An image whose header declares more pixels is not decoded: it gets
        no thumbnail, and its :attr:`Thumbnail.problem` says why. 0 for no
        limit (Pillow's own then applies).
    elsewhere : dict of str to Path, optional
        Thumbnails of other pages by file name (:func:`sibling_files`): one
        of the same name is linked or copied instead of made.
    """
    if source is None:
        return Thumbnail(None, problem="image not found")
    pil = require_pillow()
    try:
        target = folder / f"{source_key(source, size)}.jpg"
    except OSError as error:
        return Thumbnail(None, problem=f"cannot read the image: {error.strerror}")
    relative = target.relative_to(page_parent).as_posix()
    found = _thumbnail_size(target, pil)
    if found is None and elsewhere and target.name in elsewhere:
        other = elsewhere[target.name]
        found = _thumbnail_size(other, pil)
        if found is not None and not reuse_file(other, target):
            found = None
    if found is not None:
        return Thumbnail(relative, *found, reused=True)
    try:
        encoded, _ = read_checked(source, max_pixels)
        with pil.Image.open(io.BytesIO(encoded)) as image:
            image.draft("RGB", (size, size))
            image.thumbnail((size, size), pil.Image.Resampling.LANCZOS)
            image = _as_rgb(pil.ImageOps.exif_transpose(image), pil)
            buffer = _jpeg_bytes(image)
    except ImageReadError as error:
        return Thumbnail(None, problem=f"cannot read the image: {error.reason}")
    except (
        OSError,
        ValueError,
        SyntaxError,
        pil.Image.DecompressionBombError,
    ) as error:
        reason = " ".join(str(error).split()) or type(error).__name__
        return Thumbnail(None, problem=f"cannot read the image: {reason}")
    write_file_atomically(target, buffer)
    return Thumbnail(relative, *image.size)


def _thumbnail_size(path: Path, pil) -> tuple[int, int] | None:
    """The size of the thumbnail at ``path``; None when there is none or it
    cannot be read back (a crash left it damaged)."""
    if not path.is_file():
        return None
    with contextlib.suppress(OSError, ValueError, pil.Image.DecompressionBombError):
        with pil.Image.open(path) as image:
            image.verify()
            return image.size
    return None


def _as_rgb(image, pil):
    """An 8-bit RGB (or grey) image: transparency over white, 16 bits scaled."""
    if image.mode in ("RGB", "L"):
        return image
    if image.mode in ("I;16", "I;16B", "I;16L", "I"):
        values = np.asarray(image, dtype=np.float64)
        top = max(float(values.max()), 1.0)
        return pil.Image.fromarray((values * (255.0 / top)).astype(np.uint8))
    if "A" in image.mode or "transparency" in image.info:
        rgba = image.convert("RGBA")
        white = pil.Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        return pil.Image.alpha_composite(white, rgba).convert("RGB")
    return image.convert("RGB")


def _jpeg_bytes(image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, "JPEG", quality=THUMBNAIL_QUALITY)
    return buffer.getvalue()


def make_files(
    jobs: Sequence[Callable[[], object]],
    *,
    n_jobs: int | None = None,
    progress: Progress | None = None,
) -> list:
    """Run the jobs that make a page's files on ``n_jobs`` threads, in order.

    Pillow and OpenCV release the GIL while they decode, resize and encode,
    so threads use every core.
    """
    return list(map_in_order(lambda job: job(), jobs, n_jobs, progress))


def prune_folder(folder: Path, kept: Iterable[str]) -> int:
    """Remove the files vlad made in ``folder`` that are not in ``kept`` (file
    names); return how many. Other files are left alone."""
    kept = set(kept)
    removed = 0
    if not folder.is_dir():
        return 0
    for entry in folder.iterdir():
        if GENERATED.fullmatch(entry.name) and entry.name not in kept:
            with contextlib.suppress(FileNotFoundError):
                entry.unlink()
                removed += 1
    return removed
