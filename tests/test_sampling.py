"""Reservoir sampling of descriptors, and codebooks fitted on images as a
stream: against keeping every descriptor, and against exact probabilities."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from photos import DATA, FAST_OPTIONS

import vlad
from vlad.core._sampling import DescriptorReservoir


def stream(lengths):
    """Blocks of consecutive row numbers, one column."""
    start = 0
    for length in lengths:
        yield np.arange(start, start + length, dtype=np.float32)[:, None]
        start += length


@settings(max_examples=50, deadline=None)
@given(
    st.lists(st.integers(0, 20), max_size=12),
    st.integers(1, 30),
    st.one_of(st.none(), st.integers(1, 5)),
    st.integers(0, 3),
)
def test_the_sample_is_rows_of_the_stream_and_never_grows(
    lengths, capacity, per_image, seed
):
    reservoir = DescriptorReservoir(capacity, 1, per_image=per_image, seed=seed)
    for block in stream(lengths):
        reservoir.add(block)
    offered = sum(min(n, per_image or n) for n in lengths)
    rows = reservoir.sample[:, 0].astype(int)
    assert reservoir.n_seen == offered and len(rows) == min(offered, capacity)
    assert len(set(rows)) == len(rows) and all(0 <= row < sum(lengths) for row in rows)
    if per_image is None and offered <= capacity:  # everything, in order
        assert rows.tolist() == list(range(offered))
    again = DescriptorReservoir(capacity, 1, per_image=per_image, seed=seed)
    for block in stream(lengths):
        again.add(block)
    assert np.array_equal(again.sample, reservoir.sample)


def test_every_descriptor_is_kept_with_the_same_probability():
    # 40 descriptors in blocks of 8, 10 kept: each kept with probability 1/4.
    counts = np.zeros(40)
    n_runs = 4000
    for seed in range(n_runs):
        reservoir = DescriptorReservoir(10, 1, seed=seed)
        for block in stream([8] * 5):
            reservoir.add(block)
        counts[reservoir.sample[:, 0].astype(int)] += 1
    # Binomial(4000, 1/4): standard deviation 27; 5 deviations either side.
    assert np.all(np.abs(counts - n_runs / 4) < 5 * 27.4), counts


def test_per_image_caps_each_image():
    reservoir = DescriptorReservoir(100, 1, per_image=3, seed=0)
    for block in stream([10, 2, 10]):
        reservoir.add(block)
    rows = reservoir.sample[:, 0].astype(int)
    assert len(rows) == 8
    assert sum(row < 10 for row in rows) == 3 and sum(row >= 12 for row in rows) == 3


@pytest.mark.parametrize("bad", [0, -1, 2.5, True])
def test_bad_capacities_are_refused(bad):
    with pytest.raises((ValueError, TypeError), match="capacity"):
        DescriptorReservoir(bad, 1)


# Fits twice; test_a_sampled_stream_is_reproducible_and_bounded is the default run's.
@pytest.mark.slow
def test_a_stream_within_the_sample_fits_as_all_descriptors(photo_sets):
    streamed, _ = vlad.fit_codebook_to_images(
        DATA, 8, descriptor_options=FAST_OPTIONS, n_jobs=2
    )
    whole = vlad.fit_codebook(photo_sets, 8)
    assert streamed.fingerprint == whole.fingerprint


def test_a_sampled_stream_is_reproducible_and_bounded(photo_sets):
    def fitted(seed, per_image):
        codebook, _ = vlad.fit_codebook_to_images(
            DATA,
            8,
            sample=300,
            per_image=per_image,
            seed=seed,
            descriptor_options=FAST_OPTIONS,
            n_jobs=2,
        )
        return codebook

    first = fitted(0, 50)
    assert first.metadata["n_training_descriptors"] == 300
    assert fitted(0, 50).fingerprint == first.fingerprint
    assert fitted(1, 50).fingerprint != first.fingerprint
    assert fitted(0, None).fingerprint != first.fingerprint
    assert first.metadata["descriptor"] == photo_sets.metadata


def test_a_descriptors_file_is_sampled_as_its_images_are(photo_sets, tmp_path):
    photo_sets.save(tmp_path / "d.npz")
    options = {"sample": 300, "per_image": 50, "seed": 0}
    from_file, _ = vlad.fit_codebook_to_images(tmp_path / "d.npz", 8, **options)
    from_images, _ = vlad.fit_codebook_to_images(
        DATA, 8, descriptor_options=FAST_OPTIONS, n_jobs=2, **options
    )
    assert from_file.fingerprint == from_images.fingerprint
