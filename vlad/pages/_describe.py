"""What a page and its folder hold, for ``vlad info``: which page it is, the
images it shows and whether they are all there (a page moved without its
folder shows none)."""

from __future__ import annotations

import html.parser
import os
from pathlib import Path
from urllib.parse import unquote_to_bytes, urlsplit

from vlad.errors import VladError
from vlad.pages._html import PAGE_TITLES
from vlad.pages._thumbnails import GENERATED, page_folder

__all__ = ["PAGE_SUFFIXES", "describe_page", "describe_page_folder", "is_page_folder"]

#: File name endings of the pages vlad writes, compared in lower case.
PAGE_SUFFIXES = (".html", ".htm")
#: The folders of a page's folder that vlad makes, and what each holds.
_SUBFOLDERS = {"thumbnails": "n_thumbnails", "matches": "n_matches_pictures"}
#: Bytes of a page read at most: the default page of 1000 queries is 4 MB.
_MAX_PAGE_BYTES = 256 << 20


class _References(html.parser.HTMLParser):
    """The title of a page and the local files its images and links name."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.title: list[str] = []
        self.files: list[str] = []
        self._in_title = False
        self._titled = False  # the page's title read (charts have titles too)

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        self._in_title = tag == "title" and not self._titled
        reference = attributes.get("src" if tag == "img" else "href")
        if tag in ("img", "a") and reference:
            parts = urlsplit(reference)
            if not (parts.scheme or parts.netloc or parts.path.startswith("/")):
                self.files.append(os.fsdecode(unquote_to_bytes(parts.path)))

    def handle_endtag(self, tag):
        if tag == "title" and self._in_title:
            self._in_title, self._titled = False, True

    def handle_data(self, data):
        if self._in_title:
            self.title.append(data)


def describe_page(path: Path) -> dict:
    """A page that ``vlad search --html`` or ``vlad evaluate --html`` wrote:
    which, its folder, and the images it shows (found or not).

    Raises
    ------
    ValueError
        An HTML file that is not a vlad page, or not UTF-8.
    """
    if path.stat().st_size > _MAX_PAGE_BYTES:
        raise VladError(f"{path} is not a vlad page: larger than any page vlad writes")
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        raise VladError(f"{path} is not a vlad page: it is not UTF-8") from None
    parser = _References()
    parser.feed(text)
    title = "".join(parser.title).strip()
    kinds = {page_title: kind for kind, page_title in PAGE_TITLES.items()}
    if title not in kinds:
        raise VladError(
            f"{path} is not a vlad page: its title is not one of "
            f"{', '.join(map(repr, kinds))}"
        )
    shown = list(dict.fromkeys(parser.files))
    folder = page_folder(path)
    return {
        "file": str(path),
        "kind": kinds[title],
        "folder": str(folder) if folder.is_dir() else None,
        "n_images": len(shown),
        "n_missing": sum(1 for name in shown if not (path.parent / name).is_file()),
    }


def is_page_folder(path: Path) -> bool:
    """Whether ``path`` is a page's folder (``results_files`` beside
    ``results.html``, or a folder so named holding what vlad makes there)."""
    if not path.is_dir() or not path.name.endswith("_files"):
        return False
    stem = path.name.removesuffix("_files")
    if any(path.with_name(stem + suffix).is_file() for suffix in PAGE_SUFFIXES):
        return True
    return any((path / name).is_dir() for name in _SUBFOLDERS)


def describe_page_folder(path: Path) -> dict:
    """A page's folder: its page, and the thumbnails and pictures of inliers
    vlad made in it (other files are counted apart)."""
    stem = path.name.removesuffix("_files")
    pages = [path.with_name(stem + suffix) for suffix in PAGE_SUFFIXES]
    summary: dict = {
        "file": str(path),
        "kind": "page folder",
        "page": next((str(page) for page in pages if page.is_file()), None),
    }
    n_bytes = n_other = 0
    for name, field in _SUBFOLDERS.items():
        summary[field] = 0
        if not (path / name).is_dir():
            continue
        for entry in os.scandir(path / name):
            if GENERATED.fullmatch(entry.name) and entry.is_file():
                summary[field] += 1
                n_bytes += entry.stat().st_size
            else:
                n_other += 1
    summary["n_bytes"] = n_bytes
    summary["n_other_files"] = n_other
    return summary
