"""What vlad writes and reads on disk, never with pickles.

- :mod:`vlad.formats.files`: the one reader of ``.npy`` and ``.npz`` files,
  and record archives (from :mod:`vlad.core.files`);
- :mod:`vlad.formats.writing`: atomic writes, never replacing a file that
  appears meanwhile, leaving nothing behind when killed (from
  :mod:`vlad.core.writing`);
- :mod:`vlad.formats.vectors`: ``vectors.npy`` with its ``.names.txt`` and
  ``.json``;
- :mod:`vlad.formats.shards`: folders of vector shards, committed by a
  manifest written last;
- :mod:`vlad.formats.names`: image names on disk, any file name;
- :mod:`vlad.formats.descriptor_files`: descriptors given as a file.

What any vlad file holds (``vlad info``), index folders and search results
included, is told by :mod:`vlad.info`, above both this package and
:mod:`vlad.search`.

Codebooks and descriptor sets are saved by :meth:`vlad.Codebook.save` and
:meth:`vlad.DescriptorSets.save` through :mod:`vlad.core.files`.
"""
