"""Compiled and accelerator back-ends, each behind an optional dependency.

- :mod:`vlad.backends.compiled`: loads the numba kernels on first use;
- :mod:`vlad.backends.numba_kernels`: the compiled loops themselves;
- :mod:`vlad.backends.fused`: assignment and aggregation fused in one pass;
- :mod:`vlad.backends.layout`: how the device back-ends cut a batch into
  chunks of rows and summation blocks;
- :mod:`vlad.backends.jax_runtime`, :mod:`vlad.backends.jax_kernels`,
  :mod:`vlad.backends.jax_batches` and :mod:`vlad.backends.jax_encoder`: JAX,
  its jitted kernels, the host side of a batch, and :class:`vlad.JaxEncoder`;
- :mod:`vlad.backends.netvlad`: the initialisation from a codebook that the
  NetVLAD layers share, :mod:`vlad.backends.torch_layer` (PyTorch) and
  :mod:`vlad.backends.keras_layer` (Keras 3, any back-end).
"""
