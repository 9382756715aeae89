"""Grids whose cells differ from their keys only in a letter or a digit (issue 40, round 5,
``arr_coc.reading.matching.crossing``): a chessboard's squares, colour-test formulas, a month that is a stop word."""

from __future__ import annotations

from arr_coc.reading import QueryMatcher, TextBox
from arr_coc.reading.matching.crossing import cross_cells, split_cell_query


def _cross(boxes: list[TextBox], query: str):
    m = QueryMatcher(semantic=False)
    return cross_cells(boxes, split_cell_query(query), lambda p: m.lexical_scores(boxes, p))


def _cells(ev) -> list[tuple]:
    return [r for r, w in zip(ev.regions, ev.weights, strict=True) if w == 1.0]


def board(files: str = "abcdef", ranks: range = range(6, 0, -1)) -> list[TextBox]:
    """Every square printed with its name; the first row is read as the header, the first column as the labels."""
    return [
        TextBox(f"{f}{r}", (40 + 60 * j, 40 + 30 * i, 70 + 60 * j, 55 + 30 * i))
        for i, r in enumerate(ranks)
        for j, f in enumerate(files)
    ]


def test_chessboard_square() -> None:
    boxes = board()
    ev = _cross(boxes, "What is the e6 for a3?")
    assert ev is not None
    (cell,) = _cells(ev)
    assert next(b.text for b in boxes if tuple(b.box) == tuple(cell)) == "e3"


def formula_grid() -> tuple[list[TextBox], list[str], list[str]]:
    """A colour-test grid: each cell "R, G, B =" and its numbers, read by OCR as two boxes."""
    rows, cols = ["0.82", "0.66", "0.87", "0.97"], ["0.10", "0.86", "0.99"]
    boxes = []
    for i, r in enumerate(["0.15", *rows]):
        for j, c in enumerate(["0.05", *cols]):
            x, y = 40 + 260 * j, 40 + 36 * i
            boxes.append(TextBox("R, G, B =", (x, y, x + 90, y + 20)))
            boxes.append(TextBox(f"{r}, {c}, 0.81", (x + 92, y, x + 240, y + 20)))
    return boxes, rows, cols


def test_formula_cell_that_shares_digits_with_its_label() -> None:
    boxes, _, _ = formula_grid()
    ev = _cross(boxes, "In the R, G, B = 0.66, 0.05, 0.81 row, what is the R, G, B = 0.15, 0.86, 0.81?")
    assert ev is not None
    texts = {next(b.text for b in boxes if tuple(b.box) == tuple(c)) for c in _cells(ev)}
    assert "0.66, 0.86, 0.81" in texts
    assert all("0.82" not in t and "0.87" not in t for t in texts)


def test_month_header_is_found_whole() -> None:
    heads = ["Region", "Apr", "May", "Jun"]
    boxes = [TextBox(h, (40 + 100 * j, 20, 90 + 100 * j, 38)) for j, h in enumerate(heads)]
    for i, lab in enumerate(["North area", "South area", "East area"]):
        y = 50 + 24 * i
        boxes.append(TextBox(lab, (40, y, 130, y + 18)))
        boxes += [TextBox(str(100 * i + j), (150 + 100 * (j - 1), y, 185 + 100 * (j - 1), y + 18)) for j in (1, 2, 3)]
    ev = _cross(boxes, "In the South area row, what is the May?")
    assert ev is not None
    (cell,) = _cells(ev)
    assert next(b.text for b in boxes if tuple(b.box) == tuple(cell)) == "102"


def test_label_whose_numbers_come_in_another_order_elsewhere() -> None:
    """OCR reads a colour test's cells run into their neighbours ("0.00, 0.75, 0.00 A, B, C ="); the label
    "= 0.00, 0.00, 0.75" is the box with those numbers in that order, not its anagram two rows up."""
    rows = ["0.00, 0.75, 0.00", "0.35, 0.00, 0.00", "0.00, 0.00, 0.75", "0.50, 0.50, 0.50"]
    cols = ["0.90, 0.00, 0.00", "0.00, 0.90, 0.00"]
    vals = [
        ["0.10, 0.10, 0.10", "0.20, 0.00, 0.00"],
        ["0.30, 0.30, 0.30", "0.00, 0.40, 0.00"],
        ["0.60, 0.60, 0.60", "0.00, 0.00, 0.70"],
        ["0.80, 0.00, 0.00", "0.95, 0.95, 0.95"],
    ]
    boxes = [TextBox("A, B, C =", (40, 40, 130, 60))]
    boxes += [
        TextBox(f"{c} A, B, C =", (130 + 240 * j, 40, 370 + 240 * j, 60))
        for j, c in enumerate(["0.00, 0.00, 0.00", cols[0]])
    ]
    boxes.append(TextBox(cols[1], (610, 40, 760, 60)))
    for i, r in enumerate(rows):
        y = 76 + 36 * i
        boxes.append(TextBox("A, B, C =", (40, y, 130, y + 20)))
        texts = [r, *vals[i]]
        for j, t in enumerate(texts):
            tail = " A, B, C =" if j < len(texts) - 1 else ""
            boxes.append(TextBox(t + tail, (130 + 240 * j, y, 370 + 240 * j - (0 if tail else 90), y + 20)))
    ev = _cross(boxes, "In the A, B, C = 0.00, 0.00, 0.75 row, what is the A, B, C = 0.00, 0.90, 0.00?")
    assert ev is not None
    texts = {next(b.text for b in boxes if tuple(b.box) == tuple(c)) for c in _cells(ev)}
    assert "0.00, 0.00, 0.70" in texts and all(t.split(" A")[0] in vals[2] for t in texts), texts
