"""From image files to descriptors, one image at a time.

- :mod:`vlad.images._files`: finding image files and decoding them;
- :mod:`vlad.images._headers`: what an image file's header declares (format,
  size, transparency) and whether it is complete, before decoding;
- :mod:`vlad.images._decoder_messages`: the decoders' messages on standard
  error, caught and told to the image that caused them where the caller
  asks for it (the ``vlad`` command does);
- :mod:`vlad.images._sift`: OpenCV SIFT / RootSIFT (or AKAZE, ORB) descriptors
  of one image, and their options;
- :mod:`vlad.images._detectors`: OpenCV's detectors by name, their thresholds,
  and binary descriptors unpacked to 0/1 values;
- :mod:`vlad.images._learned`: the options of learned features (ALIKED, by
  kornia) and their record;
- :mod:`vlad.images._learned_batches`: images described by learned features,
  in batches on a device;
- :mod:`vlad.images._callables`: any Python callable as the extractor;
- :mod:`vlad.images._extractors`: the options or the callable that describe a
  batch, checked against a codebook's;
- :mod:`vlad.images._describe`: keypoints and descriptors of one image, or of
  image files in order, by any of them.

Folders of images (batches, codebooks fitted on them, folders of shards, Dask)
are :mod:`vlad.pipeline`'s.
"""

from typing import TYPE_CHECKING

from vlad._lazy import attach_declared

if TYPE_CHECKING:
    from vlad.images._decoder_messages import capture_decoder_messages
    from vlad.images._detectors import unpack_bits
    from vlad.images._files import (
        IMAGE_EXTENSIONS,
        ImageReadError,
        find_images,
        read_image,
        read_image_reduced,
    )
    from vlad.images._learned import LearnedOptions
    from vlad.images._sift import (
        DESCRIPTOR_PARAMETERS,
        SiftOptions,
        extract_sift,
        root_sift,
    )

__getattr__, __dir__, __all__ = attach_declared(__name__, __file__)
