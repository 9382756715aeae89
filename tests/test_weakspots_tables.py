"""The real-table question generator's written criteria (benchmarks/weakspots_tables.py): a header row that looks
like a data row gives no question, a value that spells its own key is no question, groups are fixed by name."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import weakspots_tables as wt  # noqa: E402


def test_data_row_is_no_header():
    # tabula-java's offense.pdf: pdfplumber's table starts with a data row
    rows = [
        ["1", "Abuse and Other Offensive Conduct Child Abuse", "1-1639", "CR, §3- 601(b)(2)(ii)", "Felony", "Person"],
        ["2", "Abuse and Other Offensive Conduct Child Abuse", "1-0334", "CR, §3- 601(b)(2)(i)", "Felony", "Person"],
        ["2-1", "Abuse and Other Offensive Conduct Neglect", "1-0173", "CR, §3-601(d)", "Felony", "Person"],
    ]
    assert wt.data_like(rows, 0)
    assert wt.data_like([["12", "3,401", "7"], ["13", "3,402", "8"], ["14", "1,000", "9"]], 0)


def test_header_rows_pass():
    assert not wt.data_like([["Name", "Dept", "Salary"], ["Bob", "HR", "12"], ["Al", "IT", "15"]], 0)
    # years as column headers are headers
    assert not wt.data_like([["Region", "1985", "1990"], ["North", "12", "13"], ["South", "14", "15"]], 0)


def test_value_spelling_its_key():
    assert wt._stems("cell[2][4]") & wt._stems("cell[0][4]")
    assert not wt._stems("Formosa") & (wt._stems("Provincia") | wt._stems("BASTERRA, Luis Eugenio"))


def test_groups_fixed_by_name():
    assert wt.split_of("tabula:offense") == "heldout" and wt.split_of("tabula:china") == "dev"
    groups = {wt.split_of(f"pymupdf:test_{i}") for i in range(60)}
    assert groups == {"dev", "heldout", "last"}
    assert wt.split_of("pymupdf:test_3179") == wt.split_of("pymupdf:test_3179")
