"""``vlad fit``."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import vlad
from vlad.cli import _reporting as reporting

from .conftest import run


# Describes the photos at full size twice; tests/test_batch.py's fit of
# descriptors against their images is the default run's.
@pytest.mark.slow
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


def test_fit_logs_its_iterations_and_q_silences_them(tmp_path, photo_sets, monkeypatch):
    """Off a terminal, a line every PROGRESS_LOG_SECONDS (every iteration
    here); -q shows none; the codebook is the same either way."""
    monkeypatch.setattr(reporting, "PROGRESS_LOG_SECONDS", 0)
    photo_sets.save(tmp_path / "d.npz")
    fit = ["fit", tmp_path / "d.npz", "--n-clusters", 8, "--backend", "sklearn"]
    shown = run(*fit, "--max-iter", 6, "-o", tmp_path / "shown.npz")
    lines = [line for line in shown.stderr.splitlines() if line.startswith("k-means")]
    assert lines[0].startswith("k-means: 1/6 after ") and " left" in lines[0]
    assert [int(line.split()[1].split("/")[0]) for line in lines] == list(
        range(1, len(lines) + 1)
    )
    quiet = run(*fit, "--max-iter", 6, "-o", tmp_path / "quiet.npz", "-q")
    assert quiet.stderr == ""
    np.testing.assert_array_equal(
        vlad.Codebook.load(tmp_path / "shown.npz").centers,
        vlad.Codebook.load(tmp_path / "quiet.npz").centers,
    )


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
def test_fit_on_a_terminal_draws_a_bar_of_iterations(tmp_path, photo_sets):
    """``vlad fit`` run with its stderr on a real pseudo-terminal."""
    import pty

    photo_sets.save(tmp_path / "d.npz")
    command = [sys.executable, "-m", "vlad", "fit", tmp_path / "d.npz"]
    command += ["--n-clusters", 8, "--backend", "sklearn", "--max-iter", 7]
    for quiet in ([], ["-q"]):
        primary, secondary = pty.openpty()
        process = subprocess.Popen(
            [str(part) for part in [*command, "-o", tmp_path / f"c{len(quiet)}.npz"]]
            + quiet,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=secondary,
        )
        os.close(secondary)
        shown = b""
        while True:
            try:
                chunk = os.read(primary, 4096)
            except OSError:  # the terminal closed with the process
                break
            if not chunk:
                break
            shown += chunk
        os.close(primary)
        assert process.wait(timeout=60) == 0
        text = shown.decode()
        if quiet:
            assert "k-means" not in text and "wrote" not in text
        else:
            assert "k-means" in text and "0/7" in text and "7/7" in text
    np.testing.assert_array_equal(
        vlad.Codebook.load(tmp_path / "c0.npz").centers,
        vlad.Codebook.load(tmp_path / "c1.npz").centers,
    )
