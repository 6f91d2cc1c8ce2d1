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

__all__ = ["N_JOBS", "check_specified", "constraints"]

#: vlad's one ``n_jobs`` rule (see :func:`vlad.core._parallel.resolve_n_jobs`):
#: None or -1 for every core, or a positive number of threads.
N_JOBS = [Interval(Integral, 1, None, closed="left"), Options(Integral, {-1}), None]


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
    return [*allowed, None] if parameter.none else allowed


def check_specified(estimator, parameters: Iterable[Parameter]) -> None:
    """Check ``estimator``'s values of ``parameters`` by their specification.

    Run before scikit-learn's own validation, so that a bad value gets the
    expectation and the echo that :meth:`Parameter.check` gives the functions,
    in scikit-learn's frame (which ``check_estimator`` requires).

    Raises
    ------
    InvalidParameterError
        ``The 'power' parameter of VLADEncoder must be a number in (0, 1].
        Got 2 instead.``
    """
    for parameter in parameters:
        value = getattr(estimator, parameter.name)
        try:
            parameter.check(value)
        except (TypeError, ValueError):
            raise InvalidParameterError(
                f"The {parameter.name!r} parameter of {type(estimator).__name__} "
                f"must be {parameter.expectation}. Got {value!r} instead."
            ) from None
