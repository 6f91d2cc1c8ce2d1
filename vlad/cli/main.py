"""The ``vlad`` command group."""

from __future__ import annotations

import click

from vlad._version import __version__
from vlad.cli.bench import bench
from vlad.cli.encode import encode
from vlad.cli.evaluate import evaluate
from vlad.cli.extract import extract
from vlad.cli.fit import fit
from vlad.cli.index import index
from vlad.cli.info import info
from vlad.cli.search import search
from vlad.cli.show_matches import show_matches

__all__ = ["main"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="vlad")
def main() -> None:
    """VLAD vectors of image folders: SIFT descriptors, codebooks, vectors,
    search and evaluation.

    \b
    Typical use, on the bundled photos:
        vlad fit data -k 16 -o codebook.npz
        vlad encode data --codebook codebook.npz -o vectors.npy
        vlad index vectors.npy -o index
        vlad search index data/chelsea.jpg -c codebook.npz -k 3

    Run "vlad COMMAND --help" for a command's options.
    """


main.add_command(extract)
main.add_command(fit)
main.add_command(encode)
main.add_command(info)
main.add_command(index)
main.add_command(search)
main.add_command(evaluate)
main.add_command(show_matches)
main.add_command(bench)
