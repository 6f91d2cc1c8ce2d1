"""End-to-end VLAD encoding with PyTorch, on the CPU or a GPU."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from vlad.backends._device_encoder import DeviceEncoder
from vlad.backends.torch import _kernels as torch_kernels
from vlad.backends.torch import import_torch
from vlad.core._codebook import Codebook
from vlad.core._descriptors import as_descriptor_sets
from vlad.core._options import EncodingOptions
from vlad.core._validation import as_offsets, check_n_features
from vlad.errors import VladError, VladTypeError

__all__ = ["TorchEncoder"]


class TorchEncoder(DeviceEncoder):
    """Assign, aggregate and normalise with PyTorch (CPU or CUDA).

    The contract of :class:`vlad.JaxEncoder`, for PyTorch users: the codebook
    moves to the device once; each call finds the nearest centres with the
    distance product at full float32 precision (TF32 is switched off for it,
    and the caller's setting restored), sums the residuals with ``index_add_``
    in float32 by blocks of at most 4096 rows, and normalises. Labels are
    :func:`vlad.assign`'s and vectors equal :func:`vlad.encode`'s up to float
    rounding.

    Tensors are used where they are: a ``(T, L, F)`` tensor, or a flat
    ``(N, F)`` tensor with ``offsets``, on the encoder's device is read in
    place (no copy), and the vectors come back as a tensor on that device.
    NumPy input (anything :func:`vlad.encode` takes) is wrapped without a
    copy on the CPU and moved once to a GPU; its vectors come back as NumPy
    unless ``keep_on_device`` is set.

    Parameters
    ----------
    codebook : Codebook or array-like of shape (n_clusters, n_features)
    options : EncodingOptions, optional
        The normalisation, as in :func:`vlad.encode`. Residuals are summed by
        PyTorch, so its ``aggregator`` must be ``"auto"`` or ``"torch"``.
    device : str or torch.device, optional
        Where to compute; ``"cuda"`` when a GPU is available, else ``"cpu"``.
    keep_on_device : bool, default=False
        Return the vectors of NumPy input as a tensor on ``device`` too.
    **settings
        Fields of :class:`vlad.EncodingOptions` replacing those of ``options``.

    Attributes
    ----------
    options : EncodingOptions
    device : torch.device
    n_clusters, n_features : int

    Raises
    ------
    ImportError
        PyTorch is not installed (the ``torch`` extra).
    ValueError
        Bad settings, or another aggregator than PyTorch's.

    See Also
    --------
    vlad.encode : The NumPy pipeline this reproduces.
    vlad.JaxEncoder : The same with JAX.
    vlad.backends.torch.NetVLAD : A trainable VLAD layer.

    Examples
    --------
    >>> import vlad
    >>> sets = vlad.datasets.make_descriptor_sets(4, 50, 16, seed=0)
    >>> codebook = vlad.fit_codebook(sets, 8, seed=0)
    >>> encoder = vlad.TorchEncoder(codebook, device="cpu")  # doctest: +SKIP
    >>> encoder(sets).shape  # doctest: +SKIP
    (4, 128)
    """

    backend = "torch"

    def __init__(
        self,
        codebook: Codebook | ArrayLike,
        options: EncodingOptions | None = None,
        *,
        device: Any = None,
        keep_on_device: bool = False,
        **settings,
    ):
        super().__init__(codebook, options, keep_on_device=keep_on_device, **settings)
        torch = import_torch()
        if device is None:
            device = "cuda" if torch.cuda.is_available() else "cpu"
        self.device = torch.device(device)

    def _import_runtime(self) -> Any:
        return import_torch()

    def _codebook_on_device(self, dtype) -> tuple:
        torch = import_torch()
        centers = torch.from_numpy(self._centers).to(self.device, dtype)
        return (
            centers,
            (-2.0 * centers.T).contiguous(),
            (centers * centers).sum(dim=1),
        )

    def __call__(
        self,
        descriptor_sets: Any,
        offsets: ArrayLike | None = None,
    ) -> Any:
        """VLAD vectors of a batch, shape (n_images, n_clusters * n_features).

        Parameters
        ----------
        descriptor_sets : Tensor, DescriptorSets, list or (T, L, F) array
            A ``(T, L, F)`` tensor, a flat ``(N, F)`` tensor with ``offsets``,
            a list of ``(L_t, F)`` tensors (concatenated: one copy), or any
            NumPy input of :func:`vlad.encode`. float64 gives float64 vectors,
            other dtypes float32.
        offsets : array-like of int of shape (n_images + 1,), optional
            Image boundaries of a flat ``(N, F)`` tensor; only with one.

        Returns
        -------
        vectors : Tensor or ndarray of shape (n_images, n_clusters * n_features)
            A tensor on the encoder's device for tensor input or when
            ``keep_on_device`` is set; NumPy otherwise.

        Raises
        ------
        ValueError
            Dimension mismatch, bad offsets, or NaN/inf descriptors.
        TypeError
            ``offsets`` without a flat tensor.
        """
        descriptors, offsets, tensor_input = self._as_flat(descriptor_sets, offsets)
        check_n_features(descriptors.shape[1], self.n_features)
        centers, scaled_centers_t, squared_norms = self._codebook(descriptors.dtype)
        layout = torch_kernels.RowLayout.of(offsets, self.device)
        partials, counts, finite = torch_kernels.residual_sums(
            descriptors,
            layout,
            centers,
            codebook=(scaled_centers_t, squared_norms),
            residual_norm=self.options.residual_norm,
        )
        if not bool(finite):
            _raise_non_finite(descriptors)
        sums, image_counts = torch_kernels.block_sums(
            partials, counts, layout, self.n_clusters
        )
        vectors = torch_kernels.normalize_sums(
            sums, image_counts, **self._normalization()
        )
        if tensor_input or self.keep_on_device:
            return vectors
        return vectors.cpu().numpy()

    def _as_flat(self, descriptor_sets, offsets):
        """``(descriptors tensor (N, F) on the device, offsets ndarray, whether
        the input was a tensor)``."""
        torch = import_torch()
        if isinstance(descriptor_sets, (list, tuple)) and descriptor_sets:
            if all(torch.is_tensor(block) for block in descriptor_sets):
                lengths = [int(block.shape[0]) for block in descriptor_sets]
                offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
                descriptor_sets = torch.cat(
                    [block.reshape(block.shape[0], -1) for block in descriptor_sets]
                )
        if torch.is_tensor(descriptor_sets):
            tensor = descriptor_sets
            if tensor.ndim == 3 and offsets is None:
                n_images, n_rows, n_features = tensor.shape
                tensor = tensor.reshape(n_images * n_rows, n_features)
                offsets = np.arange(n_images + 1, dtype=np.int64) * n_rows
            elif tensor.ndim != 2 or offsets is None:
                raise VladError(
                    "a descriptor tensor must have shape (n_images, n_descriptors, "
                    "n_features), or (n_descriptors, n_features) with offsets; "
                    f"got shape {tuple(tensor.shape)}"
                    + (" and no offsets" if tensor.ndim == 2 else "")
                )
            if torch.is_tensor(offsets):
                offsets = offsets.cpu().numpy()
            offsets = as_offsets(offsets, tensor.shape[0])
            dtype = torch.float64 if tensor.dtype == torch.float64 else torch.float32
            return tensor.to(self.device, dtype).contiguous(), offsets, True
        if offsets is not None:
            raise VladTypeError(
                "offsets go with a flat (n_descriptors, n_features) tensor; got "
                f"{type(descriptor_sets).__name__} descriptors"
            )
        sets = as_descriptor_sets(descriptor_sets)
        descriptors = torch.from_numpy(sets.descriptors).to(self.device)
        return descriptors, sets.offsets, False


def _raise_non_finite(descriptors) -> None:
    """Raise ``ValueError`` for non-finite nearest distances: NaN or inf
    descriptors (counted), or else an overflow."""
    torch = import_torch()
    bad = int((~torch.isfinite(descriptors)).sum())
    if bad:
        raise VladError(f"descriptors contains {bad} NaN or infinite value(s)")
    raise VladError(
        "descriptor distances overflow: values are too large for "
        f"{str(descriptors.dtype).removeprefix('torch.')} arithmetic; rescale "
        "them or pass float64"
    )
