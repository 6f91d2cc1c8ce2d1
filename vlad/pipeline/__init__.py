"""Folder-level work: batches of images, codebooks fitted on them, and runs
into folders of shards, here or on a Dask cluster.

- :mod:`vlad.pipeline.batch`: a batch of images described in order, what
  became of each image reported;
- :mod:`vlad.pipeline.extraction`: descriptors of folders, or read from a
  descriptors file;
- :mod:`vlad.pipeline.encoding`: VLAD vectors of folders;
- :mod:`vlad.pipeline.vocabularies`: codebooks (one vocabulary or several)
  fitted on folders;
- :mod:`vlad.pipeline.adaptation`: codebooks adapted to folders;
- :mod:`vlad.pipeline.shard_runs`: the one engine of runs into a folder of
  shards (plan, make, commit, resume), run by a kind of shard;
- :mod:`vlad.pipeline.image_shards`: what the kinds of shards of images share;
- :mod:`vlad.pipeline.vector_shards`: folders of shards of VLAD vectors;
- :mod:`vlad.pipeline.vector_kinds`: what those shards hold, of images or of
  a descriptors file, and how one is made;
- :mod:`vlad.pipeline.descriptor_shards`: folders of shards of descriptors and
  keypoints;
- :mod:`vlad.pipeline.cluster`: shards made on a Dask cluster;
- :mod:`vlad.pipeline.codebook_fit`, :mod:`vlad.pipeline.index_build` and
  :mod:`vlad.pipeline.search_run`: whole runs over files, as ``vlad fit``,
  ``vlad index`` and ``vlad search`` make them.
"""

from vlad.pipeline.adaptation import adapt_codebook_to_images
from vlad.pipeline.batch import BatchReport
from vlad.pipeline.cluster import dask_client
from vlad.pipeline.codebook_fit import write_adapted_codebook, write_codebook
from vlad.pipeline.descriptor_shards import (
    DESCRIPTOR_SHARD_IMAGES,
    extract_images_to_folder,
)
from vlad.pipeline.encoding import ENCODE_CHUNK_IMAGES, EncodedImages, encode_images
from vlad.pipeline.extraction import extract_images, read_descriptor_sets
from vlad.pipeline.index_build import write_index
from vlad.pipeline.search_run import SearchRun, search_index
from vlad.pipeline.vector_shards import SHARD_IMAGES, encode_images_to_folder
from vlad.pipeline.vocabularies import (
    fit_codebook_to_images,
    fit_vocabularies_to_images,
)

__all__ = [
    "DESCRIPTOR_SHARD_IMAGES",
    "ENCODE_CHUNK_IMAGES",
    "SHARD_IMAGES",
    "BatchReport",
    "EncodedImages",
    "SearchRun",
    "adapt_codebook_to_images",
    "dask_client",
    "encode_images",
    "encode_images_to_folder",
    "extract_images",
    "extract_images_to_folder",
    "fit_codebook_to_images",
    "fit_vocabularies_to_images",
    "read_descriptor_sets",
    "search_index",
    "write_adapted_codebook",
    "write_codebook",
    "write_index",
]
