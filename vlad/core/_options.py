"""The encoding settings, in one validated object: :class:`EncodingOptions`."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from vlad.core._parameters import ENCODING_PARAMETERS
from vlad.core.aggregators import (
    Aggregator,
    check_aggregator_variant,
    resolve_aggregator,
)
from vlad.errors import VladError, VladTypeError

__all__ = ["EncodingOptions"]


@dataclasses.dataclass(frozen=True)
class EncodingOptions:
    """How residual sums become VLAD vectors; checked on creation.

    Used by :func:`vlad.encode`, :func:`vlad.encode_images`,
    :class:`vlad.JaxEncoder`, :class:`vlad.VLADEncoder` and ``vlad encode``.
    The normalisation steps run in VLFeat's order: mass, power law, intra,
    global L2. Residual normalisation and multiple or soft assignment change
    the sums themselves, before those steps.

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
        Divide each block by its number of descriptors first (by the sum of
        its assignment weights with multiple or soft assignment).
    residual_norm : bool, default=False
        L2-normalise each residual ``x - c_k`` before summing (a zero residual
        adds zero), as in Delhumeau et al. (2013); usually with ``power=0.2``.
        Every aggregator supports it.
    assignment : {"hard", "multiple", "soft"}, default="hard"
        ``"hard"``: each descriptor to its nearest centre. ``"multiple"``: to
        its ``n_nearest`` nearest, each with weight ``1 / n_nearest`` (Yael's
        2- and 4-nearest VLAD). ``"soft"``: to its ``n_nearest`` nearest with
        Gaussian weights relative to its nearest squared distance (see
        :func:`vlad.assignment_weights`). A descriptor's weights sum to one.
        Only the aggregators ``auto``, ``loop``, ``sparse`` and ``numba`` (or
        a function taking ``weights=``) sum weighted residuals.
    n_nearest : int, optional
        Centres per descriptor: 1 for ``"hard"`` (the only value it takes),
        2 by default for ``"multiple"`` and ``"soft"``. At most the number of
        centres (checked when encoding).
    kernel_width : float, default=1.0
        Width of the soft-assignment kernel, relative to each descriptor's
        nearest squared distance ``d_min``: weights are ``exp(-(d - d_min) /
        (2 * kernel_width * d_min))``. Larger is more even.

    Raises
    ------
    ValueError
        An unknown aggregator name, a power outside (0, 1], an unknown
        assignment, ``n_nearest`` other than 1 for hard assignment, a
        non-positive ``kernel_width``, or an aggregator that cannot sum the
        residuals these options ask for.
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
    vlad.errors.ParameterError: power must be a number in (0, 1]; got 2

    Settings other than plain VLAD's are recorded too:

    >>> vlad.EncodingOptions(residual_norm=True, assignment="soft").record()
    ... # doctest: +NORMALIZE_WHITESPACE
    {'aggregator': 'auto', 'power': 1.0, 'intra': True, 'l2': True, 'mass': False,
     'residual_norm': True, 'assignment': 'soft', 'n_nearest': 2}

    References
    ----------
    Delhumeau, Gosselin, Jégou and Pérez, "Revisiting the VLAD image
    representation", ACM Multimedia 2013.
    """

    aggregator: str | Aggregator = "auto"
    power: float = 1.0
    intra: bool = True
    l2: bool = True
    mass: bool = False
    residual_norm: bool = False
    assignment: str = "hard"
    n_nearest: int | None = None
    kernel_width: float = 1.0

    def __post_init__(self):
        resolve_aggregator(self.aggregator)
        # Each field by its one specification (vlad.core._parameters), so that
        # a bad value gets the message it gets from VLADEncoder and the CLI.
        for parameter in ENCODING_PARAMETERS:
            value = parameter.check(getattr(self, parameter.name))
            object.__setattr__(self, parameter.name, value)
        if self.n_nearest is None:
            object.__setattr__(self, "n_nearest", 1 if self.assignment == "hard" else 2)
        n_nearest = self.n_nearest
        if self.assignment == "hard" and n_nearest != 1:
            raise VladError(
                f"n_nearest must be 1 with assignment='hard'; got {n_nearest} "
                "(use assignment='multiple' or 'soft')"
            )
        check_aggregator_variant(
            self.aggregator,
            residual_norm=self.residual_norm,
            weighted=self.weighted,
        )

    @property
    def weighted(self) -> bool:
        """Whether descriptors go to several centres with weights (multiple or
        soft assignment)."""
        return self.assignment != "hard"

    @classmethod
    def resolve(
        cls, options: EncodingOptions | None = None, **settings
    ) -> EncodingOptions:
        """``options`` (default options if None) with ``settings`` replacing
        some of its fields. A new ``assignment`` without ``n_nearest`` takes
        that assignment's default ``n_nearest``.

        Parameters
        ----------
        options : EncodingOptions, optional
            The options to start from; default ``EncodingOptions()``.
        **settings
            Fields replacing those of ``options``.

        Raises
        ------
        TypeError
            A setting that is not a field, or ``options`` of another type.
        """
        if options is None:
            options = cls()
        elif not isinstance(options, cls):
            raise VladTypeError(
                f"options must be an EncodingOptions; got {type(options).__name__}"
            )
        unknown = sorted(set(settings) - set(cls._field_names()))
        if unknown:
            raise VladTypeError(
                f"unknown encoding setting(s) {', '.join(unknown)}; expected "
                f"some of {', '.join(cls._field_names())}"
            )
        if "assignment" in settings and "n_nearest" not in settings:
            # n_nearest's default depends on the assignment: a new assignment
            # takes its own default rather than the old one's count.
            settings["n_nearest"] = None
        return dataclasses.replace(options, **settings) if settings else options

    def for_backend(self, backend: str, encoder: str) -> EncodingOptions:
        """These options, checked for an encoder that sums residuals with one
        back-end (``"jax"``, ``"torch"``): its aggregator must be ``"auto"`` or
        that back-end's.

        Parameters
        ----------
        backend : str
            The back-end's aggregator, ``"jax"`` or ``"torch"``.
        encoder : str
            The encoder's name, for the message.

        Raises
        ------
        ValueError
            Another aggregator, or multiple or soft assignment (these
            encoders assign each descriptor to its nearest centre only).
        """
        if self.weighted:
            raise VladError(
                f"{encoder} supports assignment='hard' only; got "
                f"{self.assignment!r} (use vlad.encode)"
            )
        if self.aggregator not in ("auto", backend):
            raise VladError(
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
        """JSON-serialisable description, as in ``vectors.json``'s ``encoding``.

        The keys of residual normalisation and of the assignment appear only
        when they differ from plain VLAD's, so plain VLAD's record is the same
        as before they existed, and a record without them loads as plain VLAD.
        """
        record = {
            "aggregator": self.aggregator_name,
            "power": self.power,
            "intra": self.intra,
            "l2": self.l2,
            "mass": self.mass,
        }
        if self.residual_norm:
            record["residual_norm"] = True
        if self.weighted:
            record["assignment"] = self.assignment
            record["n_nearest"] = self.n_nearest
        if self.kernel_width != 1.0:
            record["kernel_width"] = self.kernel_width
        return record

    @classmethod
    def from_record(cls, record: Mapping) -> EncodingOptions:
        """The options a :meth:`record` describes (an aggregator by name).

        Parameters
        ----------
        record : Mapping
            What :meth:`record` returned.

        Raises
        ------
        ValueError
            A record that is not a mapping of valid settings.
        """
        if not isinstance(record, Mapping):
            raise VladError(
                f"an encoding record must be a mapping; got {type(record).__name__}"
            )
        fields = cls._field_names()
        return cls(**{key: value for key, value in record.items() if key in fields})

    @classmethod
    def _field_names(cls) -> tuple[str, ...]:
        return tuple(field.name for field in dataclasses.fields(cls))
