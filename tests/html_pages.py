"""Reading back the HTML pages vlad writes, with the standard library's parser,
and hostile image names for them; a plain module the page tests import."""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote_to_bytes

import numpy as np

#: Names a file system accepts that HTML must show as text: markup, quotes,
#: an ampersand entity, a URL's special characters, a right-to-left override.
HOSTILE_NAMES = [
    "<img src=x onerror=alert(1)>.jpg",
    "\"quoted' & <b>bold</b>.jpg",
    "a #b ?c %41 d.jpg",
    "left\u202egpj.exe.jpg",
]

_VOID = {"img", "input", "meta", "br", "hr", "link", "source", "circle", "line"}


@dataclass
class Element:
    """A start tag, its attributes, and the text inside it."""

    tag: str
    attributes: dict
    text: list[str] = field(default_factory=list)
    children: list[Element] = field(default_factory=list)

    @property
    def classes(self) -> set[str]:
        return set((self.attributes.get("class") or "").split())

    def content(self) -> str:
        return "".join(self.text)

    def find(self, tag: str | None = None, cls: str | None = None) -> list[Element]:
        """Every element below this one with that tag and class, in order."""
        found = []
        for child in self.children:
            if (tag is None or child.tag == tag) and (
                cls is None or cls in child.classes
            ):
                found.append(child)
            found.extend(child.find(tag, cls))
        return found


class _TreeBuilder(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.root = Element("#document", {})
        self.open = [self.root]

    def handle_starttag(self, tag, attrs):
        element = Element(tag, dict(attrs))
        self.open[-1].children.append(element)
        if tag not in _VOID:
            self.open.append(element)

    def handle_startendtag(self, tag, attrs):
        self.open[-1].children.append(Element(tag, dict(attrs)))

    def handle_endtag(self, tag):
        for depth in range(len(self.open) - 1, 0, -1):
            if self.open[depth].tag == tag:
                del self.open[depth:]
                return

    def handle_data(self, data):
        for element in self.open:
            element.text.append(data)


def parse_page(path: Path) -> Element:
    """The page's element tree."""
    builder = _TreeBuilder()
    builder.feed(Path(path).read_text(encoding="utf-8"))
    builder.close()
    return builder.root


def source_file(page: Path, src: str) -> Path:
    """The file a relative ``src`` of ``page`` names, percent-decoding it."""
    return page.parent / Path(unquote_to_bytes(src).decode("utf-8", "surrogateescape"))


def write_photo(path: Path, size=(60, 40), colour=(200, 40, 40)) -> Path:
    """A small JPEG of one colour with a darker square in its top-left corner."""
    import cv2

    image = np.zeros((size[1], size[0], 3), np.uint8)
    image[:] = colour[::-1]
    image[: size[1] // 3, : size[0] // 3] = (30, 30, 30)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(cv2.imencode(".jpg", image)[1].tobytes())
    return path
