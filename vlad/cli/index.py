"""``vlad index``: an index of VLAD vectors for ``vlad search``."""

from __future__ import annotations

import logging
from pathlib import Path

import click

from vlad.cli.options import overwrite_option, verbosity_options
from vlad.cli.reporting import count, library_errors
from vlad.formats.shards import open_shards
from vlad.formats.vectors import load_vectors
from vlad.search.expansion import QueryExpansion
from vlad.search.index import build_index
from vlad.search.queries import source_record
from vlad.search.streamed_index import index_shards

__all__ = ["index"]

logger = logging.getLogger("vlad.cli")


@click.command(short_help="Index VLAD vectors for search.")
@click.argument("vectors", type=click.Path(exists=True, path_type=Path))
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
@click.option(
    "--factory",
    help="faiss index_factory string for approximate or compressed search, such "
    'as "IVF256,PQ32" or "HNSW32" (needs pip install \'vlad-toolkit[faiss]\'); default '
    "exact search.",
)
@click.option(
    "--parameters",
    help='faiss search parameters kept with the index, such as "nprobe=16".',
)
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
@overwrite_option
@verbosity_options
def index(
    vectors: Path,
    output: Path,
    pca: int | None,
    whiten: float | None,
    factory: str | None,
    parameters: str | None,
    augment: int,
    augment_alpha: float,
    overwrite: bool,
    verbosity: int,
) -> None:
    """Index the VLAD vectors of "vlad encode" (VECTORS.npy, its names beside
    it, or a folder of shards) or hloc's global features (VECTORS.h5, from
    "vlad encode" or hloc's NetVLAD...) for "vlad search".

    Images without descriptors (all-zero vectors) are kept by name but never
    returned as matches. The folder is written whole or not at all. A folder
    of shards is read a shard at a time (a faiss index is trained on a
    uniform sample of 50,000 vectors, then filled), unless --pca, --whiten or
    --augment, which need every vector at once, are given.

    \b
    Example:
        vlad index vectors.npy -o index --pca 128 --whiten
        vlad index vectors.npy -o index --factory "IVF256,PQ32"
    """
    if output.exists() and not overwrite:
        raise click.ClickException(
            f"{output} already exists; pass --overwrite to replace it"
        )
    with library_errors():
        if vectors.is_dir() and pca is None and whiten is None and not augment:
            # A folder of shards is indexed a shard at a time.
            built = index_shards(
                vectors,
                output,
                factory=factory,
                parameters=parameters,
                source=source_record(open_shards(vectors).record),
                overwrite=overwrite,
            )
        else:
            matrix, names, record = load_vectors(vectors)
            augmentation = QueryExpansion(augment, augment_alpha) if augment else None
            built = build_index(
                matrix,
                names,
                pca=pca,
                whiten=whiten,
                factory=factory,
                parameters=parameters,
                augmentation=augmentation,
                source=source_record(record),
            )
            built.save(output, overwrite=overwrite)
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
