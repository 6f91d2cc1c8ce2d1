"""vlad: VLAD vectors (Vector of Locally Aggregated Descriptors) for image search.

The pipeline, one module per stage: descriptor sets (:class:`DescriptorSets`),
codebook (:func:`fit_codebook`), assignment (:func:`assign`), aggregation
(:func:`aggregate`, :data:`AGGREGATORS`), normalisation (:func:`normalize`),
and all of them at once (:func:`encode`). From images: SIFT descriptors
(:func:`extract_sift`, :class:`SIFTExtractor`) and whole folders
(:func:`extract_images`, :func:`fit_codebook_to_images`, :func:`encode_images`).
"""

from vlad import datasets
from vlad._version import __version__
from vlad.aggregators import AGGREGATORS, aggregate, available_aggregators
from vlad.assignment import assign
from vlad.batch import encode_images, extract_images, fit_codebook_to_images
from vlad.codebook import Codebook, fit_codebook
from vlad.descriptors import DescriptorSets
from vlad.encoding import encode
from vlad.normalization import normalize
from vlad.sift import extract_sift

__all__ = [
    "AGGREGATORS",
    "Codebook",
    "DescriptorSets",
    "SIFTExtractor",
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


def __getattr__(name: str):
    # scikit-learn takes about a second to import: only when this is asked for.
    if name == "SIFTExtractor":
        from vlad.sift_extractor import SIFTExtractor

        return SIFTExtractor
    raise AttributeError(f"module 'vlad' has no attribute {name!r}")
