"""benchmarks/routed_choice.py's reading of its results files and its paired spread (issue 40 item 4, round 11)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from benchmarks.routed_choice import _paired, _records


def test_records_reads_realdocs_recall_and_paraphrase_set_json(tmp_path: Path) -> None:
    rd = tmp_path / "rd.json"
    rd.write_text(json.dumps({"command": "x", "questions": [{"id": "a", "rules": {"11.1%": 1.0}}]}))
    par = tmp_path / "par.json"
    par.write_text(json.dumps([{"id": "b", "rules": 0.5, "learned": 0.25}]))
    assert [r["id"] for r in _records(rd)] == ["a"]
    assert _records(par) == [{"id": "b", "rules": 0.5, "learned": 0.25}]


def test_paired_is_the_mean_difference_and_its_standard_error() -> None:
    assert _paired(np.array([0.0, -1.0])) == "-0.500 (0.500)"
    assert _paired(np.array([0.25])) == "+0.250 (0.000)"
    assert _paired(np.array([0.0, 0.0, 0.0])) == "+0.000 (0.000)"
