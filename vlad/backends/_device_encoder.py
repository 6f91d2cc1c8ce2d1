"""What the device encoders share: :class:`vlad.JaxEncoder` and
:class:`vlad.TorchEncoder` check their settings and hold the codebook the
same way, and differ only in the library that computes."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike

from vlad.core._codebook import Codebook, as_centers
from vlad.core._options import EncodingOptions
from vlad.errors import VladTypeError

__all__ = ["DeviceEncoder"]


class DeviceEncoder(ABC):
    """The base of the encoders that assign, aggregate and normalise on a
    device with one library (JAX, PyTorch).

    A subclass names its aggregator (:attr:`backend`), imports its library
    (:meth:`_import_runtime`) and puts a codebook in a dtype on its device
    (:meth:`_codebook_on_device`); this class checks the settings, keeps the
    codebook on the host and caches it on the device per dtype.

    Parameters
    ----------
    codebook : Codebook or array-like of shape (n_clusters, n_features)
    options : EncodingOptions, optional
        Its ``aggregator`` must be ``"auto"`` or the subclass's
        :attr:`backend`.
    keep_on_device : bool, default=False
    **settings
        Fields of :class:`vlad.EncodingOptions` replacing those of ``options``.
    """

    #: The aggregator that sums the residuals: ``"jax"``, ``"torch"``.
    backend: ClassVar[str]

    def __init__(
        self,
        codebook: Codebook | ArrayLike,
        options: EncodingOptions | None = None,
        *,
        keep_on_device: bool = False,
        **settings,
    ):
        self.options = EncodingOptions.resolve(options, **settings).for_backend(
            self.backend, type(self).__name__
        )
        if not isinstance(keep_on_device, (bool, np.bool_)):
            raise VladTypeError(
                f"keep_on_device must be True or False; got {keep_on_device!r}"
            )
        self._import_runtime()
        self.keep_on_device = bool(keep_on_device)
        self._centers = as_centers(codebook)
        self.n_clusters, self.n_features = self._centers.shape
        self._codebooks: dict[Any, tuple] = {}

    @abstractmethod
    def _import_runtime(self) -> Any:
        """Import the library, or raise an ``ImportError`` that says how to
        install it."""

    @abstractmethod
    def _codebook_on_device(self, dtype: Any) -> tuple:
        """``(centers, -2 centers.T, |c|^2)`` in ``dtype`` on the device."""

    def _codebook(self, dtype: Any) -> tuple:
        """:meth:`_codebook_on_device`, made once per dtype."""
        if dtype not in self._codebooks:
            self._codebooks[dtype] = self._codebook_on_device(dtype)
        return self._codebooks[dtype]

    def _normalization(self) -> dict[str, Any]:
        """The normalisation settings, as the kernels take them."""
        options = self.options
        return {
            "power": options.power,
            "intra": options.intra,
            "l2": options.l2,
            "mass": options.mass,
        }
