"""From image files to descriptors, one image at a time.

- :mod:`vlad.images.files`: finding image files and decoding them;
- :mod:`vlad.images.headers`: what an image file's header declares (format,
  size, transparency) and whether it is complete, before decoding;
- :mod:`vlad.images.decoder_messages`: the decoders' messages on standard
  error, caught and told to the image that caused them where the caller
  asks for it (the ``vlad`` command does);
- :mod:`vlad.images.sift`: OpenCV SIFT / RootSIFT (or AKAZE, ORB) descriptors
  of one image, and their options;
- :mod:`vlad.images.detectors`: OpenCV's detectors by name, their thresholds,
  and binary descriptors unpacked to 0/1 values;
- :mod:`vlad.images.callables`: any Python callable as the extractor;
- :mod:`vlad.images.extractors`: the options or the callable that describe a
  batch, checked against a codebook's;
- :mod:`vlad.images.describe`: keypoints and descriptors of one image, by
  either.

Folders of images (batches, codebooks fitted on them, folders of shards, Dask)
are :mod:`vlad.pipeline`'s; its public names are also found here, as they
were in vlad 0.4's ``vlad.images`` sub-modules.
"""

import importlib

# Names that moved to vlad.pipeline, loaded on first use: vlad.pipeline imports
# this package, so it cannot be imported here.
_MOVED = {
    "BatchReport",
    "DESCRIPTOR_SHARD_IMAGES",
    "ENCODE_CHUNK_IMAGES",
    "EncodedImages",
    "SHARD_IMAGES",
    "adapt_codebook_to_images",
    "dask_client",
    "encode_images",
    "encode_images_to_folder",
    "extract_images",
    "extract_images_to_folder",
    "fit_codebook_to_images",
    "fit_vocabularies_to_images",
    "map_in_order",
    "read_descriptor_sets",
}


def __getattr__(name: str):
    if name in _MOVED:
        return getattr(importlib.import_module("vlad.pipeline"), name)
    raise AttributeError(f"module 'vlad.images' has no attribute {name!r}")
