"""The seeded development grids (``benchmarks/weakspots_grids.py``): every question's answer box holds ink on its
page, each kind is made, and the same seed gives the same questions."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from weakspots_grids import KINDS, make  # noqa: E402


def test_grids(tmp_path: Path) -> None:
    qs = make(tmp_path / "a", pages=len(KINDS), seed=3, per_page=2)
    assert {q["kind"] for q in qs} == set(KINDS) and len(qs) == 2 * len(KINDS)
    for q in qs:
        img = np.asarray(Image.open(tmp_path / "a" / q["image"]).convert("L"))
        x0, y0, x1, y1 = q["boxes"][0]
        assert (img[y0:y1, x0:x1] < 128).any(), q["id"]
        assert q["query"].count("?") == 1 and q["answer"]
    again = make(tmp_path / "b", pages=len(KINDS), seed=3, per_page=2)
    assert [q["query"] for q in again] == [q["query"] for q in qs]
    assert json.loads((tmp_path / "a" / "questions.jsonl").read_text().splitlines()[0])["split"] == "dev"
