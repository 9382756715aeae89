"""Round 4's table questions chosen by rule the way realdocs-dev's make_dev.py chose them by eye
(``benchmarks/weakspots_tables4.py``): header rows over a spanning header, the label column not always first."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from weakspots_tables4 import cap, data_like4, header_rows, label_column  # noqa: E402


def _rows(texts):
    """pdfplumber-like rows: a spanned cell (None in ``texts``) has no bbox."""
    return [SimpleNamespace(cells=[None if x is None else (0, 0, 1, 1) for x in r]) for r in texts]


def _strings(texts):
    return [["" if x is None else x for x in r] for r in texts]


def test_spanning_header_rows_join_and_title_row_left_out() -> None:
    # realdocs-dev's assam table: a title row, a label header + a spanning header, a span row, a sub-header row
    texts = [
        ["SCHOOLING STATUS", None, None, None, None],
        ["State / District", "Children attending school", None, None, None],
        [None, "Person", None, "Male", None],
        [None, "Total", "Rural", "Total", "Rural"],
        ["Assam", "87.1", "86.3", "86.0", "85.1"],
        ["Barpeta", "88.8", "88.6", "85.6", "85.3"],
        ["Cachar", "81.0", "80.2", "80.5", "79.9"],
    ]
    assert header_rows(_rows(texts), _strings(texts)) == ([1, 2, 3], 4)


def test_single_header_without_spans_and_letter_numbers_head() -> None:
    texts = [["", "Q1", "Q2", "Total"], ["2004", "34.7", "36.2", "70.9"], ["2005", "58.1", "63.4", "121.5"]]
    assert header_rows(_rows(texts), _strings(texts)) == ([0], 1)
    assert not data_like4(_strings(texts), 0) and data_like4(_strings(texts), 1)


def test_a_data_row_first_gives_no_header() -> None:
    texts = [["1", "12.5", "13.1"], ["2", "14.0", "15.2"], ["3", "16.1", "17.9"]]
    assert header_rows(_rows(texts), _strings(texts)) is None


def test_label_column_is_the_first_distinct_text_column() -> None:
    texts = [
        ["No", "Code", "Name", "Price"],
        ["1", "104", "Lignocaine", "30"],
        ["2", "105", "Halothane", "25"],
        ["3", "106", "Ketamine", "40"],
    ]
    assert label_column(_strings(texts), range(1, 4)) == 2
    same = [["Kind", "Value"], ["Felony", "1"], ["Felony", "2"], ["Felony", "3"]]
    assert label_column(same, range(1, 4)) is None  # repeated categories are no row labels
    years = [["Year", "Total"], ["2004", "1"], ["2005", "2"], ["2006", "3"]]
    assert label_column(years, range(1, 4)) == 0  # a year is a label, not a number


def test_cap_keeps_whole_sources_within_the_total() -> None:
    qs = [{"id": f"{s}{p}{i}", "source": s, "image": f"{s}{p}"} for s in "abcdef" for p in range(3) for i in range(2)]
    kept = cap(qs, seed=1, max_total=9)
    per_source = {}
    for q in kept:
        per_source.setdefault(q["source"], set()).add(q["image"])
    assert len(kept) <= 9 and all(len(v) == 2 for v in per_source.values()) and len(per_source) == 2
    assert kept == cap(qs, seed=1, max_total=9)


def test_a_header_reading_as_a_value_asks_nothing() -> None:
    from weakspots_tables4 import _number_header

    assert all(_number_header(s) for s in ("29.1", "21.32T", "131.44% 112.24%", "178"))
    assert not any(_number_header(s) for s in ("3-Year-Old Cohort", "2004", "Q1", "% of the area median income"))
