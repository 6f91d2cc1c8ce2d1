"""NetVLAD: a trainable VLAD pooling layer for Keras 3 (optional dependency).

Written with ``keras.ops`` alone, so that it runs on every Keras 3 back-end
(TensorFlow, JAX, PyTorch), the one ``KERAS_BACKEND`` names when Keras is
first imported. This module imports Keras: ``import vlad`` does not load it.
Requires Keras 3 (the ``keras`` extra) and a back-end, which it does not
install: JAX, PyTorch or TensorFlow.

References
----------
.. [1] R. Arandjelović, P. Gronat, A. Torii, T. Pajdla, J. Sivic. "NetVLAD:
   CNN architecture for weakly supervised place recognition". CVPR 2016.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from vlad._extras import install_command
from vlad.backends._netvlad import initial_parameters
from vlad.core._codebook import Codebook
from vlad.core._normalization import NORM_FLOOR
from vlad.core._validation import as_float_matrix, as_offsets, check_positive_int
from vlad.errors import VladError


def _import_keras():
    """Import Keras 3 or raise an ``ImportError`` that says how to install it."""
    try:
        import keras
    except ImportError as error:
        raise ImportError(
            "this requires Keras 3 and a back-end (JAX, TensorFlow or PyTorch); "
            f"install it with: {install_command('keras')} and one of jax, torch "
            f"or tensorflow ({error})"
        ) from None
    if int(keras.__version__.split(".")[0]) < 3:
        raise ImportError(
            f"this requires Keras 3; found Keras {keras.__version__}: "
            + install_command("keras")
        )
    return keras


keras = _import_keras()
ops = keras.ops

__all__ = ["NetVLAD", "padded"]


def _normalized(values, axis):
    """``values / max(|values|, NORM_FLOOR)`` along ``axis``, as
    ``torch.nn.functional.normalize``; the floor inside the square root keeps
    the gradient of a zero vector finite (padding rows are zero)."""
    squared = ops.sum(ops.square(values), axis=axis, keepdims=True)
    return values / ops.sqrt(ops.maximum(squared, NORM_FLOOR**2))


@keras.saving.register_keras_serializable(package="vlad")
class NetVLAD(keras.layers.Layer):
    """NetVLAD pooling: soft-assigned VLAD with intra and L2 normalisation.

    The Keras 3 twin of :class:`vlad.backends.torch.NetVLAD`, computing
    the same function from the same initialisation. Each descriptor ``x`` is
    assigned to every centre with the weights ``a_k(x) = softmax_k(x . W_k +
    b_k)``; an image's block ``k`` is ``sum_i a_k(x_i) (x_i - c_k)``,
    computed as ``A^T X - (sum_i a_ik) c_k`` with two matrix products (never
    a ``(descriptors, K, F)`` tensor), then L2-normalised per centre (intra)
    and as a whole. With ``W_k = 2 alpha c_k`` and ``b_k = -alpha |c_k|^2``
    the weights are a softmax of ``-alpha |x - c_k|^2``, which tends to the
    hard assignment of :func:`vlad.encode` as ``alpha`` grows (see
    :meth:`from_codebook`).

    Parameters
    ----------
    n_clusters : int
    n_features : int
    normalize_input : bool, default=False
        L2-normalise each descriptor first (the paper does, on CNN features).
    intra, l2 : bool, default=True
        Intra (per-centre) and global L2 normalisation.
    **kwargs
        Of every Keras layer: ``name``, ``dtype`` (float32 by default;
        ``"float64"`` needs ``jax_enable_x64`` on JAX), ``trainable``.

    Attributes
    ----------
    centers : Variable of shape (n_clusters, n_features)
        The centres ``c``, stored as they are (not negated).
    assignment_kernel : Variable of shape (n_features, n_clusters)
        ``W`` as a Keras ``Dense`` kernel stores it: the transpose of the
        PyTorch layer's ``assignment.weight``.
    assignment_bias : Variable of shape (n_clusters,)
    alpha : float or None
        The sharpness :meth:`from_codebook` set; None otherwise (and in a
        layer loaded from a file: the variables are what counts).

    See Also
    --------
    vlad.backends.torch.NetVLAD : The same layer for PyTorch.

    Examples
    --------
    >>> import numpy as np
    >>> from vlad.backends.keras._layer import NetVLAD
    >>> layer = NetVLAD.from_codebook([[0.0, 0.0], [1.0, 1.0]], [[0.2, 0.1]])
    >>> vectors = layer(np.ones((3, 5, 2), dtype=np.float32))
    >>> tuple(vectors.shape)
    (3, 4)
    >>> NetVLAD.from_config(layer.get_config()).get_config() == layer.get_config()
    True
    """

    def __init__(
        self,
        n_clusters: int,
        n_features: int,
        *,
        normalize_input: bool = False,
        intra: bool = True,
        l2: bool = True,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.n_clusters = check_positive_int(n_clusters, "n_clusters")
        self.n_features = check_positive_int(n_features, "n_features")
        self.normalize_input = bool(normalize_input)
        self.intra = bool(intra)
        self.l2 = bool(l2)
        self.alpha: float | None = None
        # The shapes are known: the variables exist before the first call, so
        # that from_codebook can set them.
        self.centers = self.add_weight(
            shape=(self.n_clusters, self.n_features),
            initializer="random_normal",
            name="centers",
        )
        self.assignment_kernel = self.add_weight(
            shape=(self.n_features, self.n_clusters),
            initializer="glorot_uniform",
            name="assignment_kernel",
        )
        self.assignment_bias = self.add_weight(
            shape=(self.n_clusters,), initializer="zeros", name="assignment_bias"
        )
        self.built = True

    @classmethod
    def from_codebook(
        cls,
        codebook: Codebook | ArrayLike,
        descriptors_sample: ArrayLike,
        ratio: float = 100.0,
        **kwargs,
    ) -> NetVLAD:
        """A layer initialised from a fitted codebook, as the PyTorch layer's
        :meth:`~vlad.backends.torch.NetVLAD.from_codebook`.

        The centres are the codebook's; the assignment is ``W_k = 2 alpha
        c_k``, ``b_k = -alpha |c_k|^2``, with ``alpha`` set by
        :func:`vlad.backends._netvlad.sharpness_for` so that a sample
        descriptor's nearest centre weighs about ``ratio`` times its second.

        Parameters
        ----------
        codebook : Codebook or array-like of shape (n_clusters, n_features)
        descriptors_sample : array-like of shape (n_samples, n_features)
            Descriptors like those the layer will see (a few thousand do).
        ratio : float, default=100.0
        **kwargs
            ``normalize_input``, ``intra``, ``l2`` and those of every Keras
            layer (``dtype``, ``name``). With ``normalize_input`` the sample
            is normalised too before ``alpha`` is set.

        Returns
        -------
        NetVLAD

        Raises
        ------
        ValueError
            See :func:`vlad.backends._netvlad.sharpness_for`; or a sample of
            another dimension, or with NaN/inf values.
        """
        start = initial_parameters(
            codebook,
            descriptors_sample,
            ratio,
            normalize_input=kwargs.get("normalize_input", False),
        )
        layer = cls(*start.centers.shape, **kwargs)
        dtype = layer.variable_dtype
        layer.centers.assign(start.centers.astype(dtype))
        layer.assignment_kernel.assign(start.weight.T.astype(dtype))
        layer.assignment_bias.assign(start.bias.astype(dtype))
        layer.alpha = start.alpha
        return layer

    def call(self, descriptors, mask=None):
        """VLAD vectors of a batch of images.

        Parameters
        ----------
        descriptors : tensor of shape (n_images, n_descriptors, n_features)
            Padded images; :func:`padded` makes them from stacked descriptors
            and offsets.
        mask : tensor of bool of shape (n_images, n_descriptors), optional
            True for real descriptors, False for padding. A Keras mask (from
            ``keras.layers.Masking``) arrives here too.

        Returns
        -------
        vectors : tensor of shape (n_images, n_clusters * n_features)
        """
        descriptors = ops.convert_to_tensor(descriptors, dtype=self.compute_dtype)
        if len(descriptors.shape) != 3 or descriptors.shape[-1] != self.n_features:
            raise VladError(
                "descriptors must have shape (n_images, n_descriptors, "
                f"{self.n_features}); got shape {tuple(descriptors.shape)}"
            )
        if self.normalize_input:
            descriptors = _normalized(descriptors, axis=-1)
        logits = ops.matmul(descriptors, self.assignment_kernel) + self.assignment_bias
        weights = ops.softmax(logits, axis=-1)
        if mask is not None:
            weights = weights * ops.cast(mask, weights.dtype)[..., None]
        sums = ops.matmul(ops.transpose(weights, (0, 2, 1)), descriptors)
        vectors = sums - ops.sum(weights, axis=1)[..., None] * self.centers
        if self.intra:
            vectors = _normalized(vectors, axis=2)
        vectors = ops.reshape(vectors, (-1, self.n_clusters * self.n_features))
        if self.l2:
            vectors = _normalized(vectors, axis=1)
        return vectors

    def compute_output_shape(self, input_shape):
        return (input_shape[0], self.n_clusters * self.n_features)

    def compute_mask(self, inputs, mask=None):
        # One vector per image: the mask over descriptors ends here.
        return None

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(
            n_clusters=self.n_clusters,
            n_features=self.n_features,
            normalize_input=self.normalize_input,
            intra=self.intra,
            l2=self.l2,
        )
        return config


def padded(
    descriptors: ArrayLike, offsets: ArrayLike, dtype: np.dtype | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Stacked descriptors as a padded batch and its mask, for :class:`NetVLAD`.

    Parameters
    ----------
    descriptors : array-like of shape (n_descriptors, n_features)
        Every image's descriptors, one after the other.
    offsets : array-like of int of shape (n_images + 1,)
        Image ``t`` is ``descriptors[offsets[t]:offsets[t + 1]]``.
    dtype : dtype, optional
        Of the batch; that of ``descriptors`` (float32 or float64) by default.

    Returns
    -------
    batch : ndarray of shape (n_images, longest, n_features)
        Zeros where an image has fewer descriptors than the longest.
    mask : ndarray of bool of shape (n_images, longest)

    Examples
    --------
    >>> import numpy as np
    >>> batch, mask = padded(np.arange(6.0).reshape(3, 2), [0, 1, 3])
    >>> batch.tolist()
    [[[0.0, 1.0], [0.0, 0.0]], [[2.0, 3.0], [4.0, 5.0]]]
    >>> mask.tolist()
    [[True, False], [True, True]]
    """
    descriptors = as_float_matrix(descriptors, "descriptors")
    offsets = as_offsets(offsets, descriptors.shape[0])
    lengths = np.diff(offsets)
    n_images, longest = lengths.shape[0], int(lengths.max(initial=0))
    images = np.repeat(np.arange(n_images), lengths)
    positions = np.arange(descriptors.shape[0]) - offsets[images]
    batch = np.zeros(
        (n_images, longest, descriptors.shape[1]), dtype=dtype or descriptors.dtype
    )
    batch[images, positions] = descriptors
    mask = np.zeros((n_images, longest), dtype=bool)
    mask[images, positions] = True
    return batch, mask
