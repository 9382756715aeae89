"""A table cell named by its column header and its row label (``arr_coc.reading.matching.crossing``): the box on the
label's line under the header is kept first, however far down the table the row is, with a header that spans
sub-columns, without ruling lines; questions of other kinds get no table-cell evidence."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from arr_coc.reading import QueryMatcher, TextBox
from arr_coc.reading.config import ReadingConfig
from arr_coc.reading.matching.crossing import cross_cells, split_cell_query

# a table without ruling lines: "Deaths" spans "Incidence" and "Rate", "Births" spans the same two sub-headers
HEAD = [
    ("Year", (20, 20, 70, 40)),
    ("Deaths", (150, 5, 230, 22)),
    ("Births", (330, 5, 410, 22)),
    ("Incidence", (110, 25, 190, 42)),
    ("Rate", (210, 25, 250, 42)),
    ("Incidence", (290, 25, 370, 42)),
    ("Rate", (390, 25, 430, 42)),
]


def page(rows: int = 40) -> list[TextBox]:
    boxes = [TextBox(t, b) for t, b in HEAD]
    for r in range(rows):
        y = 50 + 20 * r
        year = str(1970 + r)
        boxes.append(TextBox(year, (20, y, 60, y + 15)))
        for k, x in enumerate((120, 210, 300, 390)):
            boxes.append(TextBox(f"{r}{k}{r % 7}.{k}", (x, y, x + 45, y + 15)))
    return boxes


def test_split() -> None:
    assert split_cell_query("In the 1985 row, what is the Deaths Incidence?") == [("Deaths Incidence", "1985")]
    assert split_cell_query("What is the Births Rate for 2001?") == [("Births Rate", "2001")]
    splits = split_cell_query("What is the Rate of Tax for Sales?")
    assert splits == [("Rate", "Tax for Sales"), ("Rate of Tax", "Sales")]
    assert split_cell_query("How much must be paid?") == []


def _lexical(m: QueryMatcher, boxes: list[TextBox]):
    return lambda p: m.lexical_scores(boxes, p)


def test_cell_far_down_under_a_spanning_header() -> None:
    boxes = page()
    m = QueryMatcher(semantic=False)
    for query, row, k in (
        ("In the 2005 row, what is the Deaths Incidence?", 35, 0),
        ("What is the Births Rate for 1972?", 2, 3),
        ("What is the Births Incidence for 2009?", 39, 2),
    ):
        ev = cross_cells(boxes, split_cell_query(query), _lexical(m, boxes))
        assert ev is not None and ev.rule == "table-cell", query
        cell = boxes[len(HEAD) + 5 * row + 1 + k]
        kept = [r for r, w in zip(ev.regions, ev.weights, strict=True) if w == 1.0]
        assert kept == [tuple(cell.box)], (query, ev.detail, kept, cell)


def test_evidence_is_kept_first_and_other_questions_unchanged() -> None:
    boxes = page()
    size, rows, cols = (460, 860), 43, 23
    m = QueryMatcher(semantic=False)
    rel, ev = m.relevance_and_evidence(boxes, "What is the Deaths Rate for 2003?", rows, cols, size)
    assert ev is not None and ev.rule == "table-cell"
    cell = boxes[len(HEAD) + 5 * 33 + 2].box
    r0, c0 = int((cell[1] + cell[3]) / 2 / size[1] * rows), int((cell[0] + cell[2]) / 2 / size[0] * cols)
    assert rel[r0, c0] == rel.max() == 1.0
    # a question that names no row and column: no table-cell evidence, the same map as with the rule off
    cfg = ReadingConfig()
    off = QueryMatcher(replace(cfg, structure=replace(cfg.structure, table_cells=False)), semantic=False)
    for query in ("What is the total?", "What is the name of the company that issued this receipt?"):
        a, ev = m.relevance_and_evidence(boxes, query, rows, cols, size)
        b, _ = off.relevance_and_evidence(boxes, query, rows, cols, size)
        assert ev is None or ev.rule != "table-cell"
        np.testing.assert_array_equal(a, b)
