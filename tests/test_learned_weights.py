"""Weights of learned features (vlad.backends.kornia): files read without
running code and checked key by key, their SHA-256, the pretrained weights
downloaded into PyTorch's hub cache; each bad file refused in one line, by
the library and the command line alike."""

from __future__ import annotations

import hashlib
import os

import pytest
from click.testing import CliRunner
from learned_networks import WEIGHTS_SHA256, authors_weights, random_weights
from photos import DATA

torch = pytest.importorskip("torch")
kornia = pytest.importorskip("kornia")

import vlad  # noqa: E402
from vlad.backends.kornia._networks import (  # noqa: E402
    ALIKED_RECOMPUTED,
    AlikedSettings,
    aliked_network,
    pretrained_weights,
)
from vlad.backends.kornia._weights import (  # noqa: E402
    file_sha256,
    load_weights_strictly,
    read_weights,
)
from vlad.cli._main import main  # noqa: E402
from vlad.images._learned import LearnedOptions  # noqa: E402


@pytest.fixture(scope="module")
def weights(tmp_path_factory):
    return random_weights(tmp_path_factory.mktemp("weights") / "random.pth")


def test_the_buffer_the_checkpoints_lack_is_made_by_the_constructor():
    """``dkd.hw_grid``, the one key the authors' files leave out, is the
    soft-argmax window's offsets, made from the detector's radius: (x, y) of
    each of its 5 x 5 pixels, row after row."""
    network = kornia.feature.ALIKED(model_name="aliked-n16")
    offsets = [(x, y) for y in range(-2, 3) for x in range(-2, 3)]
    assert network.dkd.hw_grid.tolist() == [[float(x), float(y)] for x, y in offsets]
    buffers = {name for name, _ in network.named_buffers()}
    assert ALIKED_RECOMPUTED <= buffers
    assert all(name not in dict(network.named_parameters()) for name in buffers)


def test_the_authors_weights_lack_only_that_buffer():
    path = authors_weights()
    assert file_sha256(path) == WEIGHTS_SHA256
    state = read_weights(path)
    own = kornia.feature.ALIKED(model_name="aliked-n16").state_dict()
    assert set(own) - set(state) == ALIKED_RECOMPUTED
    assert set(state) <= set(own)


def test_weights_load_strictly_and_give_the_networks_values(weights):
    network = kornia.feature.ALIKED(model_name="aliked-n16")
    state = read_weights(weights)
    load_weights_strictly(network, state, ALIKED_RECOMPUTED, weights)
    loaded = network.state_dict()
    for name, tensor in state.items():
        assert torch.equal(loaded[name], tensor), name


def test_the_sha256_is_that_of_the_files_bytes(weights):
    assert file_sha256(weights) == hashlib.sha256(weights.read_bytes()).hexdigest()


