"""The hostile-input suite: bad images, hostile NumPy files, faults and misuse.

Each case asserts its outcome: a one-line error with the right exit status,
or the bad input skipped and listed, and never a traceback, a NaN in an
output, a shifted row, a half-written or silently replaced file, or a
temporary file left behind. A package so that its conftest.py is imported as
``hostile.conftest`` (see tests/cli/__init__.py).
"""
