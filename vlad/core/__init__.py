"""The VLAD pipeline on descriptors in memory, one module per stage.

- :mod:`vlad.core._descriptors`: ragged descriptor sets (flat rows + offsets);
- :mod:`vlad.core._codebook`: k-means codebooks;
- :mod:`vlad.core._kmeans` and :mod:`vlad.core._kmeans_progress`: the k-means
  back-ends, and the progress they report;
- :mod:`vlad.core._adaptation`: codebooks adapted to a collection's descriptors;
- :mod:`vlad.core._vocabularies`: several vocabularies in one codebook;
- :mod:`vlad.core._assignment`: nearest-centre assignment;
- :mod:`vlad.core.aggregators`: the interchangeable residual-sum strategies;
- :mod:`vlad.core._normalization`: mass, power law, intra and global L2;
- :mod:`vlad.core._options`: the encoding settings, :class:`EncodingOptions`;
- :mod:`vlad.core._encoding`: all of them at once, :func:`vlad.encode`;
- :mod:`vlad.core._validation` and :mod:`vlad.core._parallel`: the checks and the
  threads they share;
- :mod:`vlad.core._finite`: extreme magnitudes scaled by a power of two, so that
  no NaN comes out of finite input;
- :mod:`vlad.core._files` and :mod:`vlad.core._writing`: safe reads of NumPy
  files and atomic writes, with which codebooks and descriptor sets save and
  load themselves (the formats of :mod:`vlad.formats` use them too).

This package imports nothing else of vlad: the aggregators of
:mod:`vlad.backends` are named in :data:`vlad.core.aggregators.BACKEND_AGGREGATORS`
and imported when first called.

The public names are re-exported by :mod:`vlad`.
"""

from typing import TYPE_CHECKING

from vlad._lazy import attach_declared

if TYPE_CHECKING:
    from vlad.core._adaptation import CodebookAdapter, adapt_codebook
    from vlad.core._assignment import assign
    from vlad.core._codebook import DEFAULT_N_CLUSTERS, Codebook, fit_codebook
    from vlad.core._descriptors import DescriptorSets
    from vlad.core._encoding import encode
    from vlad.core._kmeans import (
        KMEANS_PLUSPLUS_MAX_CLUSTERS,
        spherical_lloyd,
        two_level_kmeans,
    )
    from vlad.core._nearest import assign_nearest, assignment_weights
    from vlad.core._normalization import normalize
    from vlad.core._options import EncodingOptions
    from vlad.core._parameters import POWER, Parameter
    from vlad.core._sampling import DescriptorReservoir
    from vlad.core._vocabularies import (
        fit_vocabularies,
        split_vocabularies,
        stack_vocabularies,
    )
    from vlad.core.aggregators import AGGREGATORS, aggregate, available_aggregators

__getattr__, __dir__, __all__ = attach_declared(__name__, __file__)