class RunsCode:
    """Unpickled, it would create a file: what a hostile checkpoint does."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def bad_file(kind: str, weights, folder):
    """A weights file spoilt in one way; its path."""
    path = folder / f"{kind}.pth"
    state = torch.load(weights, weights_only=True)
    if kind == "renamed":
        state["score_head.0.renamed"] = state.pop("score_head.0.weight")
    elif kind == "missing":
        del state["desc_head.agg_weights"]
    elif kind == "extra":
        state["head.extra"] = torch.zeros(3)
    elif kind == "shape":
        state["score_head.0.weight"] = state["score_head.0.weight"][:4]
    elif kind == "list":
        state = list(state.values())
    elif kind == "code":
        state["score_head.0.weight"] = RunsCode(folder / "ran")
    if kind == "truncated":
        path.write_bytes(weights.read_bytes()[:1000])
    elif kind == "text":
        path.write_text("not weights\n")
    else:
        torch.save(state, path)
    return path


BAD_FILES = {
    "renamed": "lacks 1 of its keys (score_head.0.weight) and has 1 keys it does "
    "not (score_head.0.renamed)",
    "missing": "lacks 1 of its keys (desc_head.agg_weights)",
    "extra": "has 1 keys it does not (head.extra)",
    "shape": "score_head.0.weight has shape (4, 128, 1, 1) in the file and "
    "(8, 128, 1, 1) in the network",
    "list": "holds a list, not a state dict",
    "code": "is not a readable PyTorch weights file (it holds more than tensors: "
    "io.open, which unpickling would call; refused unread)",
    "truncated": "is not a readable PyTorch weights file (RuntimeError: ",
    "text": "is not a readable PyTorch weights file (",
}


@pytest.mark.parametrize("kind", sorted(BAD_FILES))
def test_bad_weights_files_are_refused_in_one_line(kind, weights, tmp_path):
    path = bad_file(kind, weights, tmp_path)
    options = {"features": "aliked", "weights": path, "device": "cpu"}
    with pytest.raises(ValueError) as raised:
        vlad.extract_images(DATA / "chelsea.jpg", options, n_jobs=1)
    message = str(raised.value)
    assert message.startswith(f"weights: {path}")
    assert BAD_FILES[kind] in message
    assert "\n" not in message
    assert not (tmp_path / "ran").exists()
    result = CliRunner().invoke(
        main,
        [
            "extract",
            str(DATA / "chelsea.jpg"),
            "-o",
            str(tmp_path / "out.npz"),
            "--features",
            "aliked",
            "--weights",
            str(path),
        ],
    )
    assert result.exit_code == 1
    assert result.output.splitlines() == [f"Error: {message}"]
    assert not (tmp_path / "out.npz").exists()
    assert not (tmp_path / "ran").exists()


def test_a_pickle_that_would_run_code_is_not_run(weights, tmp_path):
    """The refusal comes before the code runs, which unpickling would run."""
    path = bad_file("code", weights, tmp_path)
    with pytest.raises(ValueError, match="io.open, which unpickling would call"):
        read_weights(path)
    assert not (tmp_path / "ran").exists()
    torch.load(path, weights_only=False)  # the file is hostile indeed
    assert (tmp_path / "ran").exists()


def test_weights_of_another_configuration_are_refused(tmp_path):
    path = random_weights(tmp_path / "t16.pth", model="aliked-t16")
    settings = LearnedOptions(weights=path).resolved().network_settings()
    with pytest.raises(ValueError) as raised:
        aliked_network(settings, torch.device("cpu"))
    assert str(raised.value).startswith(
        f"weights: {path} are not weights of ALIKED (aliked-n16): "
    )
    assert "in the file and" in str(raised.value)
    t16 = LearnedOptions(weights=path, model="aliked-t16").resolved()
    assert aliked_network(t16.network_settings(), torch.device("cpu")) is not None


def test_weights_of_another_sha256_are_refused(weights, tmp_path):
    other = "0" * 64
    with pytest.raises(ValueError) as raised:
        LearnedOptions(weights=weights, weights_sha256=other).resolved()
    assert str(raised.value) == (
        f"weights: {weights} has SHA-256 {file_sha256(weights)}, but descriptors made "
        f"with weights of SHA-256 {other} are asked for (those of the codebook or "
        "index); give those weights"
    )
    resolved = LearnedOptions(weights=weights).resolved()
    assert resolved.weights_sha256 == file_sha256(weights)
    # A file replaced after the options were resolved (on a Dask worker, say).
    replaced = tmp_path / "replaced.pth"
    replaced.write_bytes(weights.read_bytes())
    settings = LearnedOptions(weights=replaced).resolved().network_settings()
    random_weights(replaced, seed=1)
    with pytest.raises(ValueError, match="as expected; give the same weights file"):
        aliked_network(settings, torch.device("cpu"))


def test_a_missing_weights_file_is_refused(tmp_path):
    with pytest.raises(ValueError, match="weights: cannot read .*missing.pth"):
        LearnedOptions(weights=tmp_path / "missing.pth").resolved()


def test_networks_are_made_once_per_process(weights):
    settings = LearnedOptions(weights=weights).resolved().network_settings()
    first = aliked_network(settings, torch.device("cpu"))
    assert aliked_network(settings, torch.device("cpu")) is first
    other = AlikedSettings(**{**vars(settings), "max_keypoints": 10})
    assert aliked_network(other, torch.device("cpu")) is not first


def test_the_pretrained_weights_are_downloaded_once_into_the_hub_cache(
    weights, tmp_path, monkeypatch
):
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch"))
    missing = f"file://{tmp_path}/nowhere/{{}}.pth"
    with pytest.raises(ValueError) as raised:
        pretrained_weights("aliked-n16", urls=[missing])
    message = str(raised.value)
    assert message.startswith(
        "weights: cannot download the pretrained weights of aliked-n16 ("
        f"file://{tmp_path}/nowhere/aliked-n16.pth: URLError"
    )
    assert message.endswith(
        "download aliked-n16.pth where there is a connection and give the file "
        "with weights= (vlad extract --weights FILE)"
    )
    assert "\n" not in message
    source = tmp_path / "source"
    source.mkdir()
    (source / "aliked-n16.pth").write_bytes(weights.read_bytes())
    path = pretrained_weights("aliked-n16", urls=[missing, f"file://{source}/{{}}.pth"])
    assert path == tmp_path / "torch" / "hub" / "checkpoints" / "aliked-n16.pth"
    assert path.read_bytes() == weights.read_bytes()
    # Once there, it is not downloaded again.
    assert pretrained_weights("aliked-n16", urls=[]) == path
    assert LearnedOptions().resolved().weights == os.fspath(path)
