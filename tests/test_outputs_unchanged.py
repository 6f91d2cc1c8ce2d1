"""Every file that ``vlad`` writes on the bundled photos, byte for byte.

The commands of the main jobs (extract to a ``.npz`` and to a folder of shards;
fit one and two vocabularies; encode to a file and to a folder of shards; index
exactly, PCA-whitened and ASMK; search to text and JSON results, with spatial
re-ranking) run in-process on a copy of data/, and each output is compared with
the reference made by the same commands: tests/data/outputs/ holds the small
files themselves and SHA256SUMS the digests of the large ones. A restructuring
that changes no behaviour leaves every byte as it was.

No file is normalised: the records hold no timings, and they hold paths as they
were given, so the commands run inside their folder with relative paths. Of the
messages, stderr.log keeps the summary lines ("wrote ..."), not warnings. Shard
keys hold each input's size and modification time, which are set here with
``os.utime``. The references belong to the OpenCV that made them (SIFT is
where every output starts): with another OpenCV version the test is skipped.

Every command runs with ``-m slow``. The default run keeps a fast subset that
describes the photos once and fits nothing (FAST_COMMANDS, on the reference
codebook.npz): extract, encode, index and search, about a fifth of the time.

After a deliberate change of output, write the references anew with
``PYTHONPATH=. python tests/test_outputs_unchanged.py`` and say why in the
CHANGELOG.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import cv2
import pytest
from click.testing import CliRunner

from vlad.cli._main import main

HERE = Path(__file__).resolve().parent
DATA = HERE.parent / "data"
REFERENCE = HERE / "data" / "outputs"
#: Files larger than this are compared by their SHA-256, kept in SHA256SUMS.
LARGEST_KEPT = 16 * 1024
#: Modification times (seconds) of the copied photos and of desc.npz.
PHOTOS_MTIME = 1_600_000_000
DESCRIPTORS_MTIME = 1_700_000_000

#: The commands, in order: (arguments, file of their standard output or None,
#: whether the fast subset runs them too).
COMMANDS = [
    ("extract data -o desc.npz", None, True),
    ("extract data -o descfolder --shard-images 3", None, False),
    ("fit data -k 16 -o codebook.npz", None, False),
    ("fit desc.npz -k 8 --vocabularies 2 -o codebook2.npz", None, False),
    ("encode data --codebook codebook.npz -o vectors.npy", None, True),
    (
        "encode desc.npz --codebook codebook.npz -o vectorsfolder --shard-images 3",
        None,
        True,
    ),
    ("encode data --codebook codebook2.npz -o vectors2.npy", None, False),
    ("index vectors.npy -o index", None, True),
    ("index vectors.npy -o index-pca --pca 6 --whiten", None, True),
    ("index desc.npz --method asmk -c codebook.npz -o asmk-index", None, True),
    (
        "search index data --codebook codebook.npz -k 3 -o results.txt",
        "search.stdout",
        False,
    ),
    ("search index data --codebook codebook.npz -k 3 -o results.json", None, False),
    (
        "search index data --codebook codebook.npz -k 5 --rerank spatial"
        " --database-descriptors desc.npz -o results-spatial.json",
        None,
        False,
    ),
    ("search asmk-index desc.npz -k 3 -o results-asmk.txt", None, True),
]
#: The fast subset describes the photos once: it fits nothing, and runs on the
#: reference codebook.npz (kept whole) instead.
FAST_COMMANDS = [command for command in COMMANDS if command[2]]


def run_commands(folder: Path, commands=COMMANDS) -> None:
    """Run ``commands`` inside ``folder`` on a copy of data/; the summary line
    that each writes on standard error ("wrote ...") goes to stderr.log.
    Warnings are not kept: a deprecated option's warning is no change of
    output."""
    shutil.copytree(DATA, folder / "data")
    for photo in (folder / "data").iterdir():
        os.utime(photo, (PHOTOS_MTIME, PHOTOS_MTIME))
    messages = []
    previous = Path.cwd()
    os.chdir(folder)
    try:
        for command, stdout, _ in commands:
            result = CliRunner().invoke(main, [*command.split(), "--overwrite"])
            assert result.exit_code == 0, (command, result.output, result.exception)
            lines = result.stderr.splitlines(keepends=True)
            messages += [line for line in lines if line.startswith("wrote ")]
            if stdout is not None:
                Path(stdout).write_text(result.stdout)
            if command.endswith("-o desc.npz"):
                os.utime("desc.npz", (DESCRIPTORS_MTIME, DESCRIPTORS_MTIME))
    finally:
        os.chdir(previous)
    shutil.rmtree(folder / "data")
    (folder / "stderr.log").write_text("".join(messages))


def output_files(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder``, by its path relative to it."""
    return {
        path.relative_to(folder).as_posix(): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def sha256(content: bytes) -> str:
    return hashlib.sha256(content).hexdigest()


def reference_digests() -> dict[str, str]:
    """The SHA-256 of every reference output, by its path, kept or summed."""
    digests = {}
    for line in (REFERENCE / "SHA256SUMS").read_text().splitlines():
        digest, name = line.split("  ", 1)
        digests[name] = digest
    for name, content in output_files(REFERENCE).items():
        if name not in ("SHA256SUMS", "environment.json"):
            digests[name] = sha256(content)
    return digests


def write_references() -> None:
    """Replace the references with the outputs of COMMANDS run now."""
    shutil.rmtree(REFERENCE, ignore_errors=True)
    REFERENCE.mkdir(parents=True)
    run_commands(REFERENCE)
    sums = []
    for name, content in output_files(REFERENCE).items():
        if len(content) > LARGEST_KEPT:
            sums.append(f"{sha256(content)}  {name}\n")
            (REFERENCE / name).unlink()
    for path in sorted(REFERENCE.rglob("*"), reverse=True):
        if path.is_dir() and not any(path.iterdir()):
            path.rmdir()
    (REFERENCE / "SHA256SUMS").write_text("".join(sums))
    environment = {"opencv": cv2.__version__}
    (REFERENCE / "environment.json").write_text(json.dumps(environment) + "\n")


def check_environment() -> None:
    """Skip unless the references' OpenCV is here, and faiss (their k-means)."""
    pytest.importorskip("faiss", reason="the references' codebooks are faiss's")
    made = json.loads((REFERENCE / "environment.json").read_text())["opencv"]
    if cv2.__version__ != made:
        pytest.skip(f"references made with OpenCV {made}, not {cv2.__version__}")


def changed_files(outputs: dict[str, bytes]) -> list[str]:
    """The outputs whose bytes are not their reference's."""
    references = reference_digests()
    return [
        name
        for name, content in outputs.items()
        if name in references and sha256(content) != references[name]
    ]


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    """The files of COMMANDS run on the bundled photos, by relative path."""
    check_environment()
    folder = tmp_path_factory.mktemp("outputs")
    run_commands(folder)
    return output_files(folder)


@pytest.fixture(scope="module")
def fast_outputs(tmp_path_factory):
    """The files of FAST_COMMANDS, run beside the reference codebook.npz."""
    check_environment()
    folder = tmp_path_factory.mktemp("fast-outputs")
    shutil.copy(REFERENCE / "codebook.npz", folder)
    run_commands(folder, FAST_COMMANDS)
    made = output_files(folder)
    del made["codebook.npz"]
    return made


@pytest.mark.slow
def test_the_same_files_are_written(outputs):
    assert sorted(outputs) == sorted(reference_digests())


@pytest.mark.slow
def test_every_file_is_unchanged_byte_for_byte(outputs):
    changed = changed_files(outputs)
    assert not changed, f"outputs that differ from tests/data/outputs/: {changed}"


@pytest.mark.slow
def test_kept_files_show_their_difference(outputs):
    """The small files are kept whole, so a difference in one is shown."""
    kept = output_files(REFERENCE)
    for name in sorted(set(kept) - {"SHA256SUMS", "environment.json"}):
        if name.endswith((".json", ".txt", ".log", ".stdout")):
            assert outputs[name].decode() == kept[name].decode(), name


def command_output(name: str, targets: set[str]) -> str:
    """The output (one of ``targets``) that a written file belongs to: itself,
    the folder it is in, or the vectors file that it is written beside."""
    top = name.split("/")[0]
    return top if top in targets else top.split(".")[0] + ".npy"


def test_the_fast_subset_writes_the_reference_files(fast_outputs):
    targets = {command.split(" -o ")[1].split()[0] for command, _, _ in FAST_COMMANDS}
    written = set(fast_outputs) - {"stderr.log"}
    assert {command_output(name, targets) for name in written} == targets
    expected = {
        name for name in reference_digests() if command_output(name, targets) in targets
    }
    assert written == expected


def test_the_fast_subset_is_unchanged_byte_for_byte(fast_outputs):
    fast_outputs = dict(fast_outputs)
    messages = fast_outputs.pop("stderr.log").decode().splitlines()
    changed = changed_files(fast_outputs)
    assert not changed, f"outputs that differ from tests/data/outputs/: {changed}"
    reference_messages = (REFERENCE / "stderr.log").read_text().splitlines()
    assert messages == [line for line in reference_messages if line in messages]
    assert len(messages) == len(FAST_COMMANDS)


if __name__ == "__main__":
    write_references()
