"""From image files to descriptors, one image or whole folders at once.

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
- :mod:`vlad.images.pool`: images described on a pool of threads, in order;
- :mod:`vlad.images.batch`: descriptors, codebooks and VLAD vectors of folders,
  skipping and reporting unreadable files;
- :mod:`vlad.images.vocabularies`: codebooks adapted to folders, and several
  vocabularies fitted on them at once.
"""
