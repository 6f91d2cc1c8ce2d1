"""Cards of the pages' rows: a query, and one of its hits with its rank, its
relevance by the ground truth, its score and its inliers."""

from __future__ import annotations

import math

from vlad.evaluation._ground_truth import QueryTruth
from vlad.pages._html import RELEVANCE_LABELS, escape, image_card, percent, url

__all__ = ["hit_card", "query_card", "relevance"]


def relevance(name: str, truth: QueryTruth | None) -> str | None:
    """``"relevant"``, ``"junk"`` or ``"not relevant"``: what the ground truth
    says of image ``name`` for a query; None without a ground truth for it.

    Examples
    --------
    >>> from vlad.evaluation import QueryTruth
    >>> from vlad.pages._cards import relevance
    >>> truth = QueryTruth(relevant=("a.jpg",), junk=("j.jpg",))
    >>> [relevance(name, truth) for name in ["a.jpg", "j.jpg", "x.jpg"]]
    ['relevant', 'junk', 'not relevant']
    """
    if truth is None:
        return None
    if name in truth.relevant:
        return "relevant"
    if name in truth.junk:
        return "junk"
    return "not relevant"


def hit_card(
    thumbnail: str,
    name: str,
    rank: int | None,
    label: str | None,
    *,
    score: float | None = None,
    inliers: int | None = None,
    matches: str | None = None,
    note: str | None = None,
) -> str:
    """The ``<li>`` card of a hit.

    Parameters
    ----------
    thumbnail : str
        HTML of its thumbnail.
    name : str
        The database image's name.
    rank : int or None
        From 1; None shows none.
    label : str or None
        Its relevance (a key of :data:`~vlad.pages._html.RELEVANCE_LABELS`),
        shown as text and as the card's colour; None shows none.
    score : float, optional
    inliers : int, optional
        Inliers found by spatial verification; -1 when not verified.
    matches : str, optional
        Path (relative to the page's folder) of the picture of its inliers,
        which the inlier count links to.
    note : str, optional
        Text after the label.
    """
    facts = [] if rank is None else [f'<span class="rank">#{rank}</span>']
    if label is not None:
        facts.append(f'<span class="label">{escape(label)}</span>')
    if note is not None:
        facts.append(escape(note))
    lines = [" ".join(facts)]
    details = []
    if score is not None:
        details.append(f"score {float(score):.4f}")
    if inliers is not None:
        if inliers < 0:
            details.append("not verified")
        else:
            counted = f"{int(inliers)} inlier{'' if inliers == 1 else 's'}"
            if matches is not None:
                counted = f'<a class="matches" href="{url(matches)}">{counted}</a>'
            details.append(counted)
    if details:
        lines.append(" · ".join(details))
    kind = RELEVANCE_LABELS[label] if label is not None else ""
    return image_card(
        thumbnail,
        name,
        "".join(f'<p class="facts">{line}</p>' for line in lines),
        kind=kind,
        tag="li",
    )


def query_card(
    thumbnail: str,
    name: str,
    *,
    average_precision: float | None = None,
    n_relevant: int | None = None,
    n_found: int | None = None,
    reason: str | None = None,
    tags: tuple[str, ...] = (),
) -> str:
    """The card of a query: its AP and relevant images found when a ground
    truth names it, its tags, and why it found nothing when it did not."""
    lines = ['<span class="label">query</span>']
    if average_precision is not None and not math.isnan(average_precision):
        lines.append(f'AP <span class="ap">{percent(average_precision)}</span>%')
    if n_relevant is not None:
        found = "" if n_found is None else f"{n_found} of "
        lines.append(f"{found}{n_relevant} relevant found")
    if tags:
        lines.append("tags: " + ", ".join(escape(tag) for tag in tags))
    if reason:
        lines.append(f'<span class="reason">{escape(reason)}</span>')
    facts = "".join(f'<p class="facts">{line}</p>' for line in lines)
    return image_card(thumbnail, name, facts, kind="query")
