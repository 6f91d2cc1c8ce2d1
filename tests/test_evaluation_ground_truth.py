"""Ground truths: vlad's JSON and its validation, the revisited Oxford/Paris
setups and the INRIA Holidays naming convention."""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vlad.evaluation import (
    REVISITED_PROTOCOLS,
    QueryTruth,
    ground_truth_from_mapping,
    holidays_ground_truth,
    load_ground_truth,
    load_holidays_ground_truth,
    load_revisited_ground_truth,
    revisited_ground_truth,
)


def write_json(path, document):
    path.write_text(json.dumps(document))
    return path


# --- vlad's JSON -----------------------------------------------------------------


def test_load_ground_truth_reads_lists_and_defaults(tmp_path):
    path = write_json(
        tmp_path / "gt.json",
        {
            "q1.jpg": {
                "relevant": ["a.jpg", "b.jpg"],
                "junk": ["j.jpg"],
                "tags": ["x"],
            },
            "q0.jpg": {"relevant": []},
        },
    )
    truth = load_ground_truth(path)
    assert list(truth) == ["q1.jpg", "q0.jpg"]
    assert truth["q1.jpg"] == QueryTruth(("a.jpg", "b.jpg"), ("j.jpg",), ("x",))
    assert truth["q0.jpg"] == QueryTruth((), (), ())
    assert ground_truth_from_mapping(truth) == truth


@pytest.mark.parametrize(
    "document, match",
    [
        ([], "expected a JSON object"),
        ({}, "names no query"),
        ({"q": ["a"]}, r"query 'q': expected \{\"relevant\""),
        ({"q": {}}, "query 'q': no 'relevant' list"),
        ({"q": {"relevant": "a"}}, "query 'q': 'relevant' must be a list of names"),
        ({"q": {"relevant": ["a", 3]}}, "query 'q': 'relevant' must hold non-empty"),
        ({"q": {"relevant": [""]}}, "must hold non-empty names"),
        ({"q": {"relevant": ["a", "a"]}}, "query 'q': 'relevant' names 'a' twice"),
        ({"q": {"relevant": ["a"], "junk": ["a"]}}, "'a' is both relevant and junk"),
        ({"q": {"relevant": [], "tags": "easy"}}, "'tags' must be a list"),
        ({"q": {"relevant": [], "rel": []}}, "query 'q': unknown key 'rel'"),
        ({"q": {"easy": [], "hard": [], "junk": []}}, "need a protocol"),
        ({"": {"relevant": []}}, "a query name must be a non-empty string"),
    ],
)
def test_malformed_ground_truths_are_refused_in_one_line_naming_the_file(
    tmp_path, document, match
):
    path = write_json(tmp_path / "gt.json", document)
    with pytest.raises(ValueError, match=match) as caught:
        load_ground_truth(path)
    message = str(caught.value)
    assert "\n" not in message and message.startswith(str(path))


@pytest.mark.parametrize(
    "content, match",
    [(b"{not json", "is not a ground-truth file"), (b"\xff\xfe", "not UTF-8")],
)
def test_files_that_are_not_json_are_refused(tmp_path, content, match):
    path = tmp_path / "gt.json"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=match):
        load_ground_truth(path)


def test_missing_files_and_folders_are_refused(tmp_path):
    with pytest.raises(FileNotFoundError):
        load_ground_truth(tmp_path / "absent.json")
    with pytest.raises(ValueError, match="is a folder"):
        load_ground_truth(tmp_path)


# --- revisited Oxford and Paris ---------------------------------------------------


@st.composite
def revisited_entries(draw):
    """Disjoint easy, hard and junk lists over a few images."""
    images = [f"db{i}.jpg" for i in range(draw(st.integers(0, 12)))]
    roles = draw(
        st.lists(
            st.sampled_from(["easy", "hard", "junk", None]),
            min_size=len(images),
            max_size=len(images),
        )
    )
    return {
        key: [image for image, role in zip(images, roles, strict=True) if role == key]
        for key in ("easy", "hard", "junk")
    }


