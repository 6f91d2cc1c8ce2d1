"""scikit-learn estimators over the library's functions.

- :mod:`vlad.estimators._encoder`: :class:`vlad.VLADEncoder`, descriptor sets to
  VLAD vectors;
- :mod:`vlad.estimators._sift_extractor`: :class:`vlad.SIFTExtractor`, images to
  descriptor sets;
- :mod:`vlad.estimators._feature_extractor`: :class:`vlad.FeatureExtractor`,
  images to descriptor sets made by any callable;
- :mod:`vlad.estimators._parameters`: :class:`EstimatorParameterError`, what
  they raise for a bad parameter.

They import scikit-learn's estimator machinery, so :mod:`vlad` loads them on
first use.
"""

from typing import TYPE_CHECKING

from vlad._lazy import attach_declared

if TYPE_CHECKING:
    from vlad.estimators._encoder import VLADEncoder
    from vlad.estimators._feature_extractor import FeatureExtractor
    from vlad.estimators._parameters import EstimatorParameterError
    from vlad.estimators._sift_extractor import SIFTExtractor

__getattr__, __dir__, __all__ = attach_declared(__name__, __file__)
