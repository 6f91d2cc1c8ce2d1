"""The JSON written by ``python -m benchmarks.realviews.run --json`` as a
Markdown page.

Usage, from the root of a source checkout::

    python -m benchmarks.realviews.page RESULTS.json [MORE.json ...]
        [-o docs/realviews.md] [--merged PATH]

The page names the commands and the machine, then gives every variant's mAP,
Recall@1 and @5 overall, per tier and per family, and its time per query.
Several runs' files (slow variants run apart, a method added later) make one
page; ``--merged`` writes them as one JSON too.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

from benchmarks.commands import PLACEHOLDER, portable_commands
from benchmarks.files import atomic_write
from benchmarks.performance_page import machine_section

__all__ = [
    "DEFAULT_PAGE",
    "descriptor_changes",
    "format_by_tag",
    "format_overall",
    "main",
    "merge_records",
    "render_page",
]

#: Where the page goes unless told otherwise.
DEFAULT_PAGE = Path("docs/realviews.md")
_TIERS = ("standard", "extreme")


def _percent(value) -> str:
    return "-" if value is None else f"{100 * value:.2f}"


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def format_overall(rows: list[dict]) -> str:
    """Every variant's mAP, step-wise mAP, Recall@1, @5, @10 and ms per query
    (and CPU ms per query, where the run measured it)."""
    cpu = any("cpu_ms_per_query" in row for row in rows)
    body = []
    for row in rows:
        mean = row["evaluation"]["mean"]
        body.append(
            [
                f"`{row['variant']}`",
                _percent(mean["mAP"]),
                _percent(row["step_map"]["mean"]),
                _percent(mean["recall@1"]),
                _percent(mean["recall@5"]),
                _percent(mean["recall@10"]),
                f"{row['ms_per_query']:.2f}",
            ]
        )
        if cpu:
            value = row.get("cpu_ms_per_query")
            body[-1].append("-" if value is None else f"{value:.2f}")
    header = ["variant", "mAP", "mAP (steps)", "R@1", "R@5", "R@10", "ms/query"]
    return _table(header + ["CPU ms/query"] * cpu, body)


def format_by_tag(rows: list[dict], tags: list[str], metrics: list[str]) -> str:
    """Each variant's ``metrics`` (``"mAP"``, ``"recall@1"``, ...) for each of
    ``tags``, with the tag's query count in the header."""
    first = rows[0]["evaluation"]["by_tag"]
    header = ["variant"]
    for tag in tags:
        for metric in metrics:
            short = metric.replace("recall@", "R@")
            header.append(f"{tag} ({first[tag]['n_queries']}) {short}")
    body = []
    for row in rows:
        by_tag = row["evaluation"]["by_tag"]
        cells = [f"`{row['variant']}`"]
        cells += [_percent(by_tag[tag][metric]) for tag in tags for metric in metrics]
        body.append(cells)
    return _table(header, body)


def _tags(record: dict) -> tuple[list[str], list[str]]:
    """The tiers and the families, in the order the build counted them."""
    counts = (record.get("dataset") or {}).get("counts") or {}
    tags = sorted(record["variants"][0]["evaluation"]["by_tag"])
    tiers = [tier for tier in _TIERS if tier in tags]
    families = list(counts.get("queries_by_family") or [])
    families = [family for family in families if family in tags] or [
        tag for tag in tags if tag not in tiers
    ]
    return tiers, families


def _counts(record: dict) -> str:
    dataset = record.get("dataset") or {}
    counts = dataset.get("counts")
    if not counts:
        return ""
    tiers = ", ".join(f"{n} {tier}" for tier, n in counts["queries_by_tier"].items())
    manifest = dataset.get("manifest") or {}
    return (
        f"The folder held {counts['images']} images: {counts['scene_images']} "
        f"photographs of {counts['scenes']} scenes and {counts['distractors']} "
        f"distractors (manifest version {manifest.get('version')}, sha256 "
        f"`{str(manifest.get('sha256'))[:16]}`). Each of the {counts['queries']} "
        f"scene photographs is a query ({tiers}); its relevant images are the "
        "other photographs of its scene, and the query itself, in the database "
        "too, is left out of its ranking (leave-one-out).\n"
    )


