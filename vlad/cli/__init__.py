"""The ``vlad`` command line, a click group thin over :mod:`vlad`.

One private module per subcommand (:mod:`vlad.cli._extract`, :mod:`vlad.cli._fit`,
:mod:`vlad.cli._encode`, :mod:`vlad.cli._info`...), imported when it runs; the
group in :mod:`vlad.cli._main`, the options they share in :mod:`vlad.cli._options` and
the reporting they share in :mod:`vlad.cli._reporting`. Each command parses its
arguments, makes one library call and reports.
"""

from vlad.cli._main import main

__all__ = ["main"]
