"""``vlad index``: an index of VLAD vectors, or an ASMK inverted file of local
descriptors, for ``vlad search``."""

from __future__ import annotations

import logging
from pathlib import Path

import click

from vlad._extras import install_command
from vlad.cli._options import overwrite_option, spec_option, verbosity_options
from vlad.cli._reporting import count, library_errors
from vlad.core._parameters import (
    ALPHA,
    BINARY,
    FACTORY,
    IDF,
    QUANTIZER,
    QUANTIZER_PARAMETERS,
    SEARCH_PARAMETERS,
    THRESHOLD,
)
from vlad.pipeline._index_build import write_index

__all__ = ["index"]

logger = logging.getLogger("vlad.cli")


#: Options of each method that the other refuses.
_VLAD_ONLY = ("pca", "whiten", "factory", "parameters", "augment", "augment_alpha")
_ASMK_ONLY = (
    "codebook",
    "binary",
    "alpha",
    "threshold",
    "idf",
    "quantizer",
    "quantizer_parameters",
    "append",
    "merge",
    "resume",
)


def _with_asmk(help: str) -> str:
    """The help of an option that only ``--method asmk`` reads."""
    return f"With --method asmk: {help[0].lower()}{help[1:]}"


@click.command(short_help="Index VLAD vectors (or descriptors, by ASMK) for search.")
@click.argument(
    "vectors", metavar="INPUT", type=click.Path(exists=True, path_type=Path)
)
@click.option(
    "-o",
    "--output",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Index folder to write.",
)
@click.option(
    "--pca",
    type=click.IntRange(min=1),
    help="Learn a PCA-whitening to this many dimensions on the vectors.",
)
@click.option(
    "--whiten",
    type=click.FloatRange(0.0, 1.0),
    is_flag=False,
    flag_value=1.0,
    help="Whitening power: 1 (alone: --whiten) whitens fully, 0 only projects. "
    "Default 1 with --pca.",
)
@spec_option(FACTORY, help=f"{FACTORY.help} Needs {install_command('faiss')}.")
@spec_option(SEARCH_PARAMETERS, help=f"{SEARCH_PARAMETERS.help} Kept with the index.")
@click.option(
    "--augment",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Database-side augmentation: average each vector with this many of "
    "its nearest neighbours (0: none).",
)
@click.option(
    "--augment-alpha",
    type=click.FloatRange(min=0.0),
    default=3.0,
    show_default=True,
    help="Neighbour weight is similarity to this power (0: plain average).",
)
@click.option(
    "--method",
    type=click.Choice(["vlad", "asmk"]),
    default="vlad",
    show_default=True,
    help="vlad: index VLAD vectors; asmk: index local descriptors in an inverted "
    "file searched by the aggregated selective match kernel (needs --codebook, "
    "of thousands of words).",
)
@click.option(
    "-c",
    "--codebook",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="With --method asmk: the visual words (kept in the index).",
)
@spec_option(BINARY, "--binary/--full", help=_with_asmk(BINARY.help))
@spec_option(ALPHA, help=_with_asmk(ALPHA.help))
@spec_option(THRESHOLD, help=_with_asmk(THRESHOLD.help))
@spec_option(IDF, is_flag=True, show_default=False, help=_with_asmk(IDF.help))
@spec_option(QUANTIZER, help=_with_asmk(QUANTIZER.help))
@spec_option(
    QUANTIZER_PARAMETERS,
    help=_with_asmk(QUANTIZER_PARAMETERS.help),
)
@click.option(
    "--append",
    is_flag=True,
    help="With --method asmk: add INPUT's images to the index OUTPUT as a new "
    "segment, with its codebook and settings (nothing stored is rewritten).",
)
@click.option(
    "--merge",
    is_flag=True,
    help="With --append: then merge the index's segments into one.",
)
@click.option(
    "--resume",
    is_flag=True,
    help="With --method asmk: go on from the segments that an interrupted "
    "build of OUTPUT wrote (kept beside it, in .OUTPUT.building), if the "
    "codebook, settings and images are the same.",
)
@overwrite_option
@verbosity_options
@click.pass_context
def index(
    ctx: click.Context,
    vectors: Path,
    output: Path,
    pca: int | None,
    whiten: float | None,
    factory: str | None,
    parameters: str | None,
    augment: int,
    augment_alpha: float,
    method: str,
    codebook: Path | None,
    binary: bool,
    alpha: float,
    threshold: float,
    idf: bool,
    quantizer: str,
    quantizer_parameters: str | None,
    append: bool,
    merge: bool,
    resume: bool,
    overwrite: bool,
    verbosity: int,
) -> None:
    """Index the VLAD vectors of "vlad encode" (INPUT.npy, its names beside
    it, or a folder of shards) or hloc's global features (INPUT.h5, from
    "vlad encode" or hloc's NetVLAD...) for "vlad search"; or, with --method
    asmk, the descriptors of "vlad extract" (INPUT.npz or a folder of shards).

    ASMK assigns each descriptor to its nearest word and keeps, per image
    and word, the sum of their residuals; a query's words are compared
    with those of the images holding them.

    Images without descriptors (all-zero vectors) are kept by name but never
    returned as matches. The folder is written whole or not at all. A folder
    of shards is read a shard at a time (a faiss index is trained on a
    uniform sample of 50,000 vectors, then filled), unless --pca, --whiten or
    --augment, which need every vector at once, are given.

    An ASMK index grows in place with --append: INPUT's images become a new
    segment of OUTPUT, searched with the others; --merge then makes one
    segment of them all. A large ASMK index is built a shard at a time,
    written out in segments as it grows: an interrupted build goes on from
    its last segment with --resume.

    \b
    Example:
        vlad index vectors.npy -o index --pca 128 --whiten
        vlad index vectors.npy -o index --factory "IVF256,PQ32"
        vlad index descriptors.npz --method asmk -c codebook.npz -o index
        vlad index more.npz --method asmk --append -o index
        vlad index shards/ --method asmk -c codebook.npz -o index --resume
    """
    if output.exists() and not overwrite and not append:
        raise click.ClickException(
            f"{output} already exists; pass --overwrite to replace it"
        )
    _check_method_options(ctx, method)
    with library_errors():
        built = write_index(
            vectors,
            output,
            method=method,
            pca=pca,
            whiten=whiten,
            factory=factory,
            parameters=parameters,
            augment=augment,
            augment_alpha=augment_alpha,
            codebook=codebook,
            binary=binary,
            alpha=alpha,
            threshold=threshold,
            idf=idf,
            quantizer=quantizer,
            quantizer_parameters=quantizer_parameters,
            append=append,
            merge=merge,
            overwrite=overwrite,
            resume=resume,
        )
    if append:
        logger.info(
            "added the images of %s to %s: %s in %s",
            vectors,
            output,
            count(built.n_images, "image"),
            count(built.n_segments, "segment"),
        )
    elif method == "asmk":
        logger.info(
            "wrote an %s index of %s (%s words, %s, %d bytes each) to %s",
            "ASMK*" if binary else "ASMK",
            count(built.n_images, "image"),
            f"{built.n_words:,}",
            count(built.n_entries, "image word", "image words"),
            built.bytes_per_entry,
            output,
        )
    else:
        search = "exact search" if built.factory is None else f"faiss {built.factory!r}"
        logger.info(
            "wrote an index of %s (%d dimensions, %s, %d bytes per image) to %s",
            count(built.n_images, "image"),
            built.dimension,
            search,
            built.bytes_per_image,
            output,
        )
    if built.n_empty:
        logger.info(
            "%s no descriptors and will never match",
            count(built.n_empty, "image") + (" has" if built.n_empty == 1 else " have"),
        )


def _check_method_options(ctx: click.Context, method: str) -> None:
    """Refuse the options of the other method, or ASMK without a codebook."""
    refused = _ASMK_ONLY if method == "vlad" else _VLAD_ONLY
    given = [
        name
        for name in refused
        if ctx.get_parameter_source(name) is not click.core.ParameterSource.DEFAULT
    ]
    if given:
        options = ", ".join("--" + name.replace("_", "-") for name in given)
        raise click.UsageError(f"{options} do not apply to --method {method}")
    if method == "asmk" and ctx.params["codebook"] is None and not ctx.params["append"]:
        raise click.UsageError("--method asmk needs --codebook")
