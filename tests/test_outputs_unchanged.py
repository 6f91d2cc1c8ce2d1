"""Every file that ``vlad`` writes on the bundled photos, as the reference has it,
on any CPU.

The commands of the main jobs (extract to a ``.npz`` and to a folder of shards;
fit one and two vocabularies; encode to a file and to a folder of shards; index
exactly, PCA-whitened and ASMK; search to text and JSON results, with spatial
re-ranking) run in-process on a copy of data/, one after the other, and each
output is compared with the reference made by the same commands:
tests/data/outputs/ holds every file, the largest gzipped. A restructuring that
changes no behaviour leaves every output as it was.

Floating-point bytes belong to the machine, not to vlad: OpenCV's decoding and
SIFT, BLAS, faiss and the compiled aggregators dispatch on the CPU's instruction
set, and another one rounds otherwise (with OpenCV's SSE-only code, SIFT finds
one keypoint more on the photos). So each command runs on the *reference's*
inputs (every output is replaced by its reference once compared), and each
output is compared by its kind:

- names, shapes, dtypes, records, codes, rankings and integers exactly, and
  bytes that no float enters (names files, shard manifests) byte for byte;
- floats of commands that read reference files (encode, index, search of
  descriptors) within the rounding of float32 arithmetic (:data:`ROUNDING`);
- outputs of k-means (a codebook's centres and fingerprint): centres within
  :data:`FITTED`, fingerprints not compared (they digest the centres' bytes);
- outputs of the photos' pixels (extract, and encode, fit or search of images):
  each descriptor matched to a reference keypoint at the same place, counts
  within :data:`KEYPOINTS`, vectors' cosine to the reference's at least
  :data:`COSINE`, scores within :data:`SCORE`, codebooks of the same quality on
  the reference descriptors.

No file is normalised: the records hold no timings, and they hold paths as they
were given, so the commands run inside their folder with relative paths. Of the
messages, stderr.log keeps the summary lines ("wrote ..."), not warnings. Shard
keys hold each input's size and modification time, which are set here with
``os.utime``.

Every command runs with ``-m slow``. The default run keeps a fast subset that
fits nothing (FAST_COMMANDS, on the reference codebook.npz): extract, encode,
index and search. CI runs this module again with another instruction set
emulated (OpenCV, NumPy, OpenBLAS, numba and faiss told to use older code).

After a deliberate change of output, write the references anew with
``PYTHONPATH=. python tests/test_outputs_unchanged.py`` and say why in the
CHANGELOG.
"""

from __future__ import annotations

import gzip
import io
import os
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from vlad.cli._main import main

HERE = Path(__file__).resolve().parent
DATA = HERE.parent / "data"
REFERENCE = HERE / "data" / "outputs"
#: Files larger than this are kept gzipped (``NAME.gz``).
LARGEST_KEPT = 16 * 1024
#: Modification times (seconds) of the copied photos and of desc.npz.
PHOTOS_MTIME = 1_600_000_000
DESCRIPTORS_MTIME = 1_700_000_000

#: float32 arithmetic done in another order: relative and absolute tolerance of
#: arrays, and the absolute tolerance of numbers printed in text (4 decimals).
ROUNDING = {"rtol": 1e-4, "atol": 1e-5, "printed": 2e-4}
#: k-means centres of the same inputs (a near-tie assigned otherwise moves one).
FITTED = 2e-3
#: Keypoints of the photos: a count may differ by this many, and a descriptor
#: matches a reference one within half a pixel and this descriptor distance.
KEYPOINTS, KEYPOINT_DISTANCE = 3, 0.05
#: Vectors of the photos: cosine to the reference's; scores' absolute difference.
COSINE, SCORE = 0.98, 0.03

#: What an output's values come from, which decides how it is compared.
PIXELS, FIT, EXACT_INPUTS = "pixels", "fit", "exact inputs"

