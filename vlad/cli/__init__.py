"""The ``vlad`` command line, a click group thin over :mod:`vlad`.

One module per subcommand (:mod:`vlad.cli.extract`, :mod:`vlad.cli.fit`,
:mod:`vlad.cli.encode`, :mod:`vlad.cli.info`...), imported when it runs; the
group in :mod:`vlad.cli.main`, the options they share in :mod:`vlad.cli.options` and
the reporting they share in :mod:`vlad.cli.reporting`. Each command parses its
arguments, makes one library call and reports.
"""
