"""Options of learned features (vlad.images.LearnedOptions) and the checks
that keep them apart from other descriptors: none of these runs a network,
so they hold without PyTorch or kornia."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import vlad
from vlad.images._extractors import (
    FEATURES,
    check_same_kind,
    descriptor_kind,
    descriptor_options_for,
    resolve_extractor,
)
from vlad.images._learned import LearnedOptions, check_device

SHA = "5be8704840ed662d9d8c561bf7279c222092674e7eb05fd0feab94899e9d82f2"
ALIKED_RECORD = {
    "extractor": "aliked",
    "model": "aliked-n16",
    "max_side": 1024,
    "max_keypoints": 4096,
    "detection_threshold": 0.2,
    "max_pixels": 1 << 27,
    "weights_sha256": SHA,
    "kornia_version": "0.9.0",
    "torch_version": "2.9.0",
}
SIFT_RECORD = vlad.SiftOptions().record()


def codebook_of(record: dict, n_features: int = 128) -> vlad.Codebook:
    centers = np.eye(2, n_features, dtype=np.float32)
    return vlad.Codebook(centers, {"descriptor": record})


def test_the_defaults_are_hlocs_for_aliked():
    options = LearnedOptions()
    assert (options.features, options.model) == ("aliked", "aliked-n16")
    assert (options.max_side, options.max_keypoints) == (1024, 4096)
    assert options.detection_threshold == 0.2
    assert options.n_features == 128
    assert LearnedOptions(model="aliked-t16").n_features == 64
    assert options.kind == "ALIKED (aliked-n16) at detected keypoints"


def test_a_record_gives_back_its_options():
    options = LearnedOptions.from_record(ALIKED_RECORD)
    assert options == LearnedOptions(weights_sha256=SHA)
    assert LearnedOptions.from_record(SIFT_RECORD) is None
    assert LearnedOptions.from_record({}) is None
    assert LearnedOptions.from_record(None) is None
    with pytest.raises(ValueError, match="a descriptor record with bad options"):
        LearnedOptions.from_record({**ALIKED_RECORD, "max_side": -1})
    # The settings of a machine are not the descriptors': never read back.
    local = {"weights": "w.pth", "device": "cuda", "batch_size": 8}
    assert LearnedOptions.from_record({**ALIKED_RECORD, **local}) == options
    assert descriptor_kind(ALIKED_RECORD) == options.kind
    assert descriptor_kind(SIFT_RECORD) == "RootSIFT at detected keypoints"


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"device": "gpu"}, "device must be 'auto', 'cpu', 'cuda', 'cuda:N' or 'mps'"),
        ({"device": "cuda:x"}, "device must be"),
        ({"weights_sha256": "ABC"}, "weights_sha256 must be None or 64 lower-case"),
        ({"weights_sha256": SHA.upper()}, "weights_sha256 must be"),
        ({"model": "aliked-n64"}, "model must be one of"),
        (
            {"detection_threshold": 1.0},
            r"detection_threshold must be a number in \[0, 1\)",
        ),
        ({"features": "sift"}, r"features must be one of \['aliked'\]"),
        ({"batch_size": -1}, "batch_size must be an integer >= 0"),
    ],
)
def test_bad_options_are_refused_in_one_line(settings, message):
    with pytest.raises(ValueError, match=message) as raised:
        LearnedOptions(**settings)
    assert "\n" not in str(raised.value)


def test_weights_must_be_a_path():
    with pytest.raises(TypeError, match="weights must be None or a path"):
        LearnedOptions(weights=3)
    assert LearnedOptions(weights=Path("w.pth")).weights == "w.pth"


@pytest.mark.parametrize("device", ["auto", "cpu", "cuda", "cuda:0", "cuda:12", "mps"])
def test_devices_by_name(device):
    assert check_device(device) == device


def test_the_features_are_opencvs_and_the_learned_ones():
    assert FEATURES.choices == ("akaze", "aliked", "orb", "sift")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"features": "aliked", "root_sift": True},
            r"descriptor options \(root_sift\) apply to OpenCV's features, not to "
            r"features='aliked'",
        ),
        (
            {"features": "aliked", "dense": True, "min_keypoints": 3},
            r"descriptor options \(dense, min_keypoints\) apply to OpenCV's",
        ),
        (
            {"device": "cpu"},
            r"descriptor options \(device\) apply to learned features \(aliked\), "
            r"not to features='sift'",
        ),
        (
            {"features": "orb", "weights": "w.pth", "detection_threshold": 0.1},
            r"\(detection_threshold, weights\) apply to learned features",
        ),
    ],
)
def test_options_of_other_features_are_refused(options, message):
    with pytest.raises(ValueError, match=message):
        resolve_extractor(options, None)


def test_unknown_options_are_refused():
    with pytest.raises(TypeError, match="unknown descriptor options: colour"):
        resolve_extractor({"features": "aliked", "colour": True}, None)
    with pytest.raises(ValueError, match="features must be one of"):
        resolve_extractor({"features": "superpoint"}, None)


@pytest.mark.parametrize(
    ("codebook_record", "descriptor_record", "message"),
    [
        (
            SIFT_RECORD,
            ALIKED_RECORD,
            "fitted on 'opencv-sift' descriptors but these are 'aliked' descriptors",
        ),
        (
            ALIKED_RECORD,
            SIFT_RECORD,
            "fitted on 'aliked' descriptors but these are 'opencv-sift' descriptors",
        ),
        (
            ALIKED_RECORD,
            {**ALIKED_RECORD, "model": "aliked-n32"},
            "descriptors of aliked-n16 but these are of aliked-n32",
        ),
        (
            ALIKED_RECORD,
            {**ALIKED_RECORD, "weights_sha256": "0" * 64},
            f"weights of SHA-256 {SHA} but these were made with weights of SHA-256 "
            + "0" * 64,
        ),
        (
            {"extractor": "hloc", "model": "aliked-n16"},
            ALIKED_RECORD,
            "fitted on 'hloc' descriptors but these are 'aliked'",
        ),
    ],
)
def test_descriptors_of_another_kind_are_refused(
    codebook_record, descriptor_record, message
):
    with pytest.raises(ValueError, match=message) as raised:
        check_same_kind(descriptor_record, codebook_of(codebook_record))
    assert "\n" not in str(raised.value)


def test_descriptors_of_the_same_network_pass_whatever_their_settings():
    other = {**ALIKED_RECORD, "max_keypoints": 1000, "max_side": 640}
    check_same_kind(other, codebook_of(ALIKED_RECORD))
    check_same_kind(
        {**ALIKED_RECORD, "weights_sha256": None}, codebook_of(ALIKED_RECORD)
    )


def test_a_codebooks_learned_options_are_its_records_with_the_given_ones():
    codebook = codebook_of(ALIKED_RECORD)
    options = descriptor_options_for(codebook, {"device": "cpu", "weights": "w.pth"})
    assert options == LearnedOptions(weights_sha256=SHA, device="cpu", weights="w.pth")
    # Other features: made from the options given alone (and then refused by
    # check_same_kind, as any other kind).
    assert descriptor_options_for(codebook, {"features": "sift"}) == vlad.SiftOptions()
    with pytest.raises(ValueError, match=r"\(root_sift\) apply to OpenCV's features"):
        descriptor_options_for(codebook, {"root_sift": False})
    sift_codebook = codebook_of(SIFT_RECORD)
    learned = descriptor_options_for(sift_codebook, {"features": "aliked"})
    assert learned == LearnedOptions()
    with pytest.raises(ValueError, match=r"\(device\) apply to learned features"):
        descriptor_options_for(sift_codebook, {"device": "cpu"})


def test_without_pytorch_or_kornia_the_error_says_what_to_install(tmp_path):
    """In a process where they cannot be imported, options still check, and
    what needs the network says what to install, in one line."""
    script = (
        "import sys\n"
        "sys.modules['torch'] = None\n"
        "import vlad\n"
        "from vlad.images._learned import LearnedOptions\n"
        "options = LearnedOptions(weights='w.pth')\n"
        "try:\n"
        "    options.resolved()\n"
        "except ImportError as error:\n"
        "    print(error)\n"
        "sys.modules['torch'] = __import__('types').ModuleType('torch')\n"
        "sys.modules['kornia'] = None\n"
        "from vlad.backends.kornia import import_kornia\n"
        "try:\n"
        "    import_kornia()\n"
        "except ImportError as error:\n"
        "    print(error)\n"
    )
    process = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    lines = process.stdout.splitlines()
    install = "pip install 'torch>=2.1' 'kornia>=0.8.3'"
    assert lines == [
        "learned features require PyTorch and kornia; install them with: "
        f"{install} (see docs/accelerators.md for a CPU-only PyTorch)",
        f"learned features require kornia; install it with: {install}",
    ]


def test_the_extra_is_declared_and_kept_out_of_all():
    tomllib = pytest.importorskip("tomllib", reason="Python 3.11 reads TOML")
    from conftest import ROOT

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    assert extras["learned"] == ["torch>=2.1", "kornia>=0.8.3"]
    assert not any("learned" in line or "torch" in line for line in extras["all"])
