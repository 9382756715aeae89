"""Round 3 of the multi-column section questions (issue 40): a long unquoted section name, a gutter that a figure's
labels cross, a margin stamp's strip, body-size lines the layout joined to a footnote; and the ground-truth
builder's written criteria (``benchmarks/weakspots_sections.py``: run-in heads, table rows, small caps)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from arr_coc.reading.layout.sections import line_columns, long_section_name, named_extent
from arr_coc.reading.layout.structural_query import parse
from arr_coc.reading.layout.structure import analyse
from tests.test_sections import _page


def test_a_long_unquoted_section_name_is_parsed_only_with_a_section_question():
    q = "What is the next word after 'align' in the RQ3: Is it useful to align summary units section?"
    sq = parse(q)
    assert sq.after == "align" and sq.named == "rq3: is it useful to align summary units"
    assert long_section_name("in the left section") is None
    assert parse("What is the total in the payment summary of the invoice section?").named is None  # no section ask
    assert parse("What is the next word after 'x' in the Run-time Efficiency section?").named == "run-time efficiency"


def test_figure_labels_across_the_gutter_do_not_hide_the_columns():
    boxes = _page()
    # a figure's short labels straddling the gutter above the text (as many as a fifth of the narrow lines)
    labels = [(f"label {k}", (400, 10 + 22 * k, 600, 28 + 22 * k)) for k in range(4)]
    layout = analyse(labels + [(t, (b[0], b[1] + 100, b[2], b[3] + 100)) for t, b in boxes])
    cols = line_columns(layout)
    by_text = {ln.text: c for ln, c in zip(layout.lines, cols, strict=True)}
    assert by_text["Harbour"] != by_text["Festivals"] >= 0
    ext = named_extent(layout, "Later Years")
    assert ext is not None and any("1931" in layout.lines[i].text for i in ext.lines)


def test_a_margin_stamp_is_no_column():
    stamp = [(c, (5, 120 + 30 * k, 25, 140 + 30 * k)) for k, c in enumerate("arXiv:2302")]
    layout = analyse(stamp + _page())
    ext = named_extent(layout, "Later Years")
    assert ext is not None
    texts = [layout.lines[i].text for i in ext.lines]
    assert any(t.startswith("In 1931") for t in texts) and not any("1887" in t for t in texts)


def _builder():
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "weakspots_sections.py"
    spec = importlib.util.spec_from_file_location("weakspots_sections", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _line(texts: list[str], bold: list[bool], top: float, col: int = 0, heading: bool = False, x0: float = 50.0):
    words, x = [], x0
    for t, b in zip(texts, bold, strict=True):
        words.append(
            {"text": t, "x0": x, "x1": x + 6 * len(t), "top": top, "bottom": top + 10, "size": 10.0,
             "fontname": "Times-Bold" if b else "Times-Roman"}
        )  # fmt: skip
        x += 6 * len(t) + 3
    title = " ".join(texts)
    return {"words": words, "col": col, "top": top, "text": title, "title": title, "spans": False,
            "heading": heading, "body": not heading}  # fmt: skip


def test_builder_criteria_run_in_head_table_row_small_caps():
    w = _builder()
    lines = [
        _line(["Long-form", "summaries", "are", "rarely", "evaluated", "by"], [True] * 6, 100, heading=True),
        _line(["humans.", "We", "find", "that"], [True, False, False, False], 112),
        _line(["Dataset", "Train"], [True, True], 140, heading=True),
        _line(["NQ", "79,168"], [False, False], 152),
        _line(["Open", "IE", "in", "T", "EXT", "R", "UNNER"], [True] * 7, 180, heading=True),
        _line(["This", "section", "describes"], [False] * 3, 192),
    ]
    lines[3]["words"][1]["x0"] += 60  # a table row: a gap wider than 1.5 heights
    lines[3]["words"][1]["x1"] += 60
    w._heading_criteria(lines, 10.0)
    assert not lines[0]["heading"] and lines[0]["body"]  # a run-in head: its paragraph's body
    assert not lines[2]["heading"] and not lines[3]["body"]  # a header row above a table row; the row
    assert lines[4]["heading"] and lines[4]["smallcaps"]  # asks no question
