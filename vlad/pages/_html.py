"""The HTML the pages share: escaping untrusted text, URL-encoding paths, the
page frame, and the cards that show one image.

Every name a page shows comes from a file system or a ground truth and is
untrusted: :func:`escape` makes it text (``<img src=x onerror=alert(1)>.jpg``
shows as those characters and runs nothing), and :func:`url` makes a relative
path a URL. As a second wall, each page carries a Content Security Policy that
lets only its own script and style run (by their SHA-256) and loads images
from its own location or local files alone: nothing leaves the machine.
"""

from __future__ import annotations

import base64
import hashlib
import html
import math
import os
import unicodedata
from urllib.parse import quote

__all__ = [
    "PAGE_TITLES",
    "RELEVANCE_LABELS",
    "STYLE",
    "escape",
    "html_page",
    "image_card",
    "percent",
    "url",
    "visible",
]

#: The title of each kind of page vlad writes (what ``vlad info`` tells them by).
PAGE_TITLES = {
    "search page": "vlad search results",
    "evaluation report": "vlad evaluation",
}

#: Relevance of an image to a query, by ground truth: the text shown and the
#: class that colours its card (text and colour together, never colour alone).
RELEVANCE_LABELS = {
    "relevant": "relevant",
    "not relevant": "not-relevant",
    "junk": "junk",
}

#: The pages' style sheet: no fonts to fetch, system ones only.
STYLE = """
:root { color-scheme: light; --relevant: #1a7f37; --not-relevant: #c2185b;
  --junk: #6e7781; --line: #d0d7de; }
body { font: 14px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif;
  margin: 0 1.5em 2em; color: #1f2328; background: #fff; }
h1 { font-size: 1.5em; margin: 0.8em 0 0.3em; }
h2 { font-size: 1.2em; margin: 1.4em 0 0.4em; }
.summary, .notes { color: #444; margin: 0.2em 0; }
#controls { position: sticky; top: 0; background: #fff; padding: 0.5em 0;
  border-bottom: 1px solid var(--line); z-index: 1; }
#controls label { margin-right: 1em; }
.row { display: flex; gap: 10px; padding: 10px 0;
  border-bottom: 1px solid var(--line); align-items: flex-start; }
.row[hidden] { display: none; }
.hits { display: flex; flex-wrap: wrap; gap: 8px; margin: 0; padding: 0;
  list-style: none; }
.card { width: 172px; margin: 0; padding: 4px; border: 2px solid var(--line);
  border-radius: 4px; background: #fff; font-size: 12px; }
.card.query { border-color: #0969da; background: #f6f8fa; }
.card.relevant { border-color: var(--relevant); background: #e6f4ea; }
.card.not-relevant { border-color: var(--not-relevant); background: #fdecf3;
  border-style: dashed; }
.card.junk { border-color: var(--junk); background: #f0f0f0; border-style: dotted; }
.frame { width: 160px; height: 160px; display: flex; align-items: center;
  justify-content: center; background: #eaeef2; }
.frame img { max-width: 160px; max-height: 160px; }
.placeholder { color: #57606a; text-align: center; padding: 0 6px; }
.name { font-family: ui-monospace, "SFMono-Regular", Menlo, monospace;
  overflow-wrap: anywhere; margin: 2px 0; }
.facts { margin: 2px 0; color: #333; }
.label { font-weight: 600; }
.relevant .label { color: var(--relevant); }
.not-relevant .label { color: var(--not-relevant); }
.junk .label { color: var(--junk); }
.reason { color: #9a6700; }
table { border-collapse: collapse; margin: 0.5em 0; }
th, td { border: 1px solid var(--line); padding: 3px 8px; text-align: right; }
th:first-child, td:first-child { text-align: left; }
.expected { border-left: 2px solid var(--line); padding-left: 10px; }
.expected .facts { margin-top: 0; }
.charts { display: flex; flex-wrap: wrap; gap: 24px; align-items: flex-start; }
svg text { font: 12px system-ui, sans-serif; fill: #1f2328; }
"""


