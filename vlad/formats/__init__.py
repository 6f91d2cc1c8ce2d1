"""What vlad writes and reads on disk, never with pickles.

- :mod:`vlad.formats.files`: the one reader of ``.npy`` and ``.npz`` files,
  and record archives;
- :mod:`vlad.formats.writing`: atomic writes, never replacing a file that
  appears meanwhile, leaving nothing behind when killed;
- :mod:`vlad.formats.vectors`: ``vectors.npy`` with its ``.names.txt`` and
  ``.json``;
- :mod:`vlad.formats.shards`: folders of vector shards, committed by a
  manifest written last;
- :mod:`vlad.formats.names`: image names on disk, any file name;
- :mod:`vlad.formats.descriptor_files`: descriptors given as a file;
- :mod:`vlad.formats.info`: what a file holds (``vlad info``).

Codebooks and descriptor sets are saved by :meth:`vlad.Codebook.save` and
:meth:`vlad.DescriptorSets.save` through :mod:`vlad.formats.files`.
"""
