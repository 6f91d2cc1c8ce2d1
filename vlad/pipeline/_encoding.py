"""What a run of VLAD vectors gives: the vectors, what became of the images,
and the record of how they were made.

Descriptors are encoded a chunk of :data:`ENCODE_CHUNK_IMAGES` images at a
time, so memory holds the vectors but never every image's descriptors (see
:func:`vlad.encode_images`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import numpy as np

from vlad._version import __version__
from vlad.core._codebook import Codebook
from vlad.core._options import EncodingOptions
from vlad.pipeline._batch import (
    BatchReport,
    PathOrPaths,
    path_list,
)

__all__ = ["ENCODE_CHUNK_IMAGES", "EncodedImages", "vectors_record"]

#: Images whose descriptors :func:`encode_images` holds in memory at once (at the
#: default 2000 keypoints, up to 1 MB each).
ENCODE_CHUNK_IMAGES = 64


@dataclasses.dataclass
class EncodedImages:
    """VLAD vectors of a batch of images and how they were made.

    Attributes
    ----------
    vectors : ndarray or ShardedVectors of shape (n_images, n_clusters * n_features)
        One row per name of ``report.names``: in memory, or, for a run into
        a folder of shards, the folder opened (its shards memory-mapped).
    report : BatchReport
    codebook : Codebook
    inputs : list of str
        The folders and files encoded.
    descriptor : dict
        How the descriptors were made (``DescriptorSets.metadata``).
    encoding : EncodingOptions
        How the vectors were encoded.
    """

    vectors: np.ndarray
    report: BatchReport
    codebook: Codebook
    inputs: list[str]
    descriptor: dict
    encoding: EncodingOptions

    @property
    def names(self) -> list[str]:
        """Image name of each row of ``vectors``."""
        return self.report.names

    def record(self) -> dict:
        """JSON-serialisable description, as written to ``vectors.json``."""
        return {
            **vectors_record(
                len(self.vectors),
                self.inputs,
                self.codebook,
                self.descriptor,
                self.encoding,
            ),
            **self.report.record(),
        }


def vectors_record(
    n_rows: int,
    inputs: PathOrPaths,
    codebook: Codebook,
    descriptor: Mapping | None,
    encoding: EncodingOptions,
) -> dict:
    """What a file or folder of VLAD vectors records of how they were made
    (format, shape, inputs, codebook, options), less the batch's report."""
    return {
        "format": "vlad vectors",
        "format_version": 1,
        "vlad_version": __version__,
        "shape": [n_rows, codebook.n_clusters * codebook.n_features],
        "inputs": [str(path) for path in path_list(inputs)],
        "codebook": {
            "fingerprint": codebook.fingerprint,
            "n_clusters": codebook.n_clusters,
            "n_features": codebook.n_features,
        },
        "descriptor": descriptor,
        "encoding": encoding.record(),
    }