def descriptor_changes(base: dict, other: dict) -> str:
    """The descriptor options where ``other`` differs from ``base``, as
    ``"affine_tilts 2, max_keypoints 4000"`` (empty where none does), or,
    descriptors of another extractor, that extractor and the file they were
    read from (hloc's local features: ``"hloc aliked.h5"``).

    Examples
    --------
    >>> descriptor_changes({"max_side": 1024, "affine_tilts": 0},
    ...                    {"max_side": 1024, "affine_tilts": 2})
    'affine_tilts 2'
    >>> descriptor_changes({"extractor": "opencv-sift", "max_side": 1024},
    ...                    {"extractor": "hloc", "file": "aliked.h5"})
    'hloc aliked.h5'
    """
    if other.get("extractor") != base.get("extractor"):
        return " ".join(
            str(other[key]) for key in ("extractor", "file") if other.get(key)
        )
    keys = sorted(set(base) | set(other))
    return ", ".join(
        f"{key} {other.get(key)}" for key in keys if base.get(key) != other.get(key)
    )


def merge_records(records: list[dict], names: list[str]) -> dict:
    """Several runs' JSON records as one: the first's machine, folder and
    preparation, every run's command, and the variants of all, in order (a
    variant run again replaces the earlier one, where it was). A run on
    descriptors made otherwise than the first's names its variants with the
    options that differ, in parentheses (``asmk (affine_tilts 2)``).

    Raises
    ------
    ValueError
        Records of different folders (images, queries or manifest).
    """

    def folder(record):
        manifest = (record.get("dataset") or {}).get("manifest") or {}
        return record["n_images"], record["n_queries"], manifest.get("sha256")

    for record, name in zip(records[1:], names[1:], strict=True):
        if folder(record) != folder(records[0]):
            raise ValueError(
                f"{name} measures another folder than {names[0]}: (images, "
                f"queries, manifest sha256) {folder(record)} and {folder(records[0])}"
            )
    variants: dict[str, dict] = {}
    commands: list[str] = []
    base = records[0].get("descriptors") or {}
    for record in records:
        for command in record.get("commands") or [record["command"]]:
            if command not in commands:
                commands.append(command)
        changes = descriptor_changes(base, record.get("descriptors") or {})
        for row in record["variants"]:
            row = {"command": record.get("command"), **row}
            if changes:
                row["variant"] += f" ({changes})"
                row["description"] += f"; descriptors with {changes}"
            variants[row["variant"]] = row
    machines: list[dict] = []
    for record in records:
        for machine in record.get("machines") or [record["machine"]]:
            # threadpoolctl lists the same pools in another order at times.
            pools = sorted(machine.get("thread_pools", []))
            machine = machine | {"thread_pools": pools}
            if machine not in machines:
                machines.append(machine)
    merged = {key: value for key, value in records[0].items() if key != "command"}
    return merged | {
        "commands": commands,
        "machines": machines,
        "variants": list(variants.values()),
    }


