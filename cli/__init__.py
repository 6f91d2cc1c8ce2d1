"""The ``vlad`` command line, a click group thin over :mod:`vlad`.

The code lives in the repository's top-level ``cli/`` folder and installs as the
``vlad_cli`` package. One module per subcommand; the options they share are in
:mod:`vlad_cli.options`, and the reporting they share in :mod:`vlad_cli.helpers`.
"""
