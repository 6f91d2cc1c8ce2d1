"""The encoding settings, in one validated object: :class:`EncodingOptions`."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import numpy as np

from vlad.core.aggregators import Aggregator, resolve_aggregator
from vlad.core.validation import check_power

__all__ = ["EncodingOptions"]


@dataclasses.dataclass(frozen=True)
class EncodingOptions:
    """How residual sums become VLAD vectors; checked on creation.

    Used by :func:`vlad.encode`, :func:`vlad.encode_images`,
    :class:`vlad.JaxEncoder`, :class:`vlad.VLADEncoder` and ``vlad encode``.
    The normalisation steps run in VLFeat's order: mass, power law, intra,
    global L2.

    Parameters
    ----------
    aggregator : str or callable, default="auto"
        A name from :data:`vlad.AGGREGATORS` or a function with the same
        signature; all give the same vectors up to float rounding.
    power : float, default=1.0
        Power-law exponent in (0, 1]; 0.5 is the signed square root, 1 leaves
        values as they are. Any value in the interval is accepted: as it tends
        to 0 the power law tends to ``sign(v)`` (``1e-300`` binarises).
    intra : bool, default=True
        L2-normalise each centre's block.
    l2 : bool, default=True
        L2-normalise each whole vector.
    mass : bool, default=False
        Divide each block by its number of descriptors first.

    Raises
    ------
    ValueError
        An unknown aggregator name, or a power outside (0, 1].
    TypeError
        A value of the wrong type (``intra="yes"``).

    See Also
    --------
    vlad.encode : Encoding with these options.

    Examples
    --------
    >>> import vlad
    >>> options = vlad.EncodingOptions(power=0.5)
    >>> options.record()
    {'aggregator': 'auto', 'power': 0.5, 'intra': True, 'l2': True, 'mass': False}
    >>> vlad.EncodingOptions.from_record(options.record()) == options
    True
    >>> vlad.EncodingOptions(power=2)
    Traceback (most recent call last):
    ...
    ValueError: power must be a number in (0, 1]; got 2
    """

    aggregator: str | Aggregator = "auto"
    power: float = 1.0
    intra: bool = True
    l2: bool = True
    mass: bool = False

    def __post_init__(self):
        resolve_aggregator(self.aggregator)
        object.__setattr__(self, "power", check_power(self.power))
        for name in ("intra", "l2", "mass"):
            value = getattr(self, name)
            if not isinstance(value, (bool, np.bool_)):
                raise TypeError(f"{name} must be True or False; got {value!r}")
            object.__setattr__(self, name, bool(value))

    @classmethod
    def resolve(
        cls, options: EncodingOptions | None = None, **settings
    ) -> EncodingOptions:
        """``options`` (default options if None) with ``settings`` replacing
        some of its fields.

        Raises
        ------
        TypeError
            A setting that is not a field, or ``options`` of another type.
        """
        if options is None:
            options = cls()
        elif not isinstance(options, cls):
            raise TypeError(
                f"options must be an EncodingOptions; got {type(options).__name__}"
            )
        unknown = sorted(set(settings) - set(cls._field_names()))
        if unknown:
            raise TypeError(
                f"unknown encoding setting(s) {', '.join(unknown)}; expected "
                f"some of {', '.join(cls._field_names())}"
            )
        return dataclasses.replace(options, **settings) if settings else options

    def for_backend(self, backend: str, encoder: str) -> EncodingOptions:
        """These options, checked for an encoder that sums residuals with one
        back-end (``"jax"``, ``"torch"``): its aggregator must be ``"auto"`` or
        that back-end's.

        Raises
        ------
        ValueError
            Another aggregator.
        """
        if self.aggregator not in ("auto", backend):
            raise ValueError(
                f"{encoder} sums residuals with {backend}: its aggregator must be "
                f"'auto' or {backend!r}; got {self.aggregator_name!r}"
            )
        return self

    @property
    def aggregator_name(self) -> str:
        """The aggregator's registry name, or a function's qualified name."""
        if isinstance(self.aggregator, str):
            return self.aggregator
        function = self.aggregator
        module = getattr(function, "__module__", None)
        name = getattr(function, "__qualname__", type(function).__name__)
        return f"{module}.{name}" if module else name

    def record(self) -> dict:
        """JSON-serialisable description, as in ``vectors.json``'s ``encoding``."""
        return {
            "aggregator": self.aggregator_name,
            "power": self.power,
            "intra": self.intra,
            "l2": self.l2,
            "mass": self.mass,
        }

    @classmethod
    def from_record(cls, record: Mapping) -> EncodingOptions:
        """The options a :meth:`record` describes (an aggregator by name).

        Raises
        ------
        ValueError
            A record that is not a mapping of valid settings.
        """
        if not isinstance(record, Mapping):
            raise ValueError(
                f"an encoding record must be a mapping; got {type(record).__name__}"
            )
        fields = cls._field_names()
        return cls(**{key: value for key, value in record.items() if key in fields})

    @classmethod
    def _field_names(cls) -> tuple[str, ...]:
        return tuple(field.name for field in dataclasses.fields(cls))