def render_page(record: dict, results: Sequence[str] = ("RESULTS.json",)) -> str:
    """The Markdown page of a run's JSON record (or of :func:`merge_records`'s).

    ``results`` are the JSON files' names, for the page's command line. The
    commands show absolute paths under ``DATA/``
    (:func:`benchmarks.commands.portable_commands`).
    """
    rows = record["variants"]
    commands = record.get("commands") or [record["command"]]
    # Shown with the folders of the machine that ran them as DATA/.
    *commands, page_command = portable_commands(
        [
            *commands,
            shlex.join(["python", "-m", "benchmarks.realviews.page", *results]),
        ]
    )
    tiers, families = _tags(record)
    loads = [row["load_average"] for row in rows if "load_average" in row]
    load = (
        f" The machine's load average (1 minute) was {min(loads):.1f} to "
        f"{max(loads):.1f} as the variants' searches ended, on "
        f"{record['machine']['usable_cpus']} usable CPUs."
        if loads
        else ""
    )
    seconds = ", ".join(
        f"{step} {value:.1f} s" for step, value in record["preparation_seconds"].items()
    )
    descriptors = record.get("descriptors") or {}
    parts = [
        "<!-- Generated by python -m benchmarks.realviews.page: do not edit by hand."
        " -->\n\n# Real-view benchmark\n\n"
        "How well vlad finds the other photographs of a scene, taken from "
        "another viewpoint, distance, time of day, season or camera, among "
        "unrelated photographs: the folder that `python -m "
        "benchmarks.realviews.build` makes from public repositories and Debian "
        "packages (see "
        "[benchmarks/realviews/README.md](../benchmarks/realviews/README.md)). "
        "Unlike the [retrieval benchmark](retrieval.md), whose queries are "
        "edited copies of the database's images, nothing here is synthetic. "
        f"Every figure comes from {'one run' if len(commands) == 1 else 'the runs'}"
        " of\n\n```bash\n"
        + "".join(f"{command}\n" for command in commands)
        + page_command
        + "\n```\n\n"
        + (
            f"(`{PLACEHOLDER}/` stands for the folder that held the runs' files) "
            if any(f"{PLACEHOLDER}/" in command for command in commands)
            else ""
        )
        + "on the machine below"
        + (
            f" (the runs were on {len(record['machines'])} machines or settings; "
            "this is the first's: compare ms/query only within one run).\n"
            if len(record.get("machines") or []) > 1
            else ".\n"
        ),
        _counts(record),
        "Descriptors, as their file records them: "
        + ", ".join(f"{key} {value}" for key, value in sorted(descriptors.items()))
        + " (a variant named with descriptor options in parentheses used "
        "descriptors made with those options instead, and one named `(hloc "
        "FILE)` hloc's local features read from FILE: see [learned features on "
        "real views](hloc.md#learned-features-on-real-views))"
        + ". Each codebook is fitted on the descriptors of every image (a "
        "sample of 100,000, seed 0, as `vlad fit` on the folder, unless the "
        "variant says otherwise), and every query ranks the whole database.\n",
        "mAP is revisitop's (the trapezoid rule, see "
        "[Evaluation](evaluation.md)); mAP (steps) is the non-interpolated "
        "mean of the precision at each relevant image (`Evaluation.step_map`). "
        "R@k is the share of "
        "queries with a relevant image among their first k. ms/query is the "
        "search, and the re-ranking where there is one, of one query, on this "
        "machine beside other work; it leaves out extracting and encoding the "
        "query (its vector is its database vector); CPU ms/query, where the run "
        "measured it, is the CPU time of all the process's threads, which other "
        "work on the machine does not inflate. Spatial verification of "
        "the top N counts the query itself among the N, as `vlad search` "
        f"does.{load} Preparation: {seconds}.\n",
        machine_section(record["machine"]),
        "## Overall\n",
        format_overall(rows),
        "## Per tier\n",
        "`standard`: another viewpoint, distance, photographer or lighting; "
        "`extreme`: the WxBS and EVD scenes (a far other viewpoint, with day "
        "and night, seasons or another sensor for WxBS).\n",
        format_by_tag(rows, tiers, ["mAP", "recall@1", "recall@5"]),
        "## Per family\n",
        "`wxbs`: WxBS pairs (viewpoint with illumination, season or "
        "appearance); `evd`: EVD pairs (extreme viewpoint of mostly planar "
        "scenes); `walkaround`: views around a place or along a street "
        "(structure-from-motion samples); `object`: an object or table-top "
        "scene seen from around it; `planar`: near-planar scenes (a cover in "
        "clutter, the Oxford boat, a facade); `landmark`: a building by "
        "other photographers, years apart or by day and night.\n",
        "### mAP\n",
        format_by_tag(rows, families, ["mAP"]),
        "### Recall@1\n",
        format_by_tag(rows, families, ["recall@1"]),
        "### Recall@5\n",
        format_by_tag(rows, families, ["recall@5"]),
        "## The variants\n",
        "\n".join(f"- `{row['variant']}`: {row['description']}" for row in rows) + "\n",
    ]
    return "\n".join(part for part in parts if part)


def main(argv: list[str] | None = None) -> int:
    """Read the JSON files, write the page (and the merged JSON)."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.realviews.page")
    parser.add_argument(
        "results", type=Path, nargs="+", metavar="RESULTS.json",
        help="JSON of a run's --json; several are merged, in order",
    )  # fmt: skip
    parser.add_argument(
        "-o", "--output", type=Path, default=DEFAULT_PAGE, metavar="PAGE",
        help=f"Markdown file to write (default: {DEFAULT_PAGE})",
    )  # fmt: skip
    parser.add_argument(
        "--merged", type=Path, metavar="PATH",
        help="also write the merged JSON of several runs here",
    )  # fmt: skip
    arguments = parser.parse_args(argv)
    records = [
        json.loads(path.read_text(encoding="utf-8")) for path in arguments.results
    ]
    names = [str(path) for path in arguments.results]
    try:
        record = merge_records(records, names)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    words = [*names, *(["-o", str(arguments.output)])]
    if arguments.merged:
        words += ["--merged", str(arguments.merged)]
        with atomic_write(arguments.merged) as handle:
            handle.write((json.dumps(record, indent=1) + "\n").encode("utf-8"))
    with atomic_write(arguments.output) as handle:
        handle.write(render_page(record, words).encode("utf-8"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
