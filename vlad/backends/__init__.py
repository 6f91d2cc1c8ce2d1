"""Compiled and accelerator back-ends, each behind an optional dependency.

- :mod:`vlad.backends.compiled`: loads the numba kernels on first use;
- :mod:`vlad.backends.numba_kernels`: the compiled loops themselves;
- :mod:`vlad.backends.fused`: assignment and aggregation fused in one pass;
- :mod:`vlad.backends.jax_runtime` and :mod:`vlad.backends.jax_encoder`: JAX,
  and :class:`vlad.JaxEncoder`, end to end on a device.
"""
