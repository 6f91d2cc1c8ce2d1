"""The VLAD pipeline on descriptors in memory, one module per stage.

- :mod:`vlad.core.descriptors`: ragged descriptor sets (flat rows + offsets);
- :mod:`vlad.core.codebook`: k-means codebooks;
- :mod:`vlad.core.adaptation`: codebooks adapted to a collection's descriptors;
- :mod:`vlad.core.vocabularies`: several vocabularies in one codebook;
- :mod:`vlad.core.assignment`: nearest-centre assignment;
- :mod:`vlad.core.aggregators`: the interchangeable residual-sum strategies;
- :mod:`vlad.core.normalization`: mass, power law, intra and global L2;
- :mod:`vlad.core.options`: the encoding settings, :class:`EncodingOptions`;
- :mod:`vlad.core.encoding`: all of them at once, :func:`vlad.encode`;
- :mod:`vlad.core.validation` and :mod:`vlad.core.parallel`: the checks and the
  threads they share;
- :mod:`vlad.core.finite`: extreme magnitudes scaled by a power of two, so that
  no NaN comes out of finite input;
- :mod:`vlad.core.files` and :mod:`vlad.core.writing`: safe reads of NumPy
  files and atomic writes, with which codebooks and descriptor sets save and
  load themselves (the formats of :mod:`vlad.formats` use them too).

This package imports nothing else of vlad: the aggregators of
:mod:`vlad.backends` are named in :data:`vlad.core.aggregators.BACKEND_AGGREGATORS`
and imported when first called.

The public names are re-exported by :mod:`vlad`.
"""
