"""vlad: VLAD vectors (Vector of Locally Aggregated Descriptors) for image search.

The pipeline, one module per stage: descriptor sets (:class:`DescriptorSets`),
codebook (:func:`fit_codebook`), assignment (:func:`assign`), aggregation
(:func:`aggregate`, :data:`AGGREGATORS`), normalisation (:func:`normalize`),
and all of them at once (:func:`encode`); the scikit-learn transformer
:class:`VLADEncoder` wraps them.
"""

import importlib

from vlad import datasets
from vlad._version import __version__
from vlad.aggregators import AGGREGATORS, aggregate, available_aggregators
from vlad.assignment import assign
from vlad.codebook import Codebook, fit_codebook
from vlad.descriptors import DescriptorSets
from vlad.encoding import encode
from vlad.jax_encoding import JaxEncoder
from vlad.normalization import normalize

__all__ = [
    "AGGREGATORS",
    "Codebook",
    "DescriptorSets",
    "JaxEncoder",
    "VLADEncoder",
    "__version__",
    "aggregate",
    "assign",
    "available_aggregators",
    "datasets",
    "encode",
    "fit_codebook",
    "normalize",
]

# Public names whose modules import scikit-learn's estimator machinery (about
# 0.6 s), loaded on first use so that ``import vlad`` and the CLI stay fast.
_LAZY_MODULES = {"VLADEncoder": "vlad.encoder"}


def __getattr__(name: str):
    if name in _LAZY_MODULES:
        return getattr(importlib.import_module(_LAZY_MODULES[name]), name)
    raise AttributeError(f"module 'vlad' has no attribute {name!r}")
