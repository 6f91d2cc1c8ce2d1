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

from vlad._lazy import attach

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

__getattr__, __dir__ = attach(
    __name__,
    {
        "AGGREGATORS": "vlad.core.aggregators",
        "Codebook": "vlad.core._codebook",
        "CodebookAdapter": "vlad.core._adaptation",
        "DEFAULT_N_CLUSTERS": "vlad.core._codebook",
        "DescriptorReservoir": "vlad.core._sampling",
        "DescriptorSets": "vlad.core._descriptors",
        "EncodingOptions": "vlad.core._options",
        "KMEANS_PLUSPLUS_MAX_CLUSTERS": "vlad.core._kmeans",
        "POWER": "vlad.core._parameters",
        "Parameter": "vlad.core._parameters",
        "adapt_codebook": "vlad.core._adaptation",
        "aggregate": "vlad.core.aggregators",
        "assign": "vlad.core._assignment",
        "assign_nearest": "vlad.core._nearest",
        "assignment_weights": "vlad.core._nearest",
        "available_aggregators": "vlad.core.aggregators",
        "encode": "vlad.core._encoding",
        "fit_codebook": "vlad.core._codebook",
        "fit_vocabularies": "vlad.core._vocabularies",
        "normalize": "vlad.core._normalization",
        "spherical_lloyd": "vlad.core._kmeans",
        "two_level_kmeans": "vlad.core._kmeans",
        "split_vocabularies": "vlad.core._vocabularies",
        "stack_vocabularies": "vlad.core._vocabularies",
    },
)
__all__ = [
    "AGGREGATORS",
    "Codebook",
    "CodebookAdapter",
    "DEFAULT_N_CLUSTERS",
    "DescriptorReservoir",
    "DescriptorSets",
    "EncodingOptions",
    "KMEANS_PLUSPLUS_MAX_CLUSTERS",
    "POWER",
    "Parameter",
    "adapt_codebook",
    "aggregate",
    "assign",
    "assign_nearest",
    "assignment_weights",
    "available_aggregators",
    "encode",
    "fit_codebook",
    "fit_vocabularies",
    "normalize",
    "spherical_lloyd",
    "two_level_kmeans",
    "split_vocabularies",
    "stack_vocabularies",
]
