"""Round 6's "last" group of real tables (benchmarks/weakspots_tables.py ``LAST6``): collections no earlier round
copied, every source of theirs in the "last" group, none of them reserved."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import weakspots_tables as wt  # noqa: E402


def _name(prefix: str) -> str:
    return prefix.rstrip(":")


def test_last6_collections_are_new() -> None:
    names = [_name(p) for p in wt.LAST6]
    assert len(names) >= 6 and all(n in wt.COLLECTIONS for n in names)
    earlier = {wt.COLLECTIONS[n][:2] for n in wt.COLLECTIONS if n not in names}
    assert not {wt.COLLECTIONS[n][:2] for n in names} & earlier  # no repository folder copied before
    assert not set(wt.LAST6) & (set(wt.LAST5) | {"fonduer:", "doclingeval:", "pypdf:", "deepdoctection:"})


def test_last6_sources_are_last() -> None:
    for prefix in wt.LAST6:
        assert wt.split_of(f"{prefix}some_file") == "last"


def test_reserved_names_stay_out() -> None:
    # PDFBox's test resources hold a copy named like tabula-java's ICDAR files (camelot's eu-/us- copies)
    assert wt.RESERVED.search("eu-001.pdf")
    assert wt.RESERVED.search("blank.pdf")  # OCRmyPDF's, named like a pdfplumber test file
