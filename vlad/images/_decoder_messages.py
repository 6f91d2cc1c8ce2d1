"""What image decoders write to standard error, caught and told to the image
that caused it.

libjpeg reports corrupt data ("Corrupt JPEG data: premature end of data
segment") by writing to file descriptor 2 itself and then returns an image
with the missing part filled in; OpenCV gives no other sign, and libpng's and
OpenCV's own warnings go the same way, past Python's logging and ``-qq``.

Catching them means pointing the process's descriptor 2 elsewhere, which a
library must not do behind its caller's back: it happens only inside
:func:`capture_decoder_messages`, which the ``vlad`` command enters. Outside
it, decoders write to standard error as they always do, and an image they
call corrupt is decoded as they fill it in.

While an image decodes inside it, descriptor 2 points to an anonymous file;
each decode reads what was written during it. Decodes run on many threads at once: a
decode that saw decoder messages while another decode overlapped it runs
again alone, so that the messages it keeps are its own. Lines that are not
decoders' (Python's, or another library's) are passed on to the real standard
error as soon as the decode that caught them ends.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import threading
from collections.abc import Callable, Iterator
from typing import TypeVar

__all__ = [
    "CAPTURE_VARIABLE",
    "CORRUPT_DATA",
    "DECODER_MESSAGES",
    "capture_decoder_messages",
    "capturing_decoder_messages",
    "decode_with_messages",
]

#: How the decoders' messages begin (libjpeg, libpng, OpenCV's log).
DECODER_MESSAGES = (
    "Corrupt JPEG data",
    "Premature end of JPEG file",
    "Invalid SOS parameters",
    "Inconsistent progression sequence",
    "Warning: ",
    "Unsupported marker",
    "libpng warning",
    "libpng error",
    "[ WARN:",
    "[ERROR:",
    "[ INFO:",
)
#: Decoder messages that mean the image was decoded from damaged data.
CORRUPT_DATA = DECODER_MESSAGES[:4] + ("libpng error",)

#: Set to ``1`` in the environment inside :func:`capture_decoder_messages`, so
#: that the processes started there (Dask's local workers) capture too.
CAPTURE_VARIABLE = "VLAD_CAPTURE_DECODER_MESSAGES"
#: The blocks of :func:`capture_decoder_messages` open now, in any thread (a
#: Dask worker's tasks overlap): the first sets the variable, the last puts
#: back what was there before the first.
_HOLDERS = 0
_PREVIOUS: str | None = None
_HOLDERS_LOCK = threading.Lock()

T = TypeVar("T")


class _Window:
    """One decode's view of the capture: where it started, and whether
    another decode ran during it."""

    def __init__(self, start: int, opened: int, overlapped: bool):
        self.start = start
        self.opened = opened
        self.overlapped = overlapped


class _StderrCapture:
    """Descriptor 2 redirected to an anonymous file while decodes run."""

    def __init__(self):
        self._condition = threading.Condition()
        self._active = 0  # decodes running
        self._alone = False  # a decode runs with none beside it
        self._waiting_alone = 0  # decodes waiting to run alone
        self._opened = 0  # decodes started, ever
        self._saved = -1  # the real standard error, while captured
        self._file = -1  # where descriptor 2 points meanwhile
        self._forwarded = 0  # bytes of the file handled so far

    def open(self, alone: bool) -> _Window | None:
        """Start a decode's window; None when descriptor 2 cannot be captured."""
        with self._condition:
            if alone:
                self._waiting_alone += 1
                self._condition.wait_for(lambda: self._active == 0)
                self._waiting_alone -= 1
                self._alone = True
            else:
                self._condition.wait_for(
                    lambda: not self._alone and not self._waiting_alone
                )
            if self._active == 0 and not self._start():
                self._alone = False
                self._condition.notify_all()
                return None
            self._active += 1
            self._opened += 1
            return _Window(self._size(), self._opened, self._active > 1)

    def close(self, window: _Window) -> tuple[list[str], bool]:
        """End a window: the decoder messages written during it, and whether
        another decode overlapped it."""
        with self._condition:
            end = self._size()
            overlapped = window.overlapped or self._opened != window.opened
            written = os.pread(self._file, end - window.start, window.start)
            self._forward_others(end)
            self._active -= 1
            self._alone = False
            if self._active == 0:
                self._stop()
            self._condition.notify_all()
        text = written.decode(errors="replace")
        messages = [line for line in text.splitlines() if _is_decoders(line)]
        return messages, overlapped

    def _size(self) -> int:
        return os.fstat(self._file).st_size

    def _start(self) -> bool:
        """Point descriptor 2 to a new anonymous file; False if impossible."""
        if not hasattr(os, "pread"):
            return False
        try:
            saved = os.dup(2)
        except OSError:  # no standard error at all
            return False
        try:
            if hasattr(os, "memfd_create"):
                capture = os.memfd_create("vlad-decoder-messages")
            else:
                capture = os.dup(tempfile.TemporaryFile().fileno())
        except OSError:
            os.close(saved)
            return False
        self._saved, self._file, self._forwarded = saved, capture, 0
        os.dup2(capture, 2)
        return True

    def _stop(self) -> None:
        """Give descriptor 2 back."""
        os.dup2(self._saved, 2)
        os.close(self._saved)
        os.close(self._file)
        self._saved = self._file = -1

    def _forward_others(self, end: int) -> None:
        """Write the complete lines up to ``end`` that are not decoders' to the
        real standard error."""
        pending = os.pread(self._file, end - self._forwarded, self._forwarded)
        complete = pending[: pending.rfind(b"\n") + 1]
        if self._active == 1:  # the last decode: nothing more will follow
            complete = pending
        others = [
            line
            for line in complete.splitlines(keepends=True)
            if not _is_decoders(line.decode(errors="replace"))
        ]
        with contextlib.suppress(OSError):
            os.write(self._saved, b"".join(others))
        self._forwarded += len(complete)


