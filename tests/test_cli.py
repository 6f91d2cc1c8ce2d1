"""The ``vlad`` command line: vlad.cli, run with click's CliRunner and as the
installed script."""

from __future__ import annotations

import json
import os
import pty
import shutil
import subprocess
import sys
from pathlib import Path

import cv2
import numpy as np
import pytest
from click.testing import CliRunner
from photos import (
    DATA,
    FAST_OPTIONS,
    MESSY_NAMES,
    MESSY_SKIPPED,
    PHOTOS,
    fit_fast_codebook,
    make_messy_folder,
)

import vlad
from vlad.cli.main import main
from vlad.formats.vectors import load_vectors

FAST = ["--max-side", str(FAST_OPTIONS["max_side"])]


def run(*args, exit_code=0):
    """Invoke ``vlad ARGS`` in-process; check its exit code; return the result."""
    result = CliRunner().invoke(main, [str(arg) for arg in args])
    assert result.exit_code == exit_code, (result.output, result.exception)
    assert "Traceback" not in result.output
    return result


@pytest.fixture(scope="module")
def codebook_path(tmp_path_factory):
    """A codebook of the bundled photos at FAST_OPTIONS."""
    return fit_fast_codebook(tmp_path_factory.mktemp("fast") / "codebook.npz")


@pytest.fixture(scope="module")
def photo_sets():
    """The bundled photos' descriptors, made as the fast codebook's were."""
    sets, _ = vlad.extract_images(DATA, FAST_OPTIONS, n_jobs=2)
    return sets


@pytest.fixture(scope="module")
def main_job(tmp_path_factory):
    """The Quick start's main job, at default options: fit, then encode, data/."""
    folder = tmp_path_factory.mktemp("main-job")
    fitted = run("fit", DATA, "-k", 16, "-o", folder / "codebook.npz")
    encoded = run(
        "encode", DATA, "--codebook", folder / "codebook.npz", "-o", folder / "v.npy"
    )
    return folder, fitted, encoded


@pytest.mark.parametrize("command", [[], ["extract"], ["fit"], ["encode"], ["info"]])
def test_every_command_has_help(command):
    result = run(*command, "--help")
    assert result.output.startswith("Usage: ")
    if command:
        assert "Example:" in result.output


def test_version():
    assert run("--version").output.strip() == f"vlad, version {vlad.__version__}"


def test_the_main_job_writes_vectors_names_and_a_report(main_job):
    folder, fitted, encoded = main_job
    vectors, names, record = load_vectors(folder / "v.npy")
    assert vectors.shape == (len(PHOTOS), 16 * 128) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)
    assert names == PHOTOS
    codebook = vlad.Codebook.load(folder / "codebook.npz")
    assert record["codebook"]["fingerprint"] == codebook.fingerprint
    assert record["descriptor"] == vlad.images.sift.SiftOptions().record()
    assert record["encoding"] == {
        "aggregator": "auto",
        "power": 1.0,
        "intra": True,
        "l2": True,
        "mass": False,
    }
    assert (record["n_found"], record["n_skipped"], record["n_empty"]) == (8, 0, 0)
    assert "wrote a codebook of 16 centres" in fitted.stderr
    assert "wrote the VLAD vectors of 8 images (8 x 2048 float32, codebook " in (
        encoded.stderr
    )
    assert encoded.stdout == ""


