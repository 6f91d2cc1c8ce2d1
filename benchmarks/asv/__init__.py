"""asv benchmarks of vlad; the workloads and methods come from the harness.

asv imports this folder as a package of its own (named after the folder), so
the checkout's root is put on ``sys.path`` here for ``import benchmarks``.
"""

import sys
from pathlib import Path

__all__ = []

_CHECKOUT = str(Path(__file__).resolve().parents[2])
if _CHECKOUT not in sys.path:
    sys.path.insert(0, _CHECKOUT)
