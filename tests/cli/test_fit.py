"""``vlad fit``."""

from __future__ import annotations

import numpy as np

import vlad

from .conftest import run


def test_fit_on_descriptor_files_gives_the_codebook_of_the_images(
    tmp_path, codebook_path, photo_sets
):
    photo_sets.save(tmp_path / "d.npz")
    np.save(tmp_path / "d.npy", photo_sets.descriptors)
    run("fit", tmp_path / "d.npz", "--n-clusters", 16, "-o", tmp_path / "from-npz.npz")
    run("fit", tmp_path / "d.npy", "--n-clusters", 16, "-o", tmp_path / "from-npy.npz")
    expected = vlad.Codebook.load(codebook_path)
    from_npz = vlad.Codebook.load(tmp_path / "from-npz.npz")
    from_npy = vlad.Codebook.load(tmp_path / "from-npy.npz")
    assert from_npz.fingerprint == from_npy.fingerprint == expected.fingerprint
    assert from_npz.metadata["descriptor"] == expected.metadata["descriptor"]


def test_kmeans_options_reach_fit_codebook(tmp_path, photo_sets):
    """``--backend/--algorithm/--max-iter/--spherical`` give the codebook of
    the same fit_codebook call; a cosine codebook encodes unit descriptors."""
    photo_sets.save(tmp_path / "d.npz")
    for backend, extra in [("sklearn", ["--algorithm", "lloyd"]), ("auto", [])]:
        output = tmp_path / f"{backend}.npz"
        run(
            "fit",
            tmp_path / "d.npz",
            "--n-clusters",
            8,
            "-o",
            output,
            "--backend",
            backend,
            "--max-iter",
            5,
            "--spherical",
            "-j",
            1,
            *extra,
        )
        codebook = vlad.Codebook.load(output)
        expected = vlad.fit_codebook(
            photo_sets, 8, backend=backend, max_iter=5, spherical=True, n_jobs=1
        )
        np.testing.assert_array_equal(codebook.centers, expected.centers)
        assert codebook.metric == "cosine"
        assert codebook.metadata["backend"] == expected.metadata["backend"]
        assert codebook.metadata["max_iter"] == 5


def test_kmeans_option_conflicts_are_one_line(tmp_path, photo_sets):
    photo_sets.save(tmp_path / "d.npz")
    result = run(
        "fit",
        tmp_path / "d.npz",
        "--n-clusters",
        8,
        "-o",
        tmp_path / "c.npz",
        "--spherical",
        "--algorithm",
        "minibatch",
        exit_code=1,
    )
    assert "no spherical form" in result.output
