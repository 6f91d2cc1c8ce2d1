"""hloc's HDF5 feature files: local features read as descriptor sets, global
features written from VLAD vectors and read back.

`hloc <https://github.com/cvg/Hierarchical-Localization>`_ keeps features in
HDF5 files of one group per image, the group's path the image's name (a
relative path such as ``db/0001.jpg`` is a group ``0001.jpg`` inside a group
``db``):

- local features (``extract_features.py``: SuperPoint, DISK, ALIKED...):
  datasets ``keypoints`` of shape (N, 2) (x, y in pixels of the original
  image, pixel centres at integers), ``descriptors`` of shape (D, N), one
  *column* per keypoint, how strong each keypoint is (one of
  :data:`STRENGTH_DATASETS`, of shape (N,): vlad verifies with the
  strongest), and others vlad does not read (``image_size``); float32, or
  float16 when written ``as_half``;
- global features (NetVLAD, ...): a dataset ``global_descriptor`` of shape
  (D,) per image, which ``pairs_from_retrieval.py`` compares by inner
  product.

Image names are found as hloc's ``list_h5_names`` finds them: the groups that
hold the dataset. Images come in the order of their names (Python's sort),
whatever order the file keeps them in. Reading needs h5py (the ``hloc``
extra).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from vlad._extras import install_command
from vlad.core._descriptors import DescriptorSets
from vlad.core._validation import all_finite
from vlad.errors import VladError

__all__ = [
    "HDF5_SUFFIXES",
    "HLOC_EXTRACTOR",
    "HlocLocalFeatures",
    "hloc_file_kind",
    "is_hdf5_path",
    "open_local_features",
    "GLOBAL_DATASET",
    "LOCAL_DATASET",
    "STRENGTH_DATASETS",
    "image_names",
    "import_h5py",
    "one_line",
    "open_hdf5",
]

#: Suffixes of the HDF5 files read and written as hloc's.
HDF5_SUFFIXES = (".h5", ".hdf5")
#: The ``extractor`` that descriptor sets read from hloc's local features
#: record: a codebook fitted on them meets no other kind of descriptors.
HLOC_EXTRACTOR = "hloc"
#: The dataset of each image group that names a local and a global features file.
LOCAL_DATASET, GLOBAL_DATASET = "descriptors", "global_descriptor"
#: The datasets of an image group that say how strong each of its keypoints
#: is, under every name hloc's extractors write, in the order they are looked
#: for: ``scales``, the keypoints' sizes, which hloc's SIFT (its ``dog``
#: extractor, SIFT and SOSNet) writes beside ``scores`` that are all 0;
#: ``keypoint_scores``, the detection scores of its ALIKED and DISK; and
#: ``scores``, those of SuperPoint, R2D2 and D2-Net.
STRENGTH_DATASETS = ("scales", "keypoint_scores", "scores")
#: Images read from the file at once when image after image is asked for.
CHUNK_IMAGES = 64


def import_h5py():
    """h5py, imported, or an ``ImportError`` saying how to install it."""
    try:
        import h5py
    except ImportError:
        raise ImportError(
            "hloc's HDF5 feature files need h5py; install it with: "
            + install_command("hloc")
        ) from None
    return h5py


def is_hdf5_path(path: str | os.PathLike) -> bool:
    """Whether ``path`` names an HDF5 file (by its suffix; it need not exist).

    Examples
    --------
    >>> from vlad.formats._hloc import is_hdf5_path
    >>> is_hdf5_path("feats-superpoint.h5"), is_hdf5_path("descriptors.npz")
    (True, False)
    """
    return Path(path).suffix.lower() in HDF5_SUFFIXES


@contextlib.contextmanager
def open_hdf5(path: Path) -> Iterator:
    """``path`` open for reading; a one-line ``ValueError`` for a file HDF5
    cannot open (truncated, not HDF5) or read (damaged)."""
    h5py = import_h5py()
    if not path.is_file():
        raise FileNotFoundError(f"no such file: {path}")
    try:
        file = h5py.File(path, "r")
    except OSError as error:
        raise VladError(
            f"{path} is not a readable HDF5 file: {one_line(error)}"
        ) from None
    try:
        with file:
            yield file
    except (OSError, RuntimeError, KeyError) as error:
        raise VladError(f"{path} is a damaged HDF5 file: {one_line(error)}") from None


def one_line(error: Exception) -> str:
    """HDF5's message, on one line."""
    return " ".join(str(error).split())


