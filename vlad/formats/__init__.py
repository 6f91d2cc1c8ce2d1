"""What vlad writes and reads on disk, never with pickles.

- :mod:`vlad.core._files`: the one reader of ``.npy`` and ``.npz`` files,
  and record archives (from :mod:`vlad.core._files`);
- :mod:`vlad.core._writing`: atomic writes, never replacing a file that
  appears meanwhile, leaving nothing behind when killed (from
  :mod:`vlad.core._writing`);
- :mod:`vlad.formats._vectors`: ``vectors.npy`` with its ``.names.txt`` and
  ``.json``;
- :mod:`vlad.formats._shards`: folders of vector shards, committed by a
  manifest written last;
- :mod:`vlad.formats._names`: image names on disk, any file name;
- :mod:`vlad.formats._descriptor_files`: descriptors given as a file.

What any vlad file holds (``vlad info``), index folders, search results and
pages included, is told by :mod:`vlad._info`, above this package,
:mod:`vlad.search` and :mod:`vlad.pages`.

Codebooks and descriptor sets are saved by :meth:`vlad.Codebook.save` and
:meth:`vlad.DescriptorSets.save` through :mod:`vlad.core._files`.
"""

from typing import TYPE_CHECKING

from vlad._lazy import attach_declared

if TYPE_CHECKING:
    from vlad.formats._descriptor_shards import (
        ShardedDescriptorSets,
        open_descriptor_shards,
    )
    from vlad.formats._hloc import (
        HlocLocalFeatures,
        open_local_features,
    )
    from vlad.formats._hloc_global import read_global_features, write_global_features
    from vlad.formats._shards import ShardedVectors, open_shards
    from vlad.formats._vectors import load_vectors, save_vectors

__getattr__, __dir__, __all__ = attach_declared(__name__, __file__)
