"""Folder-level work: batches of images, codebooks fitted on them, and runs of
rows made a shard at a time into memory, a file or a folder of shards, here or
on a Dask cluster.

- :mod:`vlad.pipeline._batch`: a batch of images described in order, what
  became of each image reported;
- :mod:`vlad.pipeline._extraction`: descriptors of folders, into memory, an
  ``.npz`` or a folder of shards, or read from a descriptors file;
- :mod:`vlad.pipeline._encoding`: what a run of VLAD vectors gives;
- :mod:`vlad.pipeline._vector_shards`: VLAD vectors of folders, into memory,
  a ``.npy``, an ``.h5`` or a folder of shards;
- :mod:`vlad.pipeline._vocabularies`: codebooks (one vocabulary or several)
  fitted on folders;
- :mod:`vlad.pipeline._adaptation`: codebooks adapted to folders;
- :mod:`vlad.pipeline._shard_runs`: the one engine of runs (plan, make,
  commit, resume), run by a kind of shard (the stage: how rows are made);
- :mod:`vlad.pipeline._sinks`: where a run's rows go (memory, a file, a
  folder of shards);
- :mod:`vlad.pipeline._image_shards`: what the kinds of shards of images share;
- :mod:`vlad.pipeline._vector_kinds`: the kinds of shards of VLAD vectors, of
  images or of a descriptors file, and their files;
- :mod:`vlad.pipeline._descriptor_shards`: the kind of shards of descriptors
  and keypoints, and its file;
- :mod:`vlad.pipeline._cluster`: shards made on a Dask cluster;
- :mod:`vlad.pipeline._asmk_shards`: ASMK indexes split in shards, searched
  as one on a Dask cluster;
- :mod:`vlad.pipeline._codebook_fit`, :mod:`vlad.pipeline._index_build` and
  :mod:`vlad.pipeline._search_run`: whole runs over files, as ``vlad fit``,
  ``vlad index`` and ``vlad search`` make them;
- :mod:`vlad.pipeline._verified_search`: ASMK, spatial verification and query
  expansion by the verified images in one call, in memory: the search of
  ``vlad search --rerank spatial --expand-verified`` on an ASMK index.
"""

from typing import TYPE_CHECKING

from vlad._lazy import attach_declared

if TYPE_CHECKING:
    from vlad.pipeline._adaptation import adapt_codebook_to_images
    from vlad.pipeline._asmk_shards import search_asmk_shards
    from vlad.pipeline._batch import BatchReport
    from vlad.pipeline._cluster import dask_client
    from vlad.pipeline._codebook_fit import write_adapted_codebook, write_codebook
    from vlad.pipeline._descriptor_shards import DESCRIPTOR_SHARD_IMAGES
    from vlad.pipeline._encoding import ENCODE_CHUNK_IMAGES, EncodedImages
    from vlad.pipeline._extraction import (
        extract_images,
        extract_images_to_folder,
        read_descriptor_sets,
    )
    from vlad.pipeline._index_build import write_index
    from vlad.pipeline._queries import read_asmk_queries, read_queries
    from vlad.pipeline._search_run import SearchRun, search_index
    from vlad.pipeline._vector_shards import (
        SHARD_IMAGES,
        encode_images,
        encode_images_to_folder,
    )
    from vlad.pipeline._verified_search import VERIFICATION_KEYS, search_verified
    from vlad.pipeline._vocabularies import (
        fit_codebook_to_images,
        fit_vocabularies_to_images,
    )

__getattr__, __dir__, __all__ = attach_declared(__name__, __file__)
