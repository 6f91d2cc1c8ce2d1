"""Thumbnails of the images a page shows, made once with Pillow and kept in the
folder beside the page; and finding an image's file from its name.

A page ``results.html`` keeps its images in ``results_files/``: thumbnails in
``results_files/thumbnails/``, at most :data:`THUMBNAIL_SIZE` pixels on their
longer side, EXIF orientation applied, as JPEG. A thumbnail's file name is a
hash of its source's path, size and modification time and of the thumbnail
size, so the next page over the same images reuses it, and a changed image
gets a new one. Files the page no longer shows are removed (only files named
as vlad names them), so the folder holds what the page needs and moves with
it.
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

from vlad.core._pool import Progress, map_in_order
from vlad.errors import VladError
from vlad.images._files import find_images
from vlad.pages._html import escape, url

__all__ = [
    "THUMBNAIL_SIZE",
    "ImageFolders",
    "Thumbnail",
    "make_files",
    "make_thumbnail",
    "check_page_path",
    "page_folder",
    "prune_folder",
    "require_pillow",
    "source_key",
    "write_file_atomically",
]

#: Pixels on a thumbnail's longer side at most.
THUMBNAIL_SIZE = 160
#: JPEG quality of thumbnails: about 6 KB for a 160 x 120 photo.
THUMBNAIL_QUALITY = 85
#: How vlad names the files it makes in a page's folder.
_GENERATED = re.compile(r"[0-9a-f]{24}\.jpg")


def require_pillow():
    """The ``PIL`` package, or an ImportError that says how to install it."""
    try:
        import PIL.Image
        import PIL.ImageOps
    except ImportError:
        raise ImportError(
            "the HTML pages make thumbnails with Pillow; install it with: "
            "pip install 'vlad-toolkit[html]'"
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
    changes when the file's path, size or modification time does."""
    status = source.stat()
    parts = [os.fsencode(source.resolve()), status.st_size, status.st_mtime_ns, *extra]
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


def make_thumbnail(
    source: Path | None, folder: Path, page_parent: Path, size: int = THUMBNAIL_SIZE
) -> Thumbnail:
    """The thumbnail of ``source`` in ``folder``: reused when there, else made.

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
    """
    if source is None:
        return Thumbnail(None, problem="image not found")
    pil = require_pillow()
    try:
        target = folder / f"{source_key(source, size)}.jpg"
    except OSError as error:
        return Thumbnail(None, problem=f"cannot read the image: {error.strerror}")
    relative = target.relative_to(page_parent).as_posix()
    if target.is_file():
        with contextlib.suppress(OSError, ValueError, pil.Image.DecompressionBombError):
            with pil.Image.open(target) as image:
                image.verify()
                return Thumbnail(relative, *image.size, reused=True)
    try:
        with pil.Image.open(source) as image:
            image.draft("RGB", (size, size))
            image.thumbnail((size, size), pil.Image.Resampling.LANCZOS)
            image = _as_rgb(pil.ImageOps.exif_transpose(image), pil)
            buffer = _jpeg_bytes(image)
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
        if _GENERATED.fullmatch(entry.name) and entry.name not in kept:
            with contextlib.suppress(FileNotFoundError):
                entry.unlink()
                removed += 1
    return removed
