"""Round 12's fresh group of section questions (benchmarks/weakspots_sections.py ``LAST12``): files no earlier
collection names, from no reserved repository, and split apart from every earlier group."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import weakspots_sections as ws  # noqa: E402


def test_last12_files_are_new() -> None:
    earlier = {(repo, path) for c, (repo, _, _, paths) in ws.MANIFEST.items() if c not in ws.LAST12 for path in paths}
    new = [(ws.MANIFEST[c][0], path) for c in ws.LAST12 for path in ws.MANIFEST[c][3]]
    assert new and len(new) == len(set(new)) and not set(new) & earlier
    # one stem per file in a collection (the source id is collection:stem)
    for c in ws.LAST12:
        stems = [Path(p).stem for p in ws.MANIFEST[c][3]]
        assert len(stems) == len(set(stems))


def test_last12_not_reserved() -> None:
    for c in ws.LAST12:
        repo = ws.MANIFEST[c][0].lower()
        assert not any(r in repo for r in ("camelot", "pdfplumber", "texlive", "funsd", "sroie"))


def test_last12_split() -> None:
    for c in ws.LAST12:
        assert ws._split(f"{c}:x") == "last12"
    assert ws._split("scienceparse11:fader11") == "last11"
    assert ws._split("papermage:papermage") == "dev"
