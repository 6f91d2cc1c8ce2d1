"""SIGTERM and Ctrl-C as exceptions in the main thread while a command runs,
and never lost.

Python runs a signal's handler in the main thread between two bytecodes,
wherever that thread is: also inside a finalizer that the garbage collector
happens to run there (a ``__del__`` method, a weakref callback). An exception
raised in a finalizer is printed ("Exception ignored in ...") and dropped, so
a command signalled at that instant would go on and exit 0, a traceback on
its standard error. Here such an exception reaches ``sys.unraisablehook``,
which neither prints nor drops it: the signal is sent again, from another
thread, and raised where the command is. Code that catches the exception
where it did not expect one may also drop it, or turn it into another error
(NumPy's ``tofile``, interrupted in a check of its argument, raises a
``TypeError``): the command then ends by the signal all the same when it
ends.
"""

from __future__ import annotations

import _thread
import gc
import signal
import sys
import threading
from types import FrameType, TracebackType

__all__ = ["QuietFinalizers", "SignalsAsExceptions", "Terminated"]


class Terminated(BaseException):
    """SIGTERM, raised where the main thread is, so that clean-up runs."""


#: The exception each signal raises.
_EXCEPTIONS: dict[int, type[BaseException]] = {
    signal.SIGINT: KeyboardInterrupt,
    signal.SIGTERM: Terminated,
}
_RAISED = tuple(_EXCEPTIONS.values())


class SignalsAsExceptions:
    """A context in which SIGINT raises ``KeyboardInterrupt`` (unless it is
    ignored, as in a background job) and SIGTERM :class:`Terminated` in the
    main thread, even when the signal comes while a finalizer runs (see the
    module's docstring).

    A signal received in the block ends it by the signal's exception,
    whatever became of the exception raised for it (dropped, or turned into
    another error): the block's own error, or its normal end, gives way to
    it. Outside the main thread, where Python never runs signal handlers, the
    context does nothing.
    """

    def __init__(self) -> None:
        self._active = threading.current_thread() is threading.main_thread()
        self._lock = threading.Lock()
        self._open = False
        self._received: int | None = None
        self._handlers: dict[int, object] = {}
        self._hook = sys.unraisablehook

    def __enter__(self) -> SignalsAsExceptions:
        if self._active:
            self._hook = sys.unraisablehook
            sys.unraisablehook = self._unraisable
            self._open = True
            for number in _EXCEPTIONS:
                if number == signal.SIGINT and not callable(signal.getsignal(number)):
                    continue  # Ctrl-C ignored (a background job) stays so
                self._handlers[number] = signal.signal(number, self._raise)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool:
        if not self._active:
            return False
        # Each step may first run a pending signal's handler, which raises:
        # the step is then done again, and the signal raised at the end.
        caught = _steps_despite_signals(
            [self._close]
            + [
                lambda number=number, handler=handler: signal.signal(number, handler)
                for number, handler in self._handlers.items()
            ]
        )
        sys.unraisablehook = self._hook
        if isinstance(error, _RAISED):
            return False  # already ending by a signal
        if caught is not None:
            raise caught
        if self._received is not None:  # its exception was lost on the way
            raise _EXCEPTIONS[self._received]()
        return False

    def _raise(self, number: int, frame: FrameType | None) -> None:
        """The signals' handler: raise the signal's exception, except in
        :meth:`_unraisable` (where it would be dropped), which sends it
        again."""
        if _inside(frame, SignalsAsExceptions._unraisable.__code__):
            self._send_again(number)
            return
        self._received = number
        raise _EXCEPTIONS[number]()

    def _unraisable(self, unraisable) -> None:
        """``sys.unraisablehook``: a signal's exception that a finalizer
        dropped is sent again; anything else goes to the previous hook."""
        number = next(
            (
                number
                for number, exception in _EXCEPTIONS.items()
                if type(unraisable.exc_value) is exception
            ),
            None,
        )
        if number is None:
            self._hook(unraisable)
            return
        self._send_again(number)

    def _send_again(self, number: int) -> None:
        """Send the signal again from another thread: raised in the main
        thread once the finalizer (or the hook) has returned."""
        _thread.start_new_thread(self._send, (number,))

    def _send(self, number: int) -> None:
        # Under the lock: never once the handlers are given back.
        with self._lock:
            if not self._open:
                return
            if hasattr(signal, "pthread_kill"):
                # A real signal interrupts a blocking call of the main thread.
                signal.pthread_kill(threading.main_thread().ident, number)
            else:
                _thread.interrupt_main(number)

    def _close(self) -> None:
        with self._lock:
            self._open = False


class QuietFinalizers:
    """Errors of finalizers not printed from :meth:`start` until
    :meth:`stop`, which first collects the garbage.

    For the instant after a signal has cut a command short: objects that it
    left half-made in the libraries the command was running (numba's
    compiler, for one) may fail in their finalizers as they go, with
    tracebacks that tell the user nothing.
    """

    def __init__(self) -> None:
        self._hook = None

    def start(self) -> None:
        if self._hook is None:
            self._hook = sys.unraisablehook
            sys.unraisablehook = _ignore

    def stop(self) -> None:
        if self._hook is None:
            return
        try:
            gc.collect()
        finally:
            sys.unraisablehook, self._hook = self._hook, None


def _ignore(unraisable) -> None:
    """An ``unraisablehook`` that prints nothing."""


def _inside(frame: FrameType | None, code) -> bool:
    """Whether ``frame`` or one of its callers runs ``code``."""
    while frame is not None:
        if frame.f_code is code:
            return True
        frame = frame.f_back
    return False


def _steps_despite_signals(steps) -> BaseException | None:
    """Call each step until it returns without a signal's exception; the
    first such exception raised meanwhile, or None."""
    caught = None
    for step in steps:
        while True:
            try:
                step()
                break
            except _RAISED as exception:
                caught = caught or exception
    return caught