def visible(name: str) -> str:
    """``name`` with what would not show as itself written as an escape.

    Bytes that are not UTF-8 (kept as surrogate escapes) show as ``\\xNN``;
    control and format characters (a newline, a right-to-left override) as
    ``\\n``, ``\\u202e``, ...: a name cannot hide or reorder its neighbours.
    """
    if name.isprintable():
        return name
    name = name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return "".join(
        character.encode("unicode_escape").decode("ascii")
        if unicodedata.category(character)[0] == "C"
        else character
        for character in name
    )


def escape(value: object) -> str:
    """``str(value)``, :func:`visible`, as HTML text (quotes escaped too, so it
    serves in attribute values).

    Examples
    --------
    >>> from vlad.pages._html import escape
    >>> escape("<img src=x onerror=alert(1)>.jpg")
    '&lt;img src=x onerror=alert(1)&gt;.jpg'
    """
    return html.escape(visible(str(value)), quote=True)


def url(relative_path: str) -> str:
    """A relative path (``/`` separators) as a URL for ``src`` and ``href``.

    Every byte but letters, digits, ``_.-~`` and ``/`` is percent-encoded, so
    ``#``, ``?``, ``%``, quotes and spaces in a folder's name keep their
    meaning as characters of the path.

    Examples
    --------
    >>> from vlad.pages._html import url
    >>> url('my "results" #2_files/thumbnails/0a.jpg')
    'my%20%22results%22%20%232_files/thumbnails/0a.jpg'
    """
    return quote(os.fsencode(relative_path), safe="/")


def percent(value: float) -> str:
    """``0.4567`` as ``"45.67"``; NaN as ``"-"``."""
    return "-" if math.isnan(value) else f"{100 * value:.2f}"


def image_card(
    thumbnail: str,
    name: str,
    facts: str = "",
    *,
    kind: str = "",
    tag: str = "div",
) -> str:
    """One image's card: its thumbnail (or placeholder), name and facts.

    Parameters
    ----------
    thumbnail : str
        HTML of the thumbnail or its placeholder.
    name : str
        The image's name (escaped here).
    facts : str
        HTML of the lines under the name (escaped by the caller).
    kind : str
        Extra classes of the card: ``"query"``, or a class of
        :data:`RELEVANCE_LABELS`.
    tag : str
        The card's element (``"li"`` in a list of hits).
    """
    classes = " ".join(["card", kind]).strip()
    return (
        f'<{tag} class="{classes}"><div class="frame">{thumbnail}</div>'
        f'<p class="name">{escape(name)}</p>{facts}</{tag}>'
    )


def _hash_source(content: str) -> str:
    """The CSP source naming an inline script or style by its SHA-256."""
    digest = hashlib.sha256(content.encode("utf-8")).digest()
    return f"'sha256-{base64.b64encode(digest).decode('ascii')}'"


def html_page(title: str, body: str, script: str = "") -> str:
    """A whole page: ``body`` (HTML) under a title (text), with the style sheet
    and ``script`` (JavaScript) inline.

    Its Content Security Policy allows that script and style sheet only (no
    inline event handler, no other script), and images from the page's own
    location (``'self'``, and ``file:`` for browsers that give local files
    no origin); nothing else is fetched.
    """
    policy = "; ".join(
        [
            "default-src 'none'",
            "img-src 'self' file:",
            f"style-src {_hash_source(STYLE)}",
            f"script-src {_hash_source(script)}" if script else "script-src 'none'",
            "base-uri 'none'",
            "form-action 'none'",
        ]
    )
    script_element = f"<script>{script}</script>\n" if script else ""
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{policy}">\n'
        '<meta name="referrer" content="no-referrer">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{escape(title)}</title>\n<style>{STYLE}</style>\n</head>\n"
        f"<body>\n{body}\n{script_element}</body>\n</html>\n"
    )
