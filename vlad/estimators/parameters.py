"""Parameter constraints the estimators share, in scikit-learn's declarative form."""

from __future__ import annotations

from numbers import Integral

from sklearn.utils._param_validation import Interval, Options

__all__ = ["N_JOBS"]

#: vlad's one ``n_jobs`` rule (see :func:`vlad.core.parallel.resolve_n_jobs`):
#: None or -1 for every core, or a positive number of threads.
N_JOBS = [Interval(Integral, 1, None, closed="left"), Options(Integral, {-1}), None]