def image_names(file, dataset: str, path: Path) -> list[str]:
    """The sorted names of the groups of ``file`` that hold a dataset named
    ``dataset`` (hloc's ``list_h5_names``)."""
    names = []

    def visit(name: str | bytes) -> None:
        if isinstance(name, bytes):  # h5py's name that is not UTF-8
            raise VladError(f"{path} holds a name that is not UTF-8: {name!r}")
        group, _, leaf = name.rpartition("/")
        if leaf == dataset:
            names.append(group)

    # Names only: opening every object (visititems) takes five times as long.
    file.visit(visit)
    if "" in names:
        raise VladError(
            f"{path} holds a {dataset!r} dataset outside any image's group; hloc "
            "keeps each image's features in a group named after the image"
        )
    return sorted(names)


def hloc_file_kind(path: str | os.PathLike) -> str:
    """``"local"`` or ``"global"``: what kind of hloc features file ``path`` is.

    Raises
    ------
    FileNotFoundError
        No such file.
    ValueError
        Not an HDF5 file, or one with neither hloc's local nor global features.
    ImportError
        h5py is not installed.
    """
    path = Path(path)
    with open_hdf5(path) as file:
        if image_names(file, LOCAL_DATASET, path):
            return "local"
        if image_names(file, GLOBAL_DATASET, path):
            return "global"
    raise VladError(
        f"{path} holds no hloc features: no image group holds a "
        f"{LOCAL_DATASET!r} or a {GLOBAL_DATASET!r} dataset"
    )


