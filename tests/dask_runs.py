"""Helpers of the tests that make shards on Dask: vlad's command line run
in-process, and a worker plugin that kills its worker once, mid-run."""

from __future__ import annotations

import os
import signal
from pathlib import Path

from click.testing import CliRunner

from vlad.cli._main import main

__all__ = ["kill_once", "run"]


def run(*args, exit_code=0):
    """Invoke ``vlad ARGS`` in-process; check its exit code; return the result."""
    result = CliRunner().invoke(main, [str(arg) for arg in args])
    assert result.exit_code == exit_code, (result.output, result.exception)
    assert "Traceback" not in result.output
    return result


def kill_once(marker: Path, key_prefix: str):
    """A worker plugin that SIGKILLs its worker as it finishes the first task
    whose key starts with ``key_prefix``, once (``marker`` is made then): the
    task's shard is written but the scheduler never hears of it."""
    import distributed

    class KillOnce(distributed.WorkerPlugin):
        def __init__(self, marker, key_prefix):
            self.marker = str(marker)
            self.key_prefix = key_prefix

        def transition(self, key, start, finish, **kwargs):
            if (
                str(key).startswith(self.key_prefix)
                and (start, finish) == ("executing", "memory")
                and not os.path.exists(self.marker)
            ):
                open(self.marker, "w").close()
                os.kill(os.getpid(), signal.SIGKILL)

    return KillOnce(marker, key_prefix)
