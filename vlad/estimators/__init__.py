"""scikit-learn estimators over the library's functions.

- :mod:`vlad.estimators.encoder`: :class:`vlad.VLADEncoder`, descriptor sets to
  VLAD vectors;
- :mod:`vlad.estimators.sift_extractor`: :class:`vlad.SIFTExtractor`, images to
  descriptor sets;
- :mod:`vlad.estimators.feature_extractor`: :class:`vlad.FeatureExtractor`,
  images to descriptor sets made by any callable.

They import scikit-learn's estimator machinery, so :mod:`vlad` loads them on
first use.
"""