class HlocLocalFeatures:
    """The local features of an hloc HDF5 file, read a few images at a time.

    Behaves as a read-only :class:`vlad.DescriptorSets` for ``len``,
    ``sets[t]`` (image ``t``'s ``(N_t, D)`` float32 descriptors, hloc's
    ``(D, N_t)`` transposed), iteration, ``keypoints_of``, ``names``,
    ``lengths``, ``n_features``, ``dtype`` and ``metadata``;
    :meth:`between` gives a :class:`vlad.DescriptorSets` of a range of images
    and :meth:`to_sets` of all of them (in memory). Made by
    :func:`open_local_features`, which checks every image's layout first.

    Keypoints are hloc's x and y, then, in place of the size, how strong
    each keypoint is, read from the first of :data:`STRENGTH_DATASETS` that
    the image's group holds (hloc's SIFT's sizes, the others' detection
    scores), so that spatial verification's ``verify_keypoints`` keeps the
    strongest, as it keeps SIFT's largest keypoints; 0 where the group holds
    none. The angle is 0.

    Parameters
    ----------
    path : Path
        The HDF5 file, opened again each time images are read from it.
    names : list of str
        The images (the groups holding a ``descriptors`` dataset), in the
        order of their names.
    lengths : ndarray of int64 of shape (n_images,)
        Keypoints of each image, in the order of ``names``.
    metadata : dict
        ``{"extractor": "hloc", "file": ..., "n_features": D, "dtype": ...,
        "keypoint_strength": ...}``: the descriptors' kind is hloc's (their
        extractor is not recorded in the file), with the file's name, their
        dimension, their dtype in the file and the dataset read as each
        keypoint's strength (None where no image holds one; names joined by
        commas where images differ).

    Attributes
    ----------
    path, names, lengths, metadata
        The parameters, as given.
    n_features : int
        Descriptor dimension D, ``metadata["n_features"]``.
    """

    def __init__(
        self, path: Path, names: list[str], lengths: np.ndarray, metadata: dict
    ):
        self.path = path
        self.names = names
        self.lengths = lengths
        self.metadata = metadata
        self.n_features = int(metadata["n_features"])
        self._chunk: tuple[int, DescriptorSets] | None = None

    @property
    def dtype(self) -> np.dtype:
        """float32 (float16 files are read as float32)."""
        return np.dtype(np.float32)

    @property
    def has_keypoints(self) -> bool:
        """True: hloc's local features always hold keypoints."""
        return True

    def __len__(self) -> int:
        return len(self.names)

    def __getitem__(self, index: int) -> np.ndarray:
        """Descriptors of image ``index``, an ``(N_t, D)`` float32 array."""
        chunk, local = self._locate(index)
        return chunk[local]

    def __iter__(self):
        for t in range(len(self)):
            yield self[t]

    def keypoints_of(self, index: int) -> np.ndarray:
        """Keypoint positions of image ``index``, an ``(N_t, 4)`` array of x,
        y, size (the keypoint's strength, see the class, else 0) and angle
        (0).

        Parameters
        ----------
        index : int
            The image's place in ``names``; negative counts from the end.

        Returns
        -------
        ndarray of float32 of shape (N_t, 4)
            One row per descriptor of ``self[index]``. The chunk of images
            holding it is read from the file unless it was the last one read.
        """
        chunk, local = self._locate(index)
        return chunk.keypoints_of(local)

    def between(self, start: int, stop: int) -> DescriptorSets:
        """Images ``start`` to ``stop`` (excluded), read from the file.

        Parameters
        ----------
        start : int
            The first image, a place in ``names``.
        stop : int
            The place after the last image. Both are taken as a slice's
            bounds: negative counts from the end, and bounds beyond the
            images are clipped (an empty range gives no image).

        Returns
        -------
        DescriptorSets
            The images' float32 descriptors and keypoints, in memory, with
            this file's ``metadata``.

        Raises
        ------
        ValueError
            The file changed since it was opened, or holds NaN or infinite
            values.
        """
        start, stop, _ = slice(start, stop).indices(len(self))
        stop = max(start, stop)
        lengths = self.lengths[start:stop]
        offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        descriptors = np.empty((int(offsets[-1]), self.n_features), np.float32)
        keypoints = np.zeros((int(offsets[-1]), 4), np.float32)
        names = self.names[start:stop]
        with open_hdf5(self.path) as file:
            for name, first, last in zip(names, offsets[:-1], offsets[1:], strict=True):
                block = file[f"{name}/{LOCAL_DATASET}"][()]
                positions = file[f"{name}/keypoints"][()]
                length = int(last - first)
                expected = (self.n_features, length), (length, 2)
                if (block.shape, positions.shape) != expected:
                    raise VladError(
                        f"{self.path} changed while it was read: the features of "
                        f"{name!r} are not those it held when opened"
                    )
                # Converted first: NumPy converts float16 faster in order.
                descriptors[first:last] = block.astype(np.float32, copy=False).T
                keypoints[first:last, :2] = positions
                strength = _strength_dataset(file[name])
                if strength is not None:
                    values = file[f"{name}/{strength}"][()]
                    if values.shape != (length,):
                        raise VladError(
                            f"{self.path} changed while it was read: the {strength} "
                            f"of {name!r} are not those it held when opened"
                        )
                    if not all_finite(values):
                        raise VladError(
                            f"{self.path} holds NaN or infinite {strength} (image "
                            f"{name!r})"
                        )
                    keypoints[first:last, 2] = values
        checked = ((descriptors, "descriptors"), (keypoints[:, :2], "keypoints"))
        for array, what in checked:
            if not all_finite(array):
                raise VladError(
                    f"{self.path} holds NaN or infinite {what} (images {start} to "
                    f"{stop - 1})"
                )
        return DescriptorSets(
            descriptors, offsets, names, self.metadata, keypoints=keypoints
        )

    def to_sets(self) -> DescriptorSets:
        """Every image's features, in memory."""
        return self.between(0, len(self))

    def _locate(self, index: int) -> tuple[DescriptorSets, int]:
        """The chunk of images that holds image ``index`` (read when it is not
        the last one read), and the image's place in it."""
        t = range(len(self))[index]
        number = t // CHUNK_IMAGES
        if self._chunk is None or self._chunk[0] != number:
            self._chunk = None  # drop the last chunk before reading another
            first = number * CHUNK_IMAGES
            self._chunk = (number, self.between(first, first + CHUNK_IMAGES))
        return self._chunk[1], t - number * CHUNK_IMAGES

    def __repr__(self) -> str:
        return (
            f"HlocLocalFeatures({str(self.path)!r}, n_images={len(self)}, "
            f"n_features={self.n_features})"
        )


