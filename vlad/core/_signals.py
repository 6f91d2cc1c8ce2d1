"""Signals held back while a few moves that must not be cut in two are made
or undone.

Ctrl-C (SIGINT) and, under the ``vlad`` command, SIGTERM are Python
exceptions raised wherever the main thread is. Outputs are replaced by a few
renames that an exception may cut anywhere; the code that undoes them (puts
the previous files back) must not be cut in its turn. Inside
:func:`deferred_signals`, such a signal is recorded instead of raised, and
raised once the block ends (or when the block asks, between two moves).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["DeferredSignals", "deferred_signals"]

#: The signals whose Python handlers raise exceptions (Ctrl-C by default,
#: SIGTERM under the ``vlad`` command).
_HELD = (signal.SIGINT, signal.SIGTERM)


class DeferredSignals:
    """The signals received while :func:`deferred_signals`'s block runs, and
    the handlers that were in place before it."""

    def __init__(self, handlers: dict):
        self.handlers = handlers
        self.received: list[int] = []

    def record(self, number: int, frame) -> None:
        """The handler in place during the block: remember the signal."""
        self.received.append(number)

    def raise_received(self) -> None:
        """Run the handler of the first signal received, which raises
        (``KeyboardInterrupt``...); nothing when none was."""
        if self.received:
            number = self.received.pop(0)
            self.received.clear()  # one is enough: the run ends
            self.handlers[number](number, None)


@contextmanager
def deferred_signals() -> Iterator[DeferredSignals]:
    """Hold back SIGINT and SIGTERM while the block runs; raise the first
    received when it ends (by calling the handler that was in place).

    Only signals handled by a Python function are held (that is, those that
    raise exceptions); one left to the system (``SIG_DFL``: SIGTERM kills
    the process outside the ``vlad`` command) or ignored is left alone, and
    so is everything in another thread than the main one, where Python never
    runs signal handlers. The block may call
    :meth:`DeferredSignals.raise_received` between two steps to stop there.

    Examples
    --------
    >>> import os, signal
    >>> from vlad.core._signals import deferred_signals
    >>> def stop(number, frame):
    ...     raise RuntimeError("terminated")
    >>> previous = signal.signal(signal.SIGTERM, stop)
    >>> try:
    ...     with deferred_signals():
    ...         os.kill(os.getpid(), signal.SIGTERM)
    ...         print("not cut")
    ... except RuntimeError as error:
    ...     print(error, "after the block")
    ... finally:
    ...     _ = signal.signal(signal.SIGTERM, previous)
    not cut
    terminated after the block
    """
    if threading.current_thread() is not threading.main_thread():
        yield DeferredSignals({})
        return
    handlers = {
        number: handler
        for number in _HELD
        if callable(handler := signal.getsignal(number))
    }
    deferred = DeferredSignals(handlers)
    # signal.signal runs the handlers of signals already pending first: one
    # that raises here does so before anything is held (the block has not
    # begun), or while restoring (recorded, as any signal of the block).
    installed = {}
    try:
        for number in handlers:
            installed[number] = signal.signal(number, deferred.record)
        yield deferred
    finally:
        for number, handler in installed.items():
            signal.signal(number, handler)
        # A signal wins over an error of the block (kept as its context).
        deferred.raise_received()
