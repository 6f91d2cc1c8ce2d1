"""The ASMK benchmark on a tiny synthetic problem: its rows and its table."""

from __future__ import annotations

import pytest

from benchmarks.asmk import benchmark_asmk, main, make_asmk_problem

#: The benchmarks' own tests: a CI step of their own, not the default run.
pytestmark = pytest.mark.benchmarks


def test_rows_count_bytes_as_the_index_keeps_them():
    sets, codebook = make_asmk_problem(6, 20, 16, n_features=16)
    rows = benchmark_asmk(sets, codebook, n_queries=2, k=3)
    assert [row["kernel"] for row in rows] == ["ASMK*", "ASMK"]
    # int32 image numbers, then 16 sign bits or 16 float32 values
    assert [row["bytes_per_entry"] for row in rows] == [4 + 2, 4 + 64]
    for row in rows:
        assert row["bytes_per_image"] == pytest.approx(row["bytes_per_descriptor"] * 20)
        assert row["ms_per_query"] > 0


def test_main_prints_a_table(capsys):
    main(["--images", "4", "--words", "8", "--queries", "2"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("4 images, 4000 descriptors, 8 words")
    assert [line.split(" | ")[0] for line in lines[-2:]] == ["| ASMK*", "| ASMK"]
