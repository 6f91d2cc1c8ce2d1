"""A network's weights from a file: read without running any of its code,
identified by their SHA-256, and checked key by key against the network.

A PyTorch checkpoint is a pickle; :func:`read_weights` reads it with
``torch.load(..., weights_only=True)``, which builds tensors and plain
containers only and refuses anything else (a pickle that would run code)
before it runs. :func:`load_weights_strictly` then loads it into the network
strictly: every key of the file must be one of the network's, of the same
shape, and every key of the network must be in the file, except the buffers
the network computes itself when it is made (listed per network, so that no
other key can go missing unseen).
"""

from __future__ import annotations

import hashlib
import os
import pickle
import re
import threading
from collections.abc import Mapping
from pathlib import Path

from vlad.backends.kornia import import_kornia
from vlad.errors import VladError

__all__ = ["file_sha256", "load_weights_strictly", "read_weights"]

_HASHES: dict[tuple[str, int, int], str] = {}
_HASHES_LOCK = threading.Lock()


def file_sha256(path: str | os.PathLike) -> str:
    """The SHA-256 of a file's bytes, as 64 hexadecimal digits; remembered
    for the file's path, size and modification time.

    Raises
    ------
    OSError
        The file cannot be read.
    """
    path = os.path.abspath(path)
    status = os.stat(path)
    key = (path, status.st_size, status.st_mtime_ns)
    with _HASHES_LOCK:
        known = _HASHES.get(key)
    if known is not None:
        return known
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    with _HASHES_LOCK:
        _HASHES[key] = digest.hexdigest()
    return _HASHES[key]


def read_weights(path: str | os.PathLike) -> dict:
    """The tensors of a PyTorch weights file (a state dict), on the CPU.

    Parameters
    ----------
    path : path-like
        A file written by ``torch.save(module.state_dict(), path)``.

    Returns
    -------
    dict of str to torch.Tensor

    Raises
    ------
    vlad.errors.VladError
        One line: the file cannot be read, is not a PyTorch file (truncated,
        say), holds anything but tensors and plain containers (such as a
        pickle that would run code: refused before it runs), or is not a
        mapping of names to tensors.
    """
    torch, _ = import_kornia()
    path = Path(path)
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except OSError as error:
        raise VladError(
            f"weights: cannot read {path}: {error.strerror or error}"
        ) from None
    except pickle.UnpicklingError as error:
        # torch's message is several lines of advice; the object's name is
        # what the user needs.
        found = re.search(r"GLOBAL ([\w.]+)", str(error))
        what = found.group(1) if found else "objects"
        raise VladError(
            f"weights: {path} is not a readable PyTorch weights file (it holds "
            f"more than tensors: {what}, which unpickling would call; refused "
            "unread)"
        ) from None
    except Exception as error:  # torch's errors: their first sentence
        reason = (str(error).strip().split(". ")[0].splitlines() or [""])[0]
        raise VladError(
            f"weights: {path} is not a readable PyTorch weights file "
            f"({type(error).__name__}: {reason})"
        ) from None
    if not isinstance(state, Mapping) or not all(
        isinstance(name, str) and isinstance(value, torch.Tensor)
        for name, value in state.items()
    ):
        raise VladError(
            f"weights: {path} holds a {type(state).__name__}, not a state dict "
            "(a mapping of parameter names to tensors)"
        )
    return dict(state)


def load_weights_strictly(
    network, state: Mapping, recomputed: frozenset[str], path: str | os.PathLike
) -> None:
    """Load ``state`` into ``network``, every key accounted for.

    Parameters
    ----------
    network : torch.nn.Module
        As made by its constructor.
    state : mapping of str to torch.Tensor
        As :func:`read_weights` returns.
    recomputed : frozenset of str
        The buffers ``network``'s constructor computes (from its settings,
        not learned): they may be missing from ``state``, and then keep the
        values it gave them.
    path : path-like
        Where ``state`` was read, for the messages.

    Raises
    ------
    vlad.errors.VladError
        One line: keys of ``state`` the network lacks, keys of the network
        ``state`` lacks (other than ``recomputed``), or tensors of other
        shapes than the network's.
    """
    own = network.state_dict()
    unexpected = sorted(set(state) - set(own))
    missing = sorted(set(own) - set(state) - recomputed)
    if unexpected or missing:
        parts = []
        if missing:
            parts.append(f"lacks {len(missing)} of its keys ({_first(missing)})")
        if unexpected:
            parts.append(
                f"has {len(unexpected)} keys it does not ({_first(unexpected)})"
            )
        raise VladError(
            f"weights: {path} are not weights of {type(network).__name__} "
            f"({getattr(network, 'model_name', '')}): the file " + " and ".join(parts)
        )
    for name, tensor in state.items():
        if tuple(tensor.shape) != tuple(own[name].shape):
            raise VladError(
                f"weights: {path} are not weights of {type(network).__name__} "
                f"({getattr(network, 'model_name', '')}): {name} has shape "
                f"{tuple(tensor.shape)} in the file and {tuple(own[name].shape)} "
                "in the network"
            )
    # The recomputed buffers the file lacks keep the constructor's values;
    # with them, the load is strict.
    complete = {**{name: own[name] for name in recomputed if name in own}, **state}
    network.load_state_dict(complete, strict=True)


def _first(names: list[str], shown: int = 3) -> str:
    """The first ``shown`` of ``names``, and how many more."""
    more = f", and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more
