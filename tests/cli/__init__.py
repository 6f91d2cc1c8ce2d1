"""Tests of the ``vlad`` command line, one module per command.

A package so that this folder's conftest.py is imported as ``cli.conftest``
rather than as a second top-level ``conftest``, which would shadow
tests/conftest.py for the modules that import from it.
"""
