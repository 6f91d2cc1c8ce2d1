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
(PyTorch) and the trainable layers :class:`vlad.backends.torch.layer.NetVLAD`
and :class:`vlad.backends.keras_layer.NetVLAD` (Keras 3).
"""

import importlib
import importlib.util
from typing import TYPE_CHECKING

from vlad._version import __version__

if TYPE_CHECKING:
    from vlad import datasets
    from vlad.backends.jax.encoder import JaxEncoder
    from vlad.backends.torch.encoder import TorchEncoder
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
    from vlad.errors import VladError
    from vlad.estimators.encoder import VLADEncoder
    from vlad.estimators.feature_extractor import FeatureExtractor
    from vlad.estimators.sift_extractor import SIFTExtractor
    from vlad.formats.vectors import load_vectors, save_vectors
    from vlad.images.files import ImageReadError, find_images, read_image
    from vlad.images.sift import SiftOptions, extract_sift, root_sift
    from vlad.info import describe_file
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
    "VladError",
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

# The public names, each imported from its module on first use (PEP 562), so
# that ``import vlad`` and the command line's --help import none of NumPy,
# OpenCV or scikit-learn.
_EXPORTS = {
    "JaxEncoder": "vlad.backends.jax.encoder",
    "TorchEncoder": "vlad.backends.torch.encoder",
    "CodebookAdapter": "vlad.core.adaptation",
    "adapt_codebook": "vlad.core.adaptation",
    "AGGREGATORS": "vlad.core.aggregators",
    "aggregate": "vlad.core.aggregators",
    "available_aggregators": "vlad.core.aggregators",
    "assign": "vlad.core.assignment",
    "Codebook": "vlad.core.codebook",
    "fit_codebook": "vlad.core.codebook",
    "DescriptorSets": "vlad.core.descriptors",
    "encode": "vlad.core.encoding",
    "assign_nearest": "vlad.core.nearest",
    "assignment_weights": "vlad.core.nearest",
    "normalize": "vlad.core.normalization",
    "EncodingOptions": "vlad.core.options",
    "fit_vocabularies": "vlad.core.vocabularies",
    "split_vocabularies": "vlad.core.vocabularies",
    "stack_vocabularies": "vlad.core.vocabularies",
    "VLADEncoder": "vlad.estimators.encoder",
    "FeatureExtractor": "vlad.estimators.feature_extractor",
    "SIFTExtractor": "vlad.estimators.sift_extractor",
    "describe_file": "vlad.info",
    "VladError": "vlad.errors",
    "load_vectors": "vlad.formats.vectors",
    "save_vectors": "vlad.formats.vectors",
    "BatchReport": "vlad.pipeline",
    "EncodedImages": "vlad.pipeline",
    "encode_images": "vlad.pipeline",
    "extract_images": "vlad.pipeline",
    "fit_codebook_to_images": "vlad.pipeline",
    "ImageReadError": "vlad.images.files",
    "find_images": "vlad.images.files",
    "read_image": "vlad.images.files",
    "SiftOptions": "vlad.images.sift",
    "extract_sift": "vlad.images.sift",
    "root_sift": "vlad.images.sift",
    "adapt_codebook_to_images": "vlad.pipeline",
    "fit_vocabularies_to_images": "vlad.pipeline",
}


def __getattr__(name: str):
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
    elif not name.startswith("_") and importlib.util.find_spec(f"vlad.{name}"):
        # A subpackage or module (vlad.core, vlad.datasets...), imported on
        # first use as the public names are.
        value = importlib.import_module(f"vlad.{name}")
    else:
        raise AttributeError(f"module 'vlad' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
