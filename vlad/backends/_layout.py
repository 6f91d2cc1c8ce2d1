"""How the device back-ends cut a ragged batch: row chunks and summation blocks.

Two independent cuts, both planned on the host from the offsets alone (no
pass over the descriptors):

- **Chunks** (:func:`row_chunks`): the rows are sent to the device and
  processed a fixed number of rows at a time, so that one compiled kernel
  serves every batch size and a transfer overlaps the previous chunk's work.
  The last chunk ends at the last row and overlaps the one before it; its
  rows already seen are masked. Only a batch smaller than one chunk is
  padded, on the host, and that copy is smaller than a chunk.
- **Summation blocks** (:func:`summation_blocks`): each image's rows are cut
  into blocks of at most ``BLOCK_ROWS`` rows; residuals are summed per block
  and centre in float32, then the blocks of an image are summed. No float32
  sum runs over more than ``BLOCK_ROWS`` terms, so an image of a million
  descriptors keeps the accuracy of one of a few thousand.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "BLOCK_ROWS",
    "CHUNK_BYTES",
    "MIN_CHUNK_ROWS",
    "bucket_size",
    "chunk_rows_for",
    "row_chunks",
    "summation_blocks",
]

#: Largest number of rows summed in float32 before the partial sums are added.
BLOCK_ROWS = 4096
#: Size of one chunk of descriptors: small enough that the host reuses the
#: staging memory of the previous chunk (larger copies pay fresh pages).
CHUNK_BYTES = 8 << 20
#: Fewest rows in a chunk: smaller batches are padded to this.
MIN_CHUNK_ROWS = 256


def bucket_size(n: int, minimum: int = 1) -> int:
    """Smallest power of two >= ``max(n, minimum)``."""
    return 1 << (max(int(n), int(minimum)) - 1).bit_length()


def chunk_rows_for(n_rows: int, row_bytes: int) -> int:
    """Rows per chunk: a power of two, about ``CHUNK_BYTES``, and no more than
    ``n_rows`` needs (rounded up to a power of two).

    Examples
    --------
    >>> from vlad.backends._layout import chunk_rows_for
    >>> chunk_rows_for(1_000_000, 128 * 4), chunk_rows_for(500, 128 * 4)
    (16384, 512)
    """
    largest = max(
        MIN_CHUNK_ROWS, 1 << max(0, (CHUNK_BYTES // row_bytes).bit_length() - 1)
    )
    return min(largest, bucket_size(n_rows, MIN_CHUNK_ROWS))


def row_chunks(n_rows: int, chunk_rows: int) -> list[tuple[int, int]]:
    """``(start, first_new)`` of each chunk of ``chunk_rows`` rows.

    A chunk holds rows ``start:start + chunk_rows``; its rows before
    ``start + first_new`` belong to the previous chunk and must be masked.
    Every chunk but the last starts where the previous one stopped; the last
    ends at ``n_rows`` (when ``n_rows >= chunk_rows``). With fewer rows than
    one chunk there is one chunk at 0, whose rows past ``n_rows`` are padding.

    Examples
    --------
    >>> from vlad.backends._layout import row_chunks
    >>> row_chunks(10, 4)
    [(0, 0), (4, 0), (6, 2)]
    >>> row_chunks(3, 4)
    [(0, 0)]
    """
    if n_rows <= chunk_rows:
        return [(0, 0)]
    chunks = [(start, 0) for start in range(0, n_rows - chunk_rows + 1, chunk_rows)]
    covered = chunks[-1][0] + chunk_rows
    if covered < n_rows:
        start = n_rows - chunk_rows
        chunks.append((start, covered - start))
    return chunks


def summation_blocks(
    offsets: np.ndarray, block_rows: int = BLOCK_ROWS
) -> tuple[np.ndarray, np.ndarray]:
    """Cut each image's rows into blocks of at most ``block_rows`` rows.

    Parameters
    ----------
    offsets : ndarray of int of shape (n_images + 1,)
    block_rows : int, default=BLOCK_ROWS

    Returns
    -------
    first_block : ndarray of int64 of shape (n_images,)
        Index of each image's first block; row ``r`` of image ``t`` is in
        block ``first_block[t] + (r - offsets[t]) // block_rows``.
    block_images : ndarray of int64 of shape (n_blocks,)
        The image of each block. Every image has at least one (an image
        without rows, an empty one), so when no image has more than
        ``block_rows`` rows, block ``t`` is image ``t``.

    Examples
    --------
    >>> import numpy as np
    >>> from vlad.backends._layout import summation_blocks
    >>> first, images = summation_blocks(np.array([0, 5, 5, 7]), block_rows=2)
    >>> first.tolist(), images.tolist()
    ([0, 3, 4], [0, 0, 0, 1, 2])
    """
    lengths = np.diff(offsets)
    n_blocks = np.maximum(1, -(-lengths // block_rows))
    first_block = np.zeros(lengths.shape[0], dtype=np.int64)
    np.cumsum(n_blocks[:-1], out=first_block[1:])
    block_images = np.repeat(np.arange(lengths.shape[0], dtype=np.int64), n_blocks)
    return first_block, block_images
