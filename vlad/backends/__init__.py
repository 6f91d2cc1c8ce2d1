"""Compiled and accelerator back-ends, each behind an optional dependency.

- :mod:`vlad.backends.numba`: loads the numba kernels on first use;
- :mod:`vlad.backends.numba.kernels`: the compiled loops themselves;
- :mod:`vlad.backends.numba.fused`: assignment and aggregation fused in one pass;
- :mod:`vlad.backends.layout`: how the device back-ends cut a batch into
  chunks of rows and summation blocks;
- :mod:`vlad.backends.jax`, :mod:`vlad.backends.jax.kernels`,
  :mod:`vlad.backends.jax.batches` and :mod:`vlad.backends.jax.encoder`: JAX,
  its jitted kernels, the host side of a batch, and :class:`vlad.JaxEncoder`;
- :mod:`vlad.backends.netvlad`: the initialisation from a codebook that the
  NetVLAD layers share, :mod:`vlad.backends.torch.layer` (PyTorch) and
  :mod:`vlad.backends.keras_layer` (Keras 3, any back-end).
"""