def open_local_features(path: str | os.PathLike) -> HlocLocalFeatures:
    """Open hloc's local features file, checking every image's layout.

    Parameters
    ----------
    path : path-like
        An HDF5 file written by hloc's ``extract_features.py`` (one group per
        image with ``keypoints`` of shape (N, 2) and ``descriptors`` of shape
        (D, N)).

    Returns
    -------
    HlocLocalFeatures
        Nothing is read but the datasets' shapes until images are asked for.

    Raises
    ------
    FileNotFoundError
        No such file.
    ValueError
        A file HDF5 cannot read (truncated, not HDF5), hloc's global features,
        or features not laid out as hloc's: descriptors not transposed,
        missing keypoints, descriptors of several dimensions, keypoint
        strengths (:data:`STRENGTH_DATASETS`) that are not one real number per
        keypoint (one line, naming the image).
    ImportError
        h5py is not installed.

    Examples
    --------
    >>> import os, tempfile
    >>> import h5py
    >>> import numpy as np
    >>> from vlad.formats import open_local_features
    >>> path = os.path.join(tempfile.mkdtemp(), "feats-superpoint.h5")
    >>> with h5py.File(path, "w") as file:
    ...     group = file.create_group("db/0001.jpg")
    ...     group["keypoints"] = np.array([[10.0, 20.0], [30.0, 40.0]], np.float16)
    ...     group["descriptors"] = np.ones((256, 2), np.float16)
    >>> features = open_local_features(path)
    >>> features.names, features[0].shape, features.keypoints_of(0)[1].tolist()
    (['db/0001.jpg'], (2, 256), [30.0, 40.0, 0.0, 0.0])
    >>> features.metadata["n_features"], features.metadata["dtype"]
    (256, 'float16')
    """
    path = Path(path)
    with open_hdf5(path) as file:
        names = image_names(file, LOCAL_DATASET, path)
        if not names:
            if image_names(file, GLOBAL_DATASET, path):
                raise VladError(
                    f"{path} holds hloc's global features (one vector per image), "
                    "not local features: index them with vlad index, or search "
                    "with them"
                )
            raise VladError(
                f"{path} holds no hloc local features: no image group holds a "
                f"{LOCAL_DATASET!r} dataset"
            )
        lengths = np.empty(len(names), dtype=np.int64)
        dtypes: set[str] = set()
        strengths: set[str] = set()
        n_features = first = None
        for index, name in enumerate(names):
            width, length, dtype, strength = _layout(file, name, path)
            if strength is not None:
                strengths.add(strength)
            if n_features is None:
                n_features, first = width, name
            elif width != n_features:
                raise VladError(
                    f"{path}: the descriptors of {name!r} have {width} dimensions "
                    f"but those of {first!r} have {n_features}; every image's "
                    "must have the same"
                )
            lengths[index] = length
            dtypes.add(dtype)
    metadata = {
        "extractor": HLOC_EXTRACTOR,
        "file": path.name,
        "n_features": n_features,
        "dtype": ",".join(sorted(dtypes)),
        "keypoint_strength": ",".join(sorted(strengths)) or None,
    }
    return HlocLocalFeatures(path, names, lengths, metadata)


def _layout(file, name: str, path: Path) -> tuple[int, int, str, str | None]:
    """The descriptor dimension, number of keypoints, descriptor dtype and
    keypoint strength dataset (None without one) of image ``name``, checked
    against hloc's layout."""
    h5py = import_h5py()
    descriptors = file[f"{name}/{LOCAL_DATASET}"]
    keypoints = file.get(f"{name}/keypoints")
    where = f"{path}: image {name!r}"
    if not isinstance(descriptors, h5py.Dataset):
        raise VladError(f"{where} has a group named {LOCAL_DATASET!r}, not a dataset")
    if not isinstance(keypoints, h5py.Dataset):
        raise VladError(
            f"{where} has descriptors but no 'keypoints' dataset; hloc's local "
            "features hold keypoints of shape (N, 2) beside descriptors of shape "
            "(D, N)"
        )
    for dataset, what in ((descriptors, "descriptors"), (keypoints, "keypoints")):
        if dataset.dtype.kind not in "fiu":
            raise VladError(
                f"{where} has {what} of dtype {dataset.dtype}; expected real numbers"
            )
    if keypoints.ndim != 2 or keypoints.shape[1] != 2:
        raise VladError(
            f"{where} has keypoints of shape {keypoints.shape}; expected (N, 2), "
            "one x, y row per keypoint"
        )
    length = keypoints.shape[0]
    if descriptors.ndim != 2 or descriptors.shape[1] != length:
        transposed = descriptors.ndim == 2 and descriptors.shape[0] == length
        raise VladError(
            f"{where} has descriptors of shape {descriptors.shape} for {length} "
            f"keypoints; expected (D, {length}), one column per keypoint"
            + (" (hloc stores them transposed)" if transposed else "")
        )
    group = file[name]
    strength = _strength_dataset(group)
    if strength is not None:
        values = group[strength]
        if not isinstance(values, h5py.Dataset):
            raise VladError(
                f"{where} has a group named {strength!r}, not a dataset of one "
                "value per keypoint"
            )
        if values.dtype.kind not in "fiu":
            raise VladError(
                f"{where} has {strength} of dtype {values.dtype}; expected real numbers"
            )
        if values.shape != (length,):
            raise VladError(
                f"{where} has {strength} of shape {values.shape} for {length} "
                f"keypoints; expected ({length},), one per keypoint"
            )
    return int(descriptors.shape[0]), int(length), str(descriptors.dtype), strength


def _strength_dataset(group) -> str | None:
    """The first of :data:`STRENGTH_DATASETS` that ``group`` (an image's)
    holds, or None."""
    return next((name for name in STRENGTH_DATASETS if name in group), None)
