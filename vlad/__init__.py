"""vlad: VLAD vectors (Vector of Locally Aggregated Descriptors) for image search.

The pipeline on descriptors in memory (:mod:`vlad.core`): descriptor sets
(:class:`DescriptorSets`), codebook (:func:`fit_codebook`), assignment
(:func:`assign`), adaptation (:func:`adapt_codebook`), several vocabularies
(:func:`fit_vocabularies`, :func:`stack_vocabularies`), aggregation
(:func:`aggregate`, :data:`AGGREGATORS`),
normalisation (:func:`normalize`), and all of them at once (:func:`encode`,
set by :class:`EncodingOptions`). From images (:mod:`vlad.images`): SIFT
descriptors (:func:`extract_sift`, :class:`SiftOptions`); from whole folders
(:mod:`vlad.pipeline`): :func:`extract_images`, :func:`fit_codebook_to_images`,
:func:`encode_images`, :func:`adapt_codebook_to_images`,
:func:`fit_vocabularies_to_images`.
Files (:mod:`vlad.formats`): :func:`save_vectors`, :func:`load_vectors`,
:func:`describe_file`. scikit-learn (:mod:`vlad.estimators`):
:class:`VLADEncoder`, :class:`SIFTExtractor`, :class:`FeatureExtractor`. Accelerators
(:mod:`vlad.backends`): :class:`JaxEncoder` (JAX), :class:`TorchEncoder`
(PyTorch) and the trainable layers :class:`vlad.backends.torch_layer.NetVLAD`
and :class:`vlad.backends.keras_layer.NetVLAD` (Keras 3).
"""

import importlib

from vlad import datasets
from vlad._version import __version__
from vlad.backends.jax_encoder import JaxEncoder
from vlad.backends.torch_encoder import TorchEncoder
from vlad.core.adaptation import CodebookAdapter, adapt_codebook
from vlad.core.aggregators import AGGREGATORS, aggregate, available_aggregators
from vlad.core.assignment import assign
from vlad.core.codebook import Codebook, fit_codebook
from vlad.core.descriptors import DescriptorSets
from vlad.core.encoding import encode
from vlad.core.nearest import assign_nearest, assignment_weights
from vlad.core.normalization import normalize
from vlad.core.options import EncodingOptions
from vlad.core.vocabularies import (
    fit_vocabularies,
    split_vocabularies,
    stack_vocabularies,
)
from vlad.formats.info import describe_file
from vlad.formats.vectors import load_vectors, save_vectors
from vlad.images.files import ImageReadError, find_images, read_image
from vlad.images.sift import SiftOptions, extract_sift, root_sift
from vlad.pipeline import (
    BatchReport,
    EncodedImages,
    adapt_codebook_to_images,
    encode_images,
    extract_images,
    fit_codebook_to_images,
    fit_vocabularies_to_images,
)

__all__ = [
    "AGGREGATORS",
    "BatchReport",
    "Codebook",
    "CodebookAdapter",
    "DescriptorSets",
    "EncodedImages",
    "EncodingOptions",
    "FeatureExtractor",
    "ImageReadError",
    "JaxEncoder",
    "SIFTExtractor",
    "SiftOptions",
    "TorchEncoder",
    "VLADEncoder",
    "__version__",
    "adapt_codebook",
    "adapt_codebook_to_images",
    "aggregate",
    "assign",
    "assign_nearest",
    "assignment_weights",
    "available_aggregators",
    "datasets",
    "describe_file",
    "encode",
    "encode_images",
    "extract_images",
    "extract_sift",
    "find_images",
    "fit_codebook",
    "fit_codebook_to_images",
    "fit_vocabularies",
    "fit_vocabularies_to_images",
    "load_vectors",
    "normalize",
    "read_image",
    "root_sift",
    "save_vectors",
    "split_vocabularies",
    "stack_vocabularies",
]

# Public names whose modules import scikit-learn's estimator machinery (about
# 0.6 s), loaded on first use so that ``import vlad`` and the CLI stay fast.
_LAZY_MODULES = {
    "FeatureExtractor": "vlad.estimators.feature_extractor",
    "SIFTExtractor": "vlad.estimators.sift_extractor",
    "VLADEncoder": "vlad.estimators.encoder",
}


def __getattr__(name: str):
    if name in _LAZY_MODULES:
        return getattr(importlib.import_module(_LAZY_MODULES[name]), name)
    raise AttributeError(f"module 'vlad' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