def transformed_copies(folder: Path) -> dict[str, str]:
    """Write a cropped, a rotated and a recompressed copy of each photo; return
    each copy's name and its original's."""
    folder.mkdir()
    originals = {}
    for name in PHOTOS:
        image = cv2.imread(str(DATA / name))
        height, width = image.shape[:2]
        stem = Path(name).stem
        crop = image[height // 10 : -height // 10, width // 8 : -width // 8]
        rotation = cv2.getRotationMatrix2D((width / 2, height / 2), 20, 1.0)
        rotated = cv2.warpAffine(
            image, rotation, (width, height), borderMode=cv2.BORDER_REFLECT
        )
        cv2.imwrite(str(folder / f"{stem}-crop.png"), crop)
        cv2.imwrite(str(folder / f"{stem}-rotated.png"), rotated)
        cv2.imwrite(
            str(folder / f"{stem}-q30.jpg"), image, [cv2.IMWRITE_JPEG_QUALITY, 30]
        )
        for suffix in ("crop.png", "rotated.png", "q30.jpg"):
            originals[f"{folder.name}/{stem}-{suffix}"] = f"{DATA.name}/{name}"
    return originals


def test_transformed_copies_are_closest_to_their_originals(
    main_job, tmp_path, monkeypatch
):
    folder, _, _ = main_job
    originals = transformed_copies(tmp_path / "copies")
    monkeypatch.chdir(tmp_path)
    shutil.copytree(DATA, tmp_path / DATA.name)
    run(
        "encode",
        DATA.name,
        "copies",
        "--codebook",
        folder / "codebook.npz",
        "-o",
        "both.npy",
    )
    vectors, names, _ = load_vectors(tmp_path / "both.npy")
    rows = {name: row for name, row in zip(names, vectors, strict=True)}
    photo_rows = np.array([rows[f"{DATA.name}/{name}"] for name in PHOTOS])
    assert len(originals) == 3 * len(PHOTOS)
    for copy, original in originals.items():
        similarities = photo_rows @ rows[copy]
        nearest = PHOTOS[int(np.argmax(similarities))]
        assert f"{DATA.name}/{nearest}" == original, (copy, similarities)


def test_encode_equals_the_library_encode_on_the_same_descriptors(
    tmp_path, codebook_path, photo_sets
):
    run("encode", DATA, "-c", codebook_path, "-o", tmp_path / "v.npy")
    vectors, names, _ = load_vectors(tmp_path / "v.npy")
    expected = vlad.encode(photo_sets, vlad.Codebook.load(codebook_path))
    np.testing.assert_array_equal(vectors, expected)
    assert names == photo_sets.names


@pytest.mark.parametrize("aggregator", sorted(vlad.AGGREGATORS))
def test_every_aggregator_gives_the_library_vectors(
    tmp_path, codebook_path, photo_sets, aggregator
):
    args = ["encode", DATA, "-c", codebook_path, "-o", tmp_path / "v.npy"]
    args += ["--aggregator", aggregator, "--power", 0.5, "--mass", "--no-intra"]
    if aggregator not in vlad.available_aggregators():
        result = run(*args, exit_code=1)
        assert "requires" in result.stderr
        return
    run(*args)
    vectors, _, record = load_vectors(tmp_path / "v.npy")
    expected = vlad.encode(
        photo_sets,
        vlad.Codebook.load(codebook_path),
        aggregator="loop",
        power=0.5,
        mass=True,
        intra=False,
    )
    np.testing.assert_allclose(vectors, expected, rtol=1e-5, atol=1e-5)
    assert record["encoding"]["aggregator"] == aggregator


def test_descriptors_from_extract_encode_like_the_images(tmp_path, codebook_path):
    run("extract", DATA, *FAST, "-o", tmp_path / "d.npz")
    run("encode", tmp_path / "d.npz", "-c", codebook_path, "-o", tmp_path / "a.npy")
    run("encode", DATA, "-c", codebook_path, "-o", tmp_path / "b.npy")
    from_descriptors, names_a, _ = load_vectors(tmp_path / "a.npy")
    from_images, names_b, _ = load_vectors(tmp_path / "b.npy")
    np.testing.assert_array_equal(from_descriptors, from_images)
    assert names_a == names_b == PHOTOS


def test_extract_writes_what_the_library_extracts(tmp_path, photo_sets):
    result = run("extract", DATA, *FAST, "-j", 2, "-o", tmp_path / "d.npz")
    sets = vlad.DescriptorSets.load(tmp_path / "d.npz")
    np.testing.assert_array_equal(sets.descriptors, photo_sets.descriptors)
    np.testing.assert_array_equal(sets.offsets, photo_sets.offsets)
    assert sets.names == PHOTOS
    assert sets.metadata == photo_sets.metadata
    assert "(RootSIFT at detected keypoints)" in result.stderr


def test_fit_on_descriptor_files_gives_the_codebook_of_the_images(
    tmp_path, codebook_path, photo_sets
):
    photo_sets.save(tmp_path / "d.npz")
    np.save(tmp_path / "d.npy", photo_sets.descriptors)
    run("fit", tmp_path / "d.npz", "-k", 16, "-o", tmp_path / "from-npz.npz")
    run("fit", tmp_path / "d.npy", "-k", 16, "-o", tmp_path / "from-npy.npz")
    expected = vlad.Codebook.load(codebook_path)
    from_npz = vlad.Codebook.load(tmp_path / "from-npz.npz")
    from_npy = vlad.Codebook.load(tmp_path / "from-npy.npz")
    assert from_npz.fingerprint == from_npy.fingerprint == expected.fingerprint
    assert from_npz.metadata["descriptor"] == expected.metadata["descriptor"]


def test_a_messy_folder_is_encoded_and_reported(tmp_path, codebook_path):
    folder = make_messy_folder(tmp_path / "messy")
    result = run("encode", folder, "-c", codebook_path, "-o", tmp_path / "v.npy")
    for name, reason in MESSY_SKIPPED.items():
        assert f"warning: skipped {name}: " in result.stderr
        assert reason in result.stderr
    assert "warning: no keypoints in blank.png" in result.stderr
    vectors, names, record = load_vectors(tmp_path / "v.npy")
    assert names == MESSY_NAMES
    assert np.isfinite(vectors).all()
    assert not vectors[0].any() and vectors[1:].any(axis=1).all()
    assert {item["name"] for item in record["skipped"]} == set(MESSY_SKIPPED)
    assert record["empty"] == ["blank.png"]
    assert (record["n_found"], record["n_skipped"], record["n_empty"]) == (6, 3, 1)


def test_quiet_hides_the_summary_then_the_warnings(tmp_path, codebook_path):
    folder = make_messy_folder(tmp_path / "messy")
    args = ["encode", folder, "-c", codebook_path, "--overwrite"]
    assert "wrote" in run(*args, "-o", tmp_path / "v.npy").stderr
    quiet = run(*args, "-q", "-o", tmp_path / "v.npy").stderr
    assert "wrote" not in quiet and "warning: skipped corrupt.jpg" in quiet
    assert run(*args, "-qq", "-o", tmp_path / "v.npy").stderr == ""
    verbose = run(*args, "-v", "-o", tmp_path / "v.npy").stderr
    assert "chelsea.jpg: " in verbose and " descriptors" in verbose


def test_the_vectors_do_not_depend_on_jobs(tmp_path, codebook_path):
    for jobs in (1, 2):
        run(
            "encode",
            DATA,
            "-c",
            codebook_path,
            "-j",
            jobs,
            "-o",
            tmp_path / f"{jobs}.npy",
        )
    one, _, _ = load_vectors(tmp_path / "1.npy")
    two, _, _ = load_vectors(tmp_path / "2.npy")
    np.testing.assert_array_equal(one, two)


@pytest.mark.parametrize(
    ("command", "outputs"),
    [
        (["extract", DATA / "rocket.jpg", "-o", "out.npz"], ["out.npz"]),
        (["fit", DATA / "rocket.jpg", "-k", 2, "-o", "out.npz"], ["out.npz"]),
        (["encode", DATA / "rocket.jpg", "-o", "out.npy"], ["out.npy"]),
        (["encode", DATA / "rocket.jpg", "-o", "out.npy"], ["out.names.txt"]),
        (["encode", DATA / "rocket.jpg", "-o", "out.npy"], ["out.json"]),
    ],
)
def test_outputs_are_never_replaced_without_overwrite(
    tmp_path, monkeypatch, codebook_path, command, outputs
):
    monkeypatch.chdir(tmp_path)
    if command[0] == "encode":
        command = [*command, "-c", codebook_path]
    for output in outputs:
        Path(output).write_text("precious")
    result = run(*command, exit_code=1)
    assert (
        result.stderr
        == f"Error: {outputs[0]} already exists; pass --overwrite to replace it\n"
    )
    assert all(Path(output).read_text() == "precious" for output in outputs)
    run(*command, "--overwrite")
    assert all(
        Path(output).read_text(errors="replace") != "precious" for output in outputs
    )
    assert not list(tmp_path.glob(".*.tmp"))


def test_a_failed_run_writes_nothing(tmp_path, codebook_path):
    (tmp_path / "images").mkdir()
    (tmp_path / "images" / "broken.jpg").write_bytes(b"\xff\xd8\xff")
    run(
        "encode",
        tmp_path / "images",
        "-c",
        codebook_path,
        "-o",
        tmp_path / "v.npy",
        exit_code=1,
    )
    assert sorted(path.name for path in tmp_path.iterdir()) == ["images"]


ERRORS = {
    "missing input": (
        ["encode", "missing", "-c", "{codebook}", "-o", "v.npy"],
        2,
        "does not exist",
    ),
    "empty folder": (
        ["encode", "{empty}", "-c", "{codebook}", "-o", "v.npy"],
        1,
        "no images in",
    ),
    "nothing readable": (
        ["encode", "{unreadable}", "-c", "{codebook}", "-o", "v.npy"],
        1,
        "none of the 1 images",
    ),
    "codebook of another F": (
        ["encode", "{data}", "-c", "{codebook64}", "-o", "v.npy"],
        1,
        "128 features but the codebook's centers have 64",
    ),
    "codebook that is not one": (
        ["encode", "{data}", "-c", "{text}", "-o", "v.npy"],
        1,
        "is not a readable vlad codebook file",
    ),
    "descriptors given as codebook": (
        ["encode", "{data}", "-c", "{descriptors}", "-o", "v.npy"],
        1,
        "is not a vlad codebook file",
    ),
    "unknown aggregator": (
        ["encode", "{data}", "-c", "{codebook}", "-o", "v.npy", "--aggregator", "nope"],
        2,
        "Invalid value for '--aggregator'",
    ),
    "another kind of descriptors": (
        ["encode", "{data}", "-c", "{codebook}", "-o", "v.npy", "--no-root-sift"],
        1,
        "fitted on RootSIFT at detected keypoints but these descriptors are SIFT",
    ),
    "options for descriptors": (
        ["encode", "{descriptors}", "-c", "{codebook}", "-o", "v.npy", "--dense"],
        1,
        "apply to images",
    ),
    "output of another kind": (
        ["encode", "{data}", "-c", "{codebook}", "-o", "v.json"],
        2,
        "must end in .npy",
    ),
    "output folder missing": (
        ["encode", "{data}", "-c", "{codebook}", "-o", "no/v.npy"],
        1,
        "the folder of no/v.npy does not exist",
    ),
    "zero jobs": (
        ["encode", "{data}", "-c", "{codebook}", "-o", "v.npy", "-j", "0"],
        2,
        "n_jobs must be",
    ),
    "power out of range": (
        ["encode", "{data}", "-c", "{codebook}", "-o", "v.npy", "--power", "0"],
        2,
        "'--power'",
    ),
    "too many centres": (
        ["fit", "{rocket}", "-k", "100000", "-o", "c.npz"],
        1,
        "cannot fit 100000 centres",
    ),
    "info on a photo": (["info", "{rocket}"], 1, "is not a vlad file"),
}


@pytest.fixture
def error_files(tmp_path, monkeypatch, codebook_path, photo_sets):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "empty").mkdir()
    (tmp_path / "unreadable").mkdir()
    (tmp_path / "unreadable" / "a.png").write_bytes(b"")
    (tmp_path / "text.npz").write_text("not a codebook")
    vlad.fit_codebook(vlad.datasets.make_descriptor_sets(4, 50, 64), 4).save(
        tmp_path / "codebook64.npz"
    )
    photo_sets.save(tmp_path / "descriptors.npz")
    return {
        "codebook": codebook_path,
        "codebook64": "codebook64.npz",
        "data": DATA,
        "descriptors": "descriptors.npz",
        "empty": "empty",
        "rocket": DATA / "rocket.jpg",
        "text": "text.npz",
        "unreadable": "unreadable",
    }


