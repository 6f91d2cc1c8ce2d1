"""vlad: VLAD vectors (Vector of Locally Aggregated Descriptors) for image search.

The pipeline on descriptors in memory (:mod:`vlad.core`): descriptor sets
(:class:`DescriptorSets`), codebook (:func:`fit_codebook`), assignment
(:func:`assign`), adaptation (:func:`adapt_codebook`), several vocabularies
(:func:`fit_vocabularies`, :func:`stack_vocabularies`), aggregation
(:func:`aggregate`, :data:`AGGREGATORS`),
normalisation (:func:`normalize`), and all of them at once (:func:`encode`,
set by :class:`EncodingOptions`). From images (:mod:`vlad.images`): SIFT
descriptors (:func:`extract_sift`, :class:`SiftOptions`) or learned ones
(:class:`LearnedOptions`: ALIKED, by kornia); from whole folders
(:mod:`vlad.pipeline`): :func:`extract_images`, :func:`fit_codebook_to_images`,
:func:`encode_images`, :func:`adapt_codebook_to_images`,
:func:`fit_vocabularies_to_images`.
Files (:mod:`vlad.formats`): :func:`save_vectors`, :func:`load_vectors`,
:func:`describe_file`. scikit-learn (:mod:`vlad.estimators`):
:class:`VLADEncoder`, :class:`SIFTExtractor`, :class:`FeatureExtractor`. Accelerators
(:mod:`vlad.backends`): :class:`JaxEncoder` (JAX), :class:`TorchEncoder`
(PyTorch) and the trainable layers :class:`vlad.backends.torch.NetVLAD`
and :class:`vlad.backends.keras.NetVLAD` (Keras 3).
"""

from typing import TYPE_CHECKING

from vlad._lazy import attach_declared
from vlad._version import __version__

if TYPE_CHECKING:
    from vlad import datasets
    from vlad._info import describe_file
    from vlad.backends.jax._encoder import JaxEncoder
    from vlad.backends.torch._encoder import TorchEncoder
    from vlad.core._adaptation import CodebookAdapter, adapt_codebook
    from vlad.core._assignment import assign
    from vlad.core._codebook import Codebook, fit_codebook
    from vlad.core._descriptors import DescriptorSets
    from vlad.core._encoding import encode
    from vlad.core._nearest import assign_nearest, assignment_weights
    from vlad.core._normalization import normalize
    from vlad.core._options import EncodingOptions
    from vlad.core._vocabularies import (
        fit_vocabularies,
        split_vocabularies,
        stack_vocabularies,
    )
    from vlad.core.aggregators import AGGREGATORS, aggregate, available_aggregators
    from vlad.errors import (
        ParameterError,
        ParameterTypeError,
        VladError,
        VladTypeError,
    )
    from vlad.estimators._encoder import VLADEncoder
    from vlad.estimators._feature_extractor import FeatureExtractor
    from vlad.estimators._sift_extractor import SIFTExtractor
    from vlad.formats._vectors import load_vectors, save_vectors
    from vlad.images._files import ImageReadError, find_images, read_image
    from vlad.images._learned import LearnedOptions
    from vlad.images._sift import SiftOptions, extract_sift, root_sift
    from vlad.pipeline import (
        BatchReport,
        EncodedImages,
        adapt_codebook_to_images,
        encode_images,
        extract_images,
        fit_codebook_to_images,
        fit_vocabularies_to_images,
    )

# The public names are those of the block above, each imported from its module
# on first use (PEP 562), as are the sub-packages (vlad.core, vlad.datasets...),
# so that ``import vlad`` and the command line's --help import none of NumPy,
# OpenCV or scikit-learn.
__getattr__, __dir__, __all__ = attach_declared(__name__, __file__, ("__version__",))
