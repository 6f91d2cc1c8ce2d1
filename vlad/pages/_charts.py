"""Small charts written as SVG by hand: a line chart (the precision-recall
curve) and a horizontal bar chart (a metric by tag).

Hand-built rather than matplotlib's SVG output: matplotlib is no runtime
dependency of vlad, its SVG draws each letter as a path (tens of kilobytes per
chart, text that cannot be selected or searched), and a few dozen lines here
give charts of one or two kilobytes whose every label goes through the same
escaping as the rest of the page.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from vlad.pages._html import escape

__all__ = ["bar_chart", "line_chart"]

#: Colours of successive series and bars (colour-blind safe, Okabe and Ito).
COLOURS = ("#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9")


def line_chart(
    series: Sequence[tuple[str, Sequence[float], Sequence[float]]],
    *,
    title: str,
    x_label: str,
    y_label: str,
    width: int = 440,
    height: int = 320,
) -> str:
    """An SVG line chart of values in [0, 1] on both axes.

    Parameters
    ----------
    series : sequence of (name, xs, ys)
        Each a line with dots; NaN points are left out. With more than one
        series, a legend names them.
    title, x_label, y_label : str
        Text (escaped here); the title is also the chart's accessible name.
    width, height : int
        Pixels.

    Returns
    -------
    str
        An ``<svg>`` element.
    """
    left, right, top, bottom = 52, 16, 28, 44
    plot_width, plot_height = width - left - right, height - top - bottom

    def x_of(value: float) -> float:
        return left + value * plot_width

    def y_of(value: float) -> float:
        return top + (1.0 - value) * plot_height

    parts = [_svg_open(width, height, title)]
    parts.append(f'<text x="{left}" y="18">{escape(title)}</text>')
    for tick in (0.0, 0.2, 0.4, 0.6, 0.8, 1.0):
        x, y = x_of(tick), y_of(tick)
        parts.append(
            f'<line x1="{left}" y1="{y:.1f}" x2="{left + plot_width}" y2="{y:.1f}" '
            'stroke="#d0d7de" stroke-width="1"/>'
            f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{tick:.1f}</text>'
            f'<text x="{x:.1f}" y="{top + plot_height + 16}" text-anchor="middle">'
            f"{tick:.1f}</text>"
        )
    parts.append(
        f'<rect x="{left}" y="{top}" width="{plot_width}" height="{plot_height}" '
        'fill="none" stroke="#57606a" stroke-width="1"/>'
        f'<text x="{left + plot_width / 2:.1f}" y="{height - 6}" '
        f'text-anchor="middle">{escape(x_label)}</text>'
        f'<text transform="translate(14 {top + plot_height / 2:.1f}) rotate(-90)" '
        f'text-anchor="middle">{escape(y_label)}</text>'
    )
    for number, (name, xs, ys) in enumerate(series):
        colour = COLOURS[number % len(COLOURS)]
        points = [
            (x_of(x), y_of(y))
            for x, y in zip(xs, ys, strict=True)
            if not (math.isnan(x) or math.isnan(y))
        ]
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
        parts.append(
            f'<polyline points="{path}" fill="none" stroke="{colour}" '
            'stroke-width="2"/>'
        )
        parts.extend(
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{colour}"/>'
            for x, y in points
        )
        if len(series) > 1:
            y = top + 14 + 16 * number
            parts.append(
                f'<line x1="{left + plot_width - 120}" y1="{y - 4}" '
                f'x2="{left + plot_width - 100}" y2="{y - 4}" stroke="{colour}" '
                f'stroke-width="2"/><text x="{left + plot_width - 94}" y="{y}">'
                f"{escape(name)}</text>"
            )
    parts.append("</svg>")
    return "".join(parts)


def bar_chart(
    bars: Sequence[tuple[str, float]],
    *,
    title: str,
    width: int = 440,
    bar_height: int = 20,
) -> str:
    """An SVG chart of horizontal bars of values in [0, 1], each labelled with
    its name on the left and its value, in percent, at its end.

    Parameters
    ----------
    bars : sequence of (name, value)
        NaN values draw no bar and show ``-``.
    title : str
        Text (escaped here); the chart's accessible name.
    width, bar_height : int
        Pixels.

    Returns
    -------
    str
        An ``<svg>`` element.
    """
    longest = max((len(name) for name, _ in bars), default=4)
    left = min(12 + 7 * longest, width // 2)
    right, top = 56, 28
    plot_width = width - left - right
    height = top + len(bars) * (bar_height + 6) + 8
    parts = [_svg_open(width, height, title)]
    parts.append(f'<text x="4" y="18">{escape(title)}</text>')
    for number, (name, value) in enumerate(bars):
        y = top + number * (bar_height + 6)
        middle = y + bar_height / 2 + 4
        parts.append(
            f'<text x="{left - 6}" y="{middle:.1f}" text-anchor="end">'
            f"{escape(name)}</text>"
        )
        if math.isnan(value):
            shown, length = "-", 0.0
        else:
            shown, length = f"{100 * value:.1f}%", max(0.0, min(1.0, value))
        colour = COLOURS[0]
        parts.append(
            f'<rect x="{left}" y="{y}" width="{length * plot_width:.1f}" '
            f'height="{bar_height}" fill="{colour}"/>'
            f'<text x="{left + length * plot_width + 4:.1f}" y="{middle:.1f}">'
            f"{shown}</text>"
        )
    parts.append(
        f'<line x1="{left}" y1="{top - 4}" x2="{left}" y2="{height - 4}" '
        'stroke="#57606a" stroke-width="1"/></svg>'
    )
    return "".join(parts)


def _svg_open(width: int, height: int, title: str) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="{escape(title)}"><title>{escape(title)}</title>'
    )
