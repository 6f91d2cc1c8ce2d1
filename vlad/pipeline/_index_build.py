"""An index folder from files, as ``vlad index`` writes it: VLAD vectors in an
exact or faiss index, or local descriptors in an ASMK inverted file."""

from __future__ import annotations

import os

from vlad.asmk._index import ASMKIndex
from vlad.asmk._streamed import write_asmk_index
from vlad.asmk._updates import append_asmk_index, merge_asmk_index
from vlad.core._codebook import Codebook
from vlad.errors import VladError
from vlad.formats._descriptor_files import read_descriptor_file
from vlad.formats._shards import open_shards
from vlad.formats._vectors import load_vectors
from vlad.pipeline._queries import source_record
from vlad.search._expansion import QueryExpansion
from vlad.search._index import VectorIndex, build_index
from vlad.search._streamed_index import index_shards

__all__ = ["INDEX_METHODS", "write_index"]

#: What :func:`write_index` indexes: VLAD vectors, or descriptors by ASMK.
INDEX_METHODS = ("vlad", "asmk")


def write_index(
    source: str | os.PathLike,
    output: str | os.PathLike,
    *,
    method: str = "vlad",
    pca: int | None = None,
    whiten: float | None = None,
    factory: str | None = None,
    parameters: str | None = None,
    augment: int = 0,
    augment_alpha: float = 3.0,
    codebook: Codebook | str | os.PathLike | None = None,
    binary: bool = True,
    alpha: float = 3.0,
    threshold: float = 0.0,
    idf: bool = False,
    quantizer: str = "Flat",
    quantizer_parameters: str | None = None,
    append: bool = False,
    merge: bool = False,
    overwrite: bool = False,
    resume: bool = False,
) -> VectorIndex | ASMKIndex:
    """Index a vectors or descriptors file and write the index folder.

    Parameters
    ----------
    source : path-like
        ``method="vlad"``: VLAD vectors, an ``.npy`` with its names beside it
        or a folder of shards from :func:`vlad.encode_images` (``vlad
        encode``), or hloc's global features (``.h5``). ``method="asmk"``: local
        descriptors, an ``.npz`` or a folder of shards from ``vlad extract``.
    output : path-like
        The index folder, written whole or not at all.
    method : {"vlad", "asmk"}, default="vlad"
        What is indexed: VLAD vectors, or descriptors by the aggregated
        selective match kernel.
    pca, whiten, factory, parameters
        ``method="vlad"``: as in :func:`vlad.search.build_index`.
    augment : int, default=0
        ``method="vlad"``: average each vector with this many of its nearest
        neighbours (database-side augmentation; 0: none).
    augment_alpha : float, default=3.0
        A neighbour's weight is its similarity to this power.
    codebook : Codebook or path-like, optional
        ``method="asmk"`` (needed, unless ``append``): the visual words, kept
        in the index.
    binary, alpha, threshold, idf, quantizer, quantizer_parameters
        ``method="asmk"``: as in :func:`vlad.asmk.build_asmk_index`.
    append : bool, default=False
        ``method="asmk"``: add the images of ``source`` to the index folder
        ``output`` as a new segment (:func:`vlad.asmk.append_asmk_index`),
        with its codebook and settings, instead of writing a new index.
    merge : bool, default=False
        With ``append``: then merge the index's segments into one
        (:func:`vlad.asmk.merge_asmk_index`).
    overwrite : bool, default=False
        Replace an existing ``output``.
    resume : bool, default=False
        ``method="asmk"``: go on from the segments an interrupted build of
        ``output`` wrote (:func:`vlad.asmk.write_asmk_index`).

    Returns
    -------
    VectorIndex or ASMKIndex
        The index written.

    Notes
    -----
    A folder of shards of vectors is read a shard at a time (a faiss index is
    trained on a uniform sample, then filled) unless ``pca``, ``whiten`` or
    ``augment``, which need every vector at once, are given.

    Raises
    ------
    VladError
        An unknown method, ASMK without a codebook, or settings of one method
        given to the other.
    ValueError, OSError
        As the inputs are read and the index is built and written.

    See Also
    --------
    vlad.search.build_index, vlad.asmk.build_asmk_index
    vlad.pipeline.search_index

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> from vlad.pipeline import write_index
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> vectors = np.eye(3, 4, dtype=np.float32)
    >>> np.save(root / "vectors.npy", vectors)
    >>> _ = (root / "vectors.names.txt").write_text("a.jpg\\nb.jpg\\nc.jpg\\n")
    >>> index = write_index(root / "vectors.npy", root / "index")
    >>> index.n_images, index.dimension, sorted(p.name for p in root.iterdir())
    (3, 4, ['index', 'vectors.names.txt', 'vectors.npy'])
    """
    # ASMK's settings given other than their defaults.
    kernel_given = {
        "binary": binary is not True,
        "alpha": alpha != 3.0,
        "threshold": threshold != 0.0,
        "idf": idf,
        "quantizer": quantizer != "Flat",
        "quantizer_parameters": quantizer_parameters is not None,
    }
    _check_settings(
        method,
        codebook,
        vlad_settings={
            "pca": pca is not None,
            "whiten": whiten is not None,
            "factory": factory is not None,
            "parameters": parameters is not None,
            "augment": augment != 0,
        },
        asmk_settings={
            **kernel_given,
            "append": append,
            "merge": merge,
            "resume": resume,
        },
        codebook_needed=not append,
    )
    if append:
        if resume:
            raise VladError("resume applies to a new index, not to append")
        chosen = {"codebook": codebook is not None, **kernel_given}
        given = [name for name, is_given in chosen.items() if is_given]
        if given:
            raise VladError(
                f"append keeps the index's codebook and settings: "
                f"{', '.join(given)} cannot be given"
            )
        grown = append_asmk_index(output, read_descriptor_file(source, lazy=True))
        return merge_asmk_index(output) if merge else grown
    if merge:
        raise VladError("merge applies to append (a new index has one segment)")
    if method == "asmk":
        if not isinstance(codebook, Codebook):
            codebook = Codebook.load(codebook)
        return write_asmk_index(
            read_descriptor_file(source, lazy=True),
            codebook,
            output,
            overwrite=overwrite,
            resume=resume,
            binary=binary,
            alpha=alpha,
            threshold=threshold,
            idf=idf,
            quantizer=quantizer,
            quantizer_parameters=quantizer_parameters,
        )
    if os.path.isdir(source) and pca is None and whiten is None and not augment:
        return index_shards(
            source,
            output,
            factory=factory,
            parameters=parameters,
            source=source_record(open_shards(source).record),
            overwrite=overwrite,
        )
    matrix, names, record = load_vectors(source)
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
    return built


def _check_settings(
    method: str,
    codebook,
    *,
    vlad_settings: dict[str, bool],
    asmk_settings: dict[str, bool],
    codebook_needed: bool = True,
) -> None:
    """Refuse an unknown method, ASMK without a codebook (where one is
    needed), and the settings (those marked True: given other than their
    defaults) of the other method."""
    if method not in INDEX_METHODS:
        raise VladError(
            f"method must be one of {', '.join(map(repr, INDEX_METHODS))}; "
            f"got {method!r}"
        )
    if method == "asmk" and codebook is None and codebook_needed:
        raise VladError("method='asmk' needs a codebook")
    if method == "vlad":
        asmk_settings = {"codebook": codebook is not None, **asmk_settings}
    given = [
        name
        for name, is_given in (
            asmk_settings if method == "vlad" else vlad_settings
        ).items()
        if is_given
    ]
    if given:
        verb = "does" if len(given) == 1 else "do"
        raise VladError(f"{', '.join(given)} {verb} not apply to method={method!r}")