#: The commands, in order: (arguments, file of their standard output or None,
#: whether the fast subset runs them too, what their outputs come from).
COMMANDS = [
    ("extract data -o desc.npz --max-keypoints 100", None, True, PIXELS),
    (
        "extract data -o descfolder --shard-images 3 --max-keypoints 25",
        None,
        False,
        PIXELS,
    ),
    ("fit data --n-clusters 16 -o codebook.npz", None, False, PIXELS),
    ("fit desc.npz --n-clusters 8 --vocabularies 2 -o codebook2.npz", None, False, FIT),
    ("encode data --codebook codebook.npz -o vectors.npy", None, True, PIXELS),
    (
        "encode desc.npz --codebook codebook.npz -o vectorsfolder --shard-images 3",
        None,
        True,
        EXACT_INPUTS,
    ),
    ("encode data --codebook codebook2.npz -o vectors2.npy", None, False, PIXELS),
    ("index vectors.npy -o index", None, True, EXACT_INPUTS),
    ("index vectors.npy -o index-pca --pca 6 --whiten", None, True, EXACT_INPUTS),
    (
        "index desc.npz --method asmk -c codebook.npz -o asmk-index",
        None,
        True,
        EXACT_INPUTS,
    ),
    (
        "search index data --codebook codebook.npz --top 3 -o results.txt",
        "search.stdout",
        False,
        PIXELS,
    ),
    (
        "search index data --codebook codebook.npz --top 3 -o results.json",
        None,
        False,
        PIXELS,
    ),
    (
        "search index data --codebook codebook.npz --top 5 --rerank spatial"
        " --database-descriptors desc.npz -o results-spatial.json",
        None,
        False,
        PIXELS,
    ),
    (
        "search asmk-index desc.npz --top 3 -o results-asmk.txt",
        None,
        True,
        EXACT_INPUTS,
    ),
]
#: The fast subset fits nothing: it runs on the reference codebook.npz instead.
FAST_COMMANDS = [command for command in COMMANDS if command[2]]


