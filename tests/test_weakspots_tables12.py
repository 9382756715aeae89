"""Round 12's "last" group of real tables (benchmarks/weakspots_tables.py ``LAST12``): collections no earlier round
copied, every source of theirs in the "last" group, none of them reserved; the earlier groups unchanged."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import weakspots_tables as wt  # noqa: E402

EARLIER = ("fonduer:", "doclingeval:", "pypdf:", "deepdoctection:", "pymupdfrag:", *wt.LAST5, *wt.LAST6, *wt.LAST11)


def test_last12_collections_are_new() -> None:
    names = [p.rstrip(":") for p in wt.LAST12]
    assert len(names) == len(set(names)) >= 8 and all(n in wt.COLLECTIONS for n in names)
    earlier = {wt.COLLECTIONS[n][0].lower() for n in wt.COLLECTIONS if n not in names}
    assert not {wt.COLLECTIONS[n][0].lower() for n in names} & earlier  # no repository any earlier round copied
    assert not set(wt.LAST12) & set(EARLIER)
    # and none of its repositories is a fork of an earlier one under another owner (pdf2docx: Artifex's, not a copy)
    repo_names = {wt.COLLECTIONS[n][0].split("/")[-1].lower() for n in wt.COLLECTIONS if n not in names}
    assert not {wt.COLLECTIONS[n][0].split("/")[-1].lower() for n in names} & repo_names


def test_last12_not_reserved_repositories() -> None:
    # camelot, its forks (atlanhq/camelot, excalibur) and pdfplumber are kept for independent evaluation
    for n in (p.rstrip(":") for p in wt.LAST12):
        repo = wt.COLLECTIONS[n][0].lower()
        assert not any(r in repo for r in ("camelot", "excalibur", "pdfplumber", "texlive", "funsd", "sroie"))


def test_last12_sources_are_last_and_earlier_groups_kept() -> None:
    for prefix in wt.LAST12:
        assert wt.split_of(f"{prefix}some_file") == "last"
    # the earlier rounds' groups, written out again (LAST5 / LAST6 are now built from word lists: same tuples)
    assert wt.LAST5 == (
        "textractor:",
        "textractsamples:",
        "azuredi:",
        "doclingparse:",
        "img2table:",
        "layoutparser:",
        "pdftableextract:",
        "pypdfsamples:",
        "nlmingestor:",
    )
    assert (
        wt.LAST6[:3] == ("pdfbox:", "tika:", "kreuzberg:") and wt.LAST6[-1] == "adobesamples:" and len(wt.LAST6) == 12
    )
    assert set(wt.LAST) >= set(EARLIER) | set(wt.LAST12)
    # a collection's prefix needs its colon: a source of another collection named alike keeps its hashed group
    assert not "pdfcpux:".startswith(wt.LAST12) and not "parsr2:some".startswith(wt.LAST12)
    assert wt.split_of("tabula:frx_2012_disclosure") == "heldout"


def test_reserved_names_of_round12_copies_stay_out() -> None:
    # Parsr's and invoice2data's copies named like camelot's test PDFs are never copied
    for name in ("column_span_1.pdf", "row_span.pdf", "foo.pdf", "camelot-example.pdf", "camelot-bol100649863.pdf"):
        assert wt.RESERVED.search(name)
    for name in ("demo-table.pdf", "compare_AmazonWebServices.pdf", "T4.pdf"):
        assert not wt.RESERVED.search(name)
