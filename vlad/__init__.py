"""vlad: VLAD vectors (Vector of Locally Aggregated Descriptors) for image search.

The pipeline, one module per stage: descriptor sets (:class:`DescriptorSets`),
codebook (:func:`fit_codebook`), assignment (:func:`assign`), aggregation
(:func:`aggregate`, :data:`AGGREGATORS`), normalisation (:func:`normalize`),
and all of them at once (:func:`encode`); the scikit-learn transformer
:class:`VLADEncoder` wraps them. From images: SIFT descriptors
(:func:`extract_sift`, :class:`SIFTExtractor`) and whole folders
(:func:`extract_images`, :func:`fit_codebook_to_images`, :func:`encode_images`).
"""

import importlib

from vlad import datasets
from vlad._version import __version__
from vlad.backends.jax_encoder import JaxEncoder
from vlad.core.aggregators import AGGREGATORS, aggregate, available_aggregators
from vlad.core.assignment import assign
from vlad.core.codebook import Codebook, fit_codebook
from vlad.core.descriptors import DescriptorSets
from vlad.core.encoding import encode
from vlad.core.normalization import normalize
from vlad.images.batch import encode_images, extract_images, fit_codebook_to_images
from vlad.images.sift import extract_sift

__all__ = [
    "AGGREGATORS",
    "Codebook",
    "DescriptorSets",
    "JaxEncoder",
    "SIFTExtractor",
    "VLADEncoder",
    "__version__",
    "aggregate",
    "assign",
    "available_aggregators",
    "datasets",
    "encode",
    "encode_images",
    "extract_images",
    "extract_sift",
    "fit_codebook",
    "fit_codebook_to_images",
    "normalize",
]

# Public names whose modules import scikit-learn's estimator machinery (about
# 0.6 s), loaded on first use so that ``import vlad`` and the CLI stay fast.
_LAZY_MODULES = {
    "SIFTExtractor": "vlad.estimators.sift_extractor",
    "VLADEncoder": "vlad.estimators.encoder",
}


def __getattr__(name: str):
    if name in _LAZY_MODULES:
        return getattr(importlib.import_module(_LAZY_MODULES[name]), name)
    raise AttributeError(f"module 'vlad' has no attribute {name!r}")
