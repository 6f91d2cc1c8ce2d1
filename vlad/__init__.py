"""vlad: VLAD vectors (Vector of Locally Aggregated Descriptors) for image search.

The pipeline, one module per stage: descriptor sets (:class:`DescriptorSets`),
codebook (:func:`fit_codebook`), assignment (:func:`assign`), aggregation
(:func:`aggregate`, :data:`AGGREGATORS`), normalisation (:func:`normalize`),
and all of them at once (:func:`encode`).
"""

from vlad import datasets
from vlad._version import __version__
from vlad.aggregators import AGGREGATORS, aggregate, available_aggregators
from vlad.assignment import assign
from vlad.codebook import Codebook, fit_codebook
from vlad.descriptors import DescriptorSets
from vlad.encoding import encode
from vlad.normalization import normalize

__all__ = [
    "AGGREGATORS",
    "Codebook",
    "DescriptorSets",
    "__version__",
    "aggregate",
    "assign",
    "available_aggregators",
    "datasets",
    "encode",
    "fit_codebook",
    "normalize",
]
