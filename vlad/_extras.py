"""The optional extras of the distribution, and the command that installs
what each holds, for the errors that say what is missing.

From a clone, ``pip install -e '.[faiss]'`` installs an extra, and once
vlad-toolkit is on PyPI the same extra of it will; the errors name the
packages themselves (``pip install 'faiss-cpu>=1.7.4'``), which install the
same way wherever vlad came from.
"""

from __future__ import annotations

__all__ = ["EXTRAS", "install_command"]

#: The requirements of each extra, as ``[project.optional-dependencies]`` of
#: pyproject.toml lists them (a test keeps the two equal); ``all`` is the
#: runtime extras together, ``test`` the test tools.
EXTRAS: dict[str, tuple[str, ...]] = {
    "numba": ("numba>=0.59",),
    "jax": ("jax>=0.4.30", "jaxlib>=0.4.30"),
    "faiss": ("faiss-cpu>=1.7.4",),
    "html": ("pillow>=9.1",),
    "dask": ("dask[distributed]>=2023.1",),
    "hloc": ("h5py>=3.0",),
    "torch": ("torch>=2.1",),
    "keras": ("keras>=3",),
    "learned": ("torch>=2.1", "kornia>=0.8.3"),
    "bench": ("matplotlib>=3.7",),
}


def install_command(extra: str) -> str:
    """The pip command that installs what the extra ``extra`` holds.

    Examples
    --------
    >>> install_command("faiss")
    "pip install 'faiss-cpu>=1.7.4'"
    """
    return "pip install " + " ".join(f"'{package}'" for package in EXTRAS[extra])
