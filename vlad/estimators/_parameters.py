"""Parameter constraints the estimators share, in scikit-learn's declarative form,
made from the parameters' one specification (:mod:`vlad.core._parameters`)."""

from __future__ import annotations

from collections.abc import Iterable
from numbers import Integral, Real

from sklearn.utils._param_validation import (
    Interval,
    InvalidParameterError,
    Options,
    StrOptions,
)

from vlad.core._parameters import Parameter
from vlad.errors import ParameterTypeError

__all__ = ["EstimatorParameterError", "check_specified", "constraints"]


class EstimatorParameterError(ParameterTypeError, InvalidParameterError):
    """A bad parameter of a vlad estimator: both vlad's
    :class:`vlad.errors.ParameterError` and scikit-learn's
    ``InvalidParameterError`` (so ``check_estimator`` and the callers of
    either recognise it)."""

    __module__ = "vlad.estimators"


def constraints(parameter: Parameter) -> list:
    """scikit-learn's ``_parameter_constraints`` entry for ``parameter``.

    Examples
    --------
    >>> from vlad.core._parameters import N_NEAREST
    >>> [type(allowed).__name__ for allowed in constraints(N_NEAREST)]
    ['Interval', 'NoneType']
    """
    if parameter.kind is bool:
        allowed = ["boolean"]
    elif parameter.kind is str and not parameter.choices:
        allowed = [str]
    elif parameter.kind is str:
        allowed = [StrOptions(set(parameter.choices))]
    else:
        # scikit-learn calls a missing bound open.
        left = parameter.low is not None and parameter.low_closed
        right = parameter.high is not None and parameter.high_closed
        closed = {
            (True, True): "both",
            (True, False): "left",
            (False, True): "right",
            (False, False): "neither",
        }[left, right]
        allowed = [
            Interval(
                Integral if parameter.kind is int else Real,
                parameter.low,
                parameter.high,
                closed=closed,
            )
        ]
    specials = {value for value, _ in parameter.specials}
    if specials:
        allowed.append(Options(Integral if parameter.kind is int else Real, specials))
    return [*allowed, None] if parameter.none else allowed


def check_specified(estimator, parameters: Iterable[Parameter]) -> None:
    """Check ``estimator``'s values of ``parameters`` by their specification.

    Run before scikit-learn's own validation, so that a bad value gets the
    expectation and the echo that :meth:`Parameter.check` gives the functions,
    in scikit-learn's frame (which ``check_estimator`` requires).

    Raises
    ------
    EstimatorParameterError
        A ``ValueError`` and a ``TypeError``, scikit-learn's
        ``InvalidParameterError`` and vlad's ``ParameterError``:
        ``The 'power' parameter of VLADEncoder must be a number in (0, 1].
        Got 2 instead.``
    """
    for parameter in parameters:
        value = getattr(estimator, parameter.name)
        try:
            parameter.check(value)
        except (TypeError, ValueError):
            raise EstimatorParameterError(
                f"The {parameter.name!r} parameter of {type(estimator).__name__} "
                f"must be {parameter.expectation}. Got {value!r} instead."
            ) from None