def output_files(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder``, by its path relative to it."""
    return {
        path.relative_to(folder).as_posix(): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def reference_files() -> dict[str, bytes]:
    """Every reference output by its name, the gzipped ones unpacked."""
    files = {}
    for name, content in output_files(REFERENCE).items():
        if name.endswith(".gz"):
            name, content = name[: -len(".gz")], gzip.decompress(content)
        files[name] = content
    return files


def run_commands(folder: Path, commands=COMMANDS, check=None) -> None:
    """Run ``commands`` inside ``folder`` on a copy of data/; the summary line
    that each writes on standard error ("wrote ...") goes to stderr.log.

    With ``check``, each command's new outputs are passed to it
    (``check(command, made, source)``, ``made`` by name) and then replaced by
    the references, so that the next command reads the reference's inputs.
    Warnings are not kept: a deprecated option's warning is no change of
    output."""
    shutil.copytree(DATA, folder / "data")
    for photo in (folder / "data").iterdir():
        os.utime(photo, (PHOTOS_MTIME, PHOTOS_MTIME))
    references = reference_files() if check else {}
    messages = []
    previous = Path.cwd()
    os.chdir(folder)
    try:
        for command, stdout, _, source in commands:
            before = output_files(Path("."))
            result = CliRunner().invoke(main, [*command.split(), "--overwrite"])
            assert result.exit_code == 0, (command, result.output, result.exception)
            lines = result.stderr.splitlines(keepends=True)
            messages += [line for line in lines if line.startswith("wrote ")]
            if stdout is not None:
                Path(stdout).write_text(result.stdout)
            if command.endswith("-o desc.npz") or " -o desc.npz " in command:
                os.utime("desc.npz", (DESCRIPTORS_MTIME, DESCRIPTORS_MTIME))
            if check is None:
                continue
            made = {
                name: content
                for name, content in output_files(Path(".")).items()
                if before.get(name) != content and not name.startswith("data/")
            }
            check(command, made, source, lines)
            for name in made:
                if name in references:
                    Path(name).write_bytes(references[name])
            if "desc.npz" in made:
                os.utime("desc.npz", (DESCRIPTORS_MTIME, DESCRIPTORS_MTIME))
    finally:
        os.chdir(previous)
    shutil.rmtree(folder / "data")
    (folder / "stderr.log").write_text("".join(messages))


def write_references() -> None:
    """Replace the references with the outputs of COMMANDS run now."""
    shutil.rmtree(REFERENCE, ignore_errors=True)
    REFERENCE.mkdir(parents=True)
    run_commands(REFERENCE)
    for name, content in output_files(REFERENCE).items():
        if len(content) > LARGEST_KEPT:
            packed = gzip.compress(content, compresslevel=9, mtime=0)
            (REFERENCE / f"{name}.gz").write_bytes(packed)
            (REFERENCE / name).unlink()


# Comparison of one output with its reference, by kind.

#: A digest of floats (a codebook's fingerprint, 16 hexadecimal digits, or the
#: SHA-256 of vectors), or a number.
TOKENS = re.compile(
    r"(\b[0-9a-f]{16}\b|sha256:[0-9a-f]{64}|-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)"
)
#: A digest, of a codebook's centres or of vectors.
DIGEST = re.compile(r"[0-9a-f]{16}|sha256:[0-9a-f]{64}")


def texts_differ(made: str, reference: str, source: str) -> str | None:
    """Where two texts differ beyond their source's tolerance, else None: the
    words between numbers exactly, integers exactly (within KEYPOINTS percent
    for the photos' counts), other numbers within ROUNDING or SCORE."""
    made_parts, reference_parts = TOKENS.split(made), TOKENS.split(reference)
    if len(made_parts) != len(reference_parts):
        return "another number of words or numbers"
    pairs = zip(made_parts, reference_parts, strict=True)
    for index, (ours, theirs) in enumerate(pairs):
        if ours == theirs:
            continue
        if index % 2 == 0:
            return f"{ours!r} where the reference has {theirs!r}"
        if DIGEST.fullmatch(theirs) and DIGEST.fullmatch(ours):
            # A codebook's fingerprint digests the bytes of its centres: one
            # fitted here is another codebook. The SHA-256 of vectors digests
            # floats, compared by value in the file that holds them.
            if source == EXACT_INPUTS and not theirs.startswith("sha256:"):
                return f"fingerprint {ours} where the reference has {theirs}"
            continue
        if not numbers_agree(ours, theirs, source):
            return f"{ours} where the reference has {theirs}"
    return None


def numbers_agree(made: str, reference: str, source: str) -> bool:
    """Whether two printed numbers agree within their source's tolerance."""
    ours, theirs = float(made), float(reference)
    integers = re.fullmatch(r"-?\d+", made) and re.fullmatch(r"-?\d+", reference)
    if source == PIXELS:
        if integers:
            return abs(ours - theirs) <= max(KEYPOINTS, 0.02 * abs(theirs))
        return abs(ours - theirs) <= SCORE
    if integers:
        return False
    tolerance = FITTED if source == FIT else ROUNDING["printed"]
    return abs(ours - theirs) <= tolerance + ROUNDING["rtol"] * abs(theirs)


def arrays(content: bytes) -> dict[str, np.ndarray]:
    """The arrays of an ``.npy`` (under "") or ``.npz`` file."""
    loaded = np.load(io.BytesIO(content), allow_pickle=False)
    if isinstance(loaded, np.ndarray):
        return {"": loaded}
    with loaded:
        return {key: loaded[key] for key in loaded.files}


def arrays_differ(name: str, made: bytes, reference: bytes, source: str) -> str | None:
    """Where two array files differ beyond their source's tolerance, else None."""
    ours, theirs = arrays(made), arrays(reference)
    if sorted(ours) != sorted(theirs):
        return f"arrays {sorted(ours)} where the reference has {sorted(theirs)}"
    if source == PIXELS and "descriptors" in theirs:
        return descriptor_sets_differ(ours, theirs)
    for key in theirs:
        made_array, reference_array = ours[key], theirs[key]
        what = f"{key or 'the array'}"
        if made_array.dtype != reference_array.dtype:
            return (
                f"{what}: dtype {made_array.dtype}, reference {reference_array.dtype}"
            )
        if made_array.dtype.kind in "US":
            text = texts_differ(str(made_array), str(reference_array), source)
            if text:
                return f"{what}: {text}"
            continue
        if source == PIXELS and made_array.ndim == 2 and key != "centers":
            # Rows of descriptors or keypoints, compared in desc.npz's check.
            rows = made_array.shape[0], reference_array.shape[0]
            if abs(rows[0] - rows[1]) > KEYPOINTS:
                return f"{what}: {rows[0]} rows, reference {rows[1]}"
            continue
        if made_array.shape != reference_array.shape:
            return (
                f"{what}: shape {made_array.shape}, reference {reference_array.shape}"
            )
        if made_array.dtype.kind != "f":
            if not np.array_equal(made_array, reference_array):
                return f"{what}: other values"
        elif source != PIXELS:
            tolerance = (
                {"rtol": 0, "atol": FITTED}
                if source == FIT
                else {"rtol": ROUNDING["rtol"], "atol": ROUNDING["atol"]}
            )
            if not np.allclose(made_array, reference_array, **tolerance):
                worst = np.max(np.abs(made_array - reference_array))
                return f"{what}: values differ by up to {worst:.3g}"
    return None


def descriptor_sets_differ(made: dict, reference: dict) -> str | None:
    """Descriptors of the photos: the same images, each image's count within
    KEYPOINTS, and nearly every keypoint found at the reference's place with
    nearly its descriptor."""
    if not np.array_equal(made["names"], reference["names"]):
        return "other images"
    counts = np.diff(made["offsets"]), np.diff(reference["offsets"])
    if np.any(np.abs(counts[0] - counts[1]) > KEYPOINTS):
        return (
            f"keypoints per image {counts[0].tolist()}, reference {counts[1].tolist()}"
        )
    for image, name in enumerate(reference["names"]):
        rows = [
            slice(*sets["offsets"][image : image + 2]) for sets in (made, reference)
        ]
        ours = made["keypoints"][rows[0], :2], made["descriptors"][rows[0]]
        theirs = reference["keypoints"][rows[1], :2], reference["descriptors"][rows[1]]
        places = np.linalg.norm(ours[0][:, None] - theirs[0][None], axis=2)
        # One place may hold several keypoints (one per orientation).
        alike = np.linalg.norm(ours[1][:, None] - theirs[1][None], axis=2)
        alike[places > 0.5] = np.inf
        matched = alike.min(axis=1) <= KEYPOINT_DISTANCE
        if np.count_nonzero(~matched) > KEYPOINTS:
            return (
                f"{name}: {np.count_nonzero(~matched)} keypoints not in the reference"
            )
    metadata = [str(sets["metadata"]) for sets in (made, reference)]
    return texts_differ(*metadata, PIXELS)


def vectors_differ(made: bytes, reference: bytes) -> str | None:
    """Vectors of the photos: each at least COSINE from the reference's."""
    ours, theirs = arrays(made)[""], arrays(reference)[""]
    if ours.shape != theirs.shape or ours.dtype != theirs.dtype:
        made, reference = (f"{sets.shape} {sets.dtype}" for sets in (ours, theirs))
        return f"vectors {made}, reference {reference}"
    cosines = np.sum(ours.astype(np.float64) * theirs, axis=1)
    if np.any(cosines < COSINE):
        return f"vectors at cosine {np.round(cosines, 4).tolist()} to the reference's"
    return None


def codebook_quality_differs(
    made: bytes, reference: bytes, descriptors: bytes
) -> str | None:
    """A codebook fitted on the photos: as good on the reference descriptors
    (mean squared distance to the nearest centre within 5%) as the reference."""
    sets = arrays(descriptors)["descriptors"].astype(np.float64)

    def error(centres):
        distances = ((sets[:, None, :] - centres[None]) ** 2).sum(axis=2)
        return distances.min(axis=1).mean()

    ours, theirs = arrays(made), arrays(reference)
    if ours["centers"].shape != theirs["centers"].shape:
        return f"centres {ours['centers'].shape}, reference {theirs['centers'].shape}"
    errors = error(ours["centers"]), error(theirs["centers"])
    if errors[0] > 1.05 * errors[1]:
        return f"quantisation error {errors[0]:.4f}, reference {errors[1]:.4f}"
    return texts_differ(str(ours["metadata"]), str(theirs["metadata"]), PIXELS)


def output_differs(name: str, made: bytes, references: dict, source: str) -> str | None:
    """Where ``made`` differs from the reference output ``name`` beyond what
    another CPU may change in an output of ``source``, else None."""
    reference = references[name]
    if made == reference:
        return None
    if name.endswith((".npy", ".npz")):
        if source == PIXELS and name.endswith("codebook.npz"):
            return codebook_quality_differs(made, reference, references["desc.npz"])
        if source == PIXELS and name.endswith(".npy") and "keypoints" not in name:
            if arrays(reference)[""].dtype.kind == "f" and "descfolder" not in name:
                return vectors_differ(made, reference)
        return arrays_differ(name, made, reference, source)
    if name.endswith(("names.txt", "names.json")):
        return "names differ"
    return texts_differ(made.decode(), reference.decode(), source)


def check_against_references(failures: list, only: set | None = None):
    """A ``check`` for :func:`run_commands` that lists every output differing
    from its reference, or missing from the references, in ``failures``."""
    references = reference_files()
    reference_messages = references["stderr.log"].decode().splitlines(keepends=True)

    def check(command, made, source, messages):
        for name, content in sorted(made.items()):
            if name not in references:
                failures.append(f"{command}: {name} is not in the references")
                continue
            difference = output_differs(name, content, references, source)
            if difference:
                failures.append(f"{command}: {name}: {difference}")
        for line in messages:
            if not line.startswith("wrote "):
                continue
            alike = [
                reference
                for reference in reference_messages
                if texts_differ(line, reference, source) is None
            ]
            if not alike:
                failures.append(
                    f"{command}: message {line.strip()!r} not in the references"
                )

    return check


def command_outputs(command: str) -> str:
    """The output (file or folder) a command names after ``-o``."""
    return command.split(" -o ")[1].split()[0]


def written_by(name: str, targets: set[str]) -> str:
    """The output (one of ``targets``) that a written file belongs to: itself,
    the folder it is in, or the vectors file that it is written beside."""
    top = name.split("/")[0]
    return top if top in targets else top.split(".")[0] + ".npy"


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    """The files of COMMANDS run on the bundled photos, and the differences."""
    failures = []
    folder = tmp_path_factory.mktemp("outputs")
    run_commands(folder, COMMANDS, check_against_references(failures))
    return output_files(folder), failures


@pytest.fixture(scope="module")
def fast_outputs(tmp_path_factory):
    """The files of FAST_COMMANDS, run beside the reference codebook.npz."""
    failures = []
    folder = tmp_path_factory.mktemp("fast-outputs")
    (folder / "codebook.npz").write_bytes(reference_files()["codebook.npz"])
    run_commands(folder, FAST_COMMANDS, check_against_references(failures))
    made = output_files(folder)
    del made["codebook.npz"]
    return made, failures


@pytest.mark.slow
def test_the_same_files_are_written(outputs):
    assert sorted(outputs[0]) == sorted(reference_files())


@pytest.mark.slow
def test_every_file_is_unchanged(outputs):
    assert not outputs[1], (
        "outputs that differ from tests/data/outputs/:\n" + "\n".join(outputs[1])
    )


def test_the_fast_subset_writes_the_reference_files(fast_outputs):
    targets = {command_outputs(command) for command, *_ in FAST_COMMANDS}
    written = set(fast_outputs[0]) - {"stderr.log"}
    assert {written_by(name, targets) for name in written} == targets
    expected = {
        name for name in reference_files() if written_by(name, targets) in targets
    }
    assert written == expected


def test_the_fast_subset_is_unchanged(fast_outputs):
    assert not fast_outputs[1], "outputs that differ from tests/data/outputs/:\n" + (
        "\n".join(fast_outputs[1])
    )
    messages = fast_outputs[0]["stderr.log"].decode().splitlines()
    assert len(messages) == len(FAST_COMMANDS)


def test_an_output_changed_beyond_rounding_is_found(tmp_path):
    """The comparison is no rubber stamp: a vector moved by more than float32
    rounding, a score by more than printing, a name, a count and a keypoint
    are each caught, while rounding noise is not."""
    references = reference_files()
    vectors = arrays(references["vectors.npy"])[""]
    noisy, moved = io.BytesIO(), io.BytesIO()
    np.save(noisy, vectors * (1 + 1e-6))
    np.save(moved, vectors + 1e-3)
    assert (
        output_differs("index/vectors.npy", noisy.getvalue(), references, EXACT_INPUTS)
        is None
    )
    assert output_differs(
        "index/vectors.npy", moved.getvalue(), references, EXACT_INPUTS
    )
    assert texts_differ("score 0.28421", "score 0.28429", EXACT_INPUTS) is None
    assert texts_differ("score 0.2832", "score 0.2842", EXACT_INPUTS)
    assert texts_differ("12 inliers", "13 inliers", EXACT_INPUTS)
    assert texts_differ("12 inliers", "13 inliers", PIXELS) is None
    results = references["results-asmk.txt"].decode()
    renamed = results.replace("coffee.jpg", "coffee.png", 1)
    assert output_differs(
        "results-asmk.txt", renamed.encode(), references, EXACT_INPUTS
    )
    sets = arrays(references["desc.npz"])
    shifted = dict(sets, keypoints=sets["keypoints"] + np.float32(2.0))
    packed = io.BytesIO()
    np.savez(packed, **shifted)
    assert output_differs("desc.npz", packed.getvalue(), references, PIXELS)


if __name__ == "__main__":
    write_references()
