"""The chunk and summation-block plans of the device back-ends, against
plain loops over rows."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from vlad.backends._layout import (
    bucket_size,
    chunk_rows_for,
    row_chunks,
    summation_blocks,
)


@given(n_rows=st.integers(0, 2000), chunk_rows=st.integers(1, 300))
def test_chunks_cover_every_row_once(n_rows, chunk_rows):
    seen = np.zeros(max(n_rows, 1), dtype=int)
    chunks = row_chunks(n_rows, chunk_rows)
    for start, first_new in chunks:
        assert start >= 0 and 0 <= first_new < chunk_rows
        rows = np.arange(start + first_new, min(start + chunk_rows, n_rows))
        seen[rows] += 1
        assert n_rows <= chunk_rows or start + chunk_rows <= n_rows
    assert np.all(seen[:n_rows] == 1)
    assert len(chunks) == max(1, -(-n_rows // chunk_rows))


@given(lengths=st.lists(st.integers(0, 40), max_size=12), block=st.integers(1, 9))
def test_blocks_hold_at_most_block_rows_of_one_image(lengths, block):
    offsets = np.concatenate([[0], np.cumsum(lengths, dtype=np.int64)])
    first_block, block_images = summation_blocks(offsets, block)
    sizes = np.zeros(block_images.size, dtype=int)
    for image, length in enumerate(lengths):
        for position in range(length):
            row_block = first_block[image] + position // block
            assert block_images[row_block] == image
            sizes[row_block] += 1
    assert np.all(sizes <= block)
    # Every image owns at least one block, and only an empty image an empty one.
    assert np.array_equal(np.unique(block_images), np.arange(len(lengths)))
    assert np.all((sizes > 0) | (np.array(lengths)[block_images] == 0))
    assert block_images.size == sum(max(1, -(-n // block)) for n in lengths)


def test_chunk_rows_are_powers_of_two_of_about_eight_mib():
    assert chunk_rows_for(10**6, 128 * 4) == 16384
    assert chunk_rows_for(10**6, 128 * 8) == 8192
    assert chunk_rows_for(3000, 128 * 4) == 4096
    assert chunk_rows_for(0, 128 * 4) == 256
    assert chunk_rows_for(10**6, 10**9) == 256
    assert [bucket_size(n) for n in (0, 1, 2, 3, 1024, 1025)] == [
        1,
        1,
        2,
        4,
        1024,
        2048,
    ]