@given(revisited_entries())
def test_revisited_setups_are_revisitops(entry):
    """easy: ok = easy, junk = junk + hard; medium: ok = easy + hard, junk =
    junk; hard: ok = hard, junk = junk + easy (revisitop's
    example_evaluate.py), compared as sets."""
    expected = {
        "easy": (entry["easy"], entry["junk"] + entry["hard"]),
        "medium": (entry["easy"] + entry["hard"], entry["junk"]),
        "hard": (entry["hard"], entry["junk"] + entry["easy"]),
    }
    for protocol in REVISITED_PROTOCOLS:
        truth = revisited_ground_truth({"q.jpg": entry}, protocol)["q.jpg"]
        relevant, junk = expected[protocol]
        assert set(truth.relevant) == set(relevant)
        assert set(truth.junk) == set(junk)
        assert len(truth.relevant) == len(relevant) and len(truth.junk) == len(junk)


def test_load_revisited_ground_truth_keeps_tags_and_accepts_a_box(tmp_path):
    path = write_json(
        tmp_path / "roxford.json",
        {
            "q.jpg": {
                "easy": ["e.jpg"],
                "hard": ["h.jpg"],
                "junk": [],
                "bbx": [1.0, 2.0, 30.0, 40.0],
                "tags": ["all_souls"],
            }
        },
    )
    truth = load_revisited_ground_truth(path, "medium")
    assert truth == {"q.jpg": QueryTruth(("e.jpg", "h.jpg"), (), ("all_souls",))}


@pytest.mark.parametrize(
    "entry, match",
    [
        ({"easy": [], "hard": []}, "no 'junk' list"),
        ({"relevant": []}, "unknown key 'relevant'"),
        (
            {"easy": ["a"], "hard": ["a"], "junk": []},
            "'a' is in both 'easy' and 'hard'",
        ),
        ({"easy": [], "hard": ["b"], "junk": ["b"]}, "in both 'hard' and 'junk'"),
        ({"easy": "a", "hard": [], "junk": []}, "'easy' must be a list"),
        ([], "expected"),
    ],
)
def test_malformed_revisited_entries_are_refused(tmp_path, entry, match):
    path = write_json(tmp_path / "r.json", {"q.jpg": entry})
    with pytest.raises(ValueError, match=match) as caught:
        load_revisited_ground_truth(path, "easy")
    assert str(caught.value).startswith(f"{path}, query 'q.jpg': ")


def test_an_unknown_protocol_is_refused(tmp_path):
    with pytest.raises(ValueError, match="protocol must be one of easy, medium, hard"):
        load_revisited_ground_truth(tmp_path / "absent.json", "medium-hard")


# --- INRIA Holidays --------------------------------------------------------------


@given(
    st.lists(
        st.lists(st.integers(1, 99), unique=True, max_size=5), min_size=1, max_size=6
    ),
    st.randoms(use_true_random=False),
    st.sampled_from(["", "jpg/"]),
)
def test_holidays_queries_are_the_images_ending_in_00(
    scenes, rng: random.Random, folder
):
    """Against the grouping of holidays_map.py: sorted names, a name whose
    number is a multiple of 100 starts a scene and is its query."""
    names = []
    for scene, others in enumerate(scenes):
        names.append(f"{folder}{100000 + 100 * scene}.jpg")
        names += [f"{folder}{100000 + 100 * scene + other}.jpg" for other in others]
    shuffled = names[:]
    rng.shuffle(shuffled)
    truth = holidays_ground_truth(shuffled)
    expected = {}
    for name in sorted(names):
        number = int(name.removeprefix(folder)[: -len(".jpg")])
        if number % 100 == 0:
            expected[name] = []
            query = name
        else:
            expected[query].append(name)
    assert list(truth) == list(expected)
    for query, relevant in expected.items():
        assert truth[query] == QueryTruth(tuple(relevant), junk=(query,))


def test_load_holidays_ground_truth_reads_a_names_file(tmp_path):
    path = tmp_path / "v.names.txt"
    path.write_text("100000.jpg\n100001.jpg\n\n100100.jpg\n")
    truth = load_holidays_ground_truth(path)
    assert truth == {
        "100000.jpg": QueryTruth(("100001.jpg",), ("100000.jpg",)),
        "100100.jpg": QueryTruth((), ("100100.jpg",)),
    }


@pytest.mark.parametrize(
    "names, match",
    [
        ([], "names no image"),
        (["100000.jpg", "photo.jpg"], "'photo.jpg' is not named as INRIA Holidays"),
        (["1000000.jpg"], "six digits"),
        (["100000.jpg", "100001.jpg", "x/100001.png"], "share a number"),
        (["100000.jpg", "100101.jpg"], "scene 1001 .'100101.jpg'. has no query"),
    ],
)
def test_names_outside_the_holidays_convention_are_refused(names, match):
    with pytest.raises(ValueError, match=match):
        holidays_ground_truth(names)