def _is_decoders(line: str) -> bool:
    """Whether a line of standard error is a decoder's message."""
    return line.lstrip().startswith(DECODER_MESSAGES)


_CAPTURE = _StderrCapture()


@contextlib.contextmanager
def capture_decoder_messages() -> Iterator[None]:
    """Catch the decoders' messages of the images decoded while the block runs.

    Inside it, :func:`vlad.read_image` (and every function that reads image
    files) refuses an image its decoder says is corrupt and logs the decoders'
    other warnings against the image, and standard error shows neither.
    Descriptor 2 is pointed elsewhere during each decode; Python's own
    messages and other libraries' lines written meanwhile are passed on to it
    when the decode ends. Processes started inside the block inherit the
    setting (:data:`CAPTURE_VARIABLE`), and so do the Dask tasks of shards
    made inside it. The ``vlad`` command runs in it; blocks may overlap, in
    one thread or several.

    Examples
    --------
    >>> import os
    >>> from vlad.images._decoder_messages import (
    ...     capture_decoder_messages, decode_with_messages)
    >>> def noisy():
    ...     os.write(2, b"Corrupt JPEG data: premature end of data segment\\n")
    ...     return 7
    >>> with capture_decoder_messages():
    ...     decode_with_messages(noisy)
    (7, ['Corrupt JPEG data: premature end of data segment'])
    """
    global _HOLDERS, _PREVIOUS
    with _HOLDERS_LOCK:
        if _HOLDERS == 0:
            _PREVIOUS = os.environ.get(CAPTURE_VARIABLE)
            os.environ[CAPTURE_VARIABLE] = "1"
        _HOLDERS += 1
    try:
        yield
    finally:
        with _HOLDERS_LOCK:
            _HOLDERS -= 1
            if _HOLDERS == 0:
                if _PREVIOUS is None:
                    os.environ.pop(CAPTURE_VARIABLE, None)
                else:
                    os.environ[CAPTURE_VARIABLE] = _PREVIOUS


def capturing_decoder_messages() -> bool:
    """Whether decodes here catch their messages (inside
    :func:`capture_decoder_messages`, or in a process started there)."""
    return os.environ.get(CAPTURE_VARIABLE) == "1"


def decode_with_messages(decode: Callable[[], T]) -> tuple[T, list[str]]:
    """``decode()`` and the decoder messages it wrote to standard error, when
    :func:`capture_decoder_messages` is on (none otherwise, and descriptor 2
    is left alone).

    Parameters
    ----------
    decode : callable
        Decodes one image (``cv2.imdecode``); deterministic, so that running
        it again gives the same image and messages.

    Returns
    -------
    result
        What ``decode`` returned.
    messages : list of str
        The lines it wrote that begin as :data:`DECODER_MESSAGES`, in order.
    """
    if not capturing_decoder_messages():
        return decode(), []
    for alone in (False, True):
        window = _CAPTURE.open(alone)
        if window is None:
            return decode(), []
        try:
            result = decode()
        finally:
            messages, overlapped = _CAPTURE.close(window)
        if not (messages and overlapped):
            return result, messages
    return result, messages
