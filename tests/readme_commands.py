"""The two commands of the README's Quick start, which CI runs as they are
written there: the lines of the one fenced block between the markers
``<!-- quick start: commands -->`` and ``<!-- /quick start: commands -->``.

Usage, from the repository root (CI's ``.ci/run`` does this)::

    python3 tests/readme_commands.py    # the commands, one a line

The tests read them with :func:`quick_start_commands` too, so what the README
shows, what CI runs and what the tests check are one text.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["BEGIN", "END", "README", "quick_start_commands"]

README = Path(__file__).resolve().parents[1] / "README.md"
BEGIN = "<!-- quick start: commands -->"
END = "<!-- /quick start: commands -->"


def quick_start_commands(text: str) -> list[str]:
    """The commands of the marked block of README text: its fenced block's
    lines, less blank lines and comments.

    Raises
    ------
    ValueError
        The markers are missing, repeated or out of order, or do not hold one
        fenced ``bash`` block alone.
    """
    if text.count(BEGIN) != 1 or text.count(END) != 1:
        raise ValueError(f"the README must hold {BEGIN} and {END} once each")
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    if end < start:
        raise ValueError(f"{END} comes before {BEGIN}")
    lines = text[start:end].strip().splitlines()
    if len(lines) < 2 or lines[0] != "```bash" or lines[-1] != "```":
        raise ValueError(f"between {BEGIN} and {END} must be one ```bash block")
    return [
        line
        for line in lines[1:-1]
        if line.strip() and not line.lstrip().startswith("#")
    ]


if __name__ == "__main__":
    for command in quick_start_commands(README.read_text(encoding="utf-8")):
        print(command)