@pytest.mark.parametrize("case", ERRORS)
def test_errors_are_one_line_with_a_non_zero_exit(error_files, case):
    args, exit_code, message = ERRORS[case]
    result = run(*(arg.format(**error_files) for arg in args), exit_code=exit_code)
    lines = result.stderr.strip().splitlines()
    assert lines[-1].startswith("Error: ")
    assert message in " ".join(result.stderr.split())
    if exit_code == 1:
        # The error is one line; only the warnings of skipped files precede it.
        assert all(line.startswith("warning: ") for line in lines[:-1]), lines
        assert message in lines[-1]


def test_jax_requested_but_not_installed(monkeypatch, tmp_path, codebook_path):
    monkeypatch.setitem(sys.modules, "jax", None)
    args = ["encode", DATA, "-c", codebook_path, "-o", tmp_path / "v.npy"]
    result = run(*args, "--aggregator", "jax", exit_code=1)
    assert result.stderr == (
        "Error: the 'jax' aggregator requires JAX; install it with: "
        "pip install 'vlad[jax]'\n"
    )
    assert not (tmp_path / "v.npy").exists()


def test_info_describes_each_kind_of_file(main_job, tmp_path, photo_sets):
    folder, _, _ = main_job
    photo_sets.save(tmp_path / "d.npz")
    codebook = run("info", folder / "codebook.npz").stdout
    assert "kind: codebook\n" in codebook and "n_clusters: 16\n" in codebook
    descriptors = run("info", tmp_path / "d.npz").stdout
    assert "kind: descriptor sets\n" in descriptors and "n_images: 8\n" in descriptors
    vectors = run("info", folder / "v.npy").stdout
    assert "kind: vectors\n" in vectors and "n_dimensions: 2048\n" in vectors
    assert "  fingerprint: " in vectors and "skipped: none\n" in vectors
    summary = json.loads(run("info", "--json", folder / "v.npy").stdout)
    assert summary["n_images"] == 8 and summary["all_finite"] is True


def test_the_installed_script_draws_a_progress_bar_on_a_terminal(
    tmp_path, codebook_path
):
    script = Path(sys.executable).with_name("vlad")
    assert script.is_file(), "install the project: pip install -e ."
    terminal, terminal_side = pty.openpty()
    args = [script, "encode", DATA, "-c", codebook_path, "-o", tmp_path / "v.npy"]
    completed = subprocess.run(
        args, stdout=subprocess.PIPE, stderr=terminal_side, timeout=60
    )
    os.close(terminal_side)
    shown = b""
    while True:
        try:
            chunk = os.read(terminal, 4096)
        except OSError:
            break
        if not chunk:
            break
        shown += chunk
    os.close(terminal)
    assert completed.returncode == 0
    assert completed.stdout == b""
    assert b"Encoding" in shown and b"8/8" in shown
    assert b"wrote the VLAD vectors of 8 images" in shown
    assert load_vectors(tmp_path / "v.npy")[0].shape == (8, 16 * 128)


def test_python_dash_m_vlad_is_the_same_command():
    completed = subprocess.run(
        [sys.executable, "-m", "vlad", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert completed.returncode == 0
    assert completed.stdout.strip() == f"vlad, version {vlad.__version__}"
