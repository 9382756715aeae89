"""Round 6 of the table crossing (issue 40, ``arr_coc.reading.matching.crossing``): a row whose cells OCR reads
shifted off its label's line is still one row; a label spelled as printed beats a neighbour matching it loosely; a
value OCR joined to its row's label is the cell."""

from __future__ import annotations

from arr_coc.reading import QueryMatcher, TextBox
from arr_coc.reading.matching.crossing import cross_cells, split_cell_query


def _cross(boxes: list[TextBox], query: str):
    m = QueryMatcher(semantic=False)
    return cross_cells(boxes, split_cell_query(query), lambda p: m.lexical_scores(boxes, p))


def _texts(boxes: list[TextBox], ev) -> set[str]:
    cells = [tuple(r) for r, w in zip(ev.regions, ev.weights, strict=True) if w == 1.0]
    return {b.text for b in boxes if tuple(b.box) in cells}


def shifted_table() -> list[TextBox]:
    """A two-column key table whose right column OCR reads 26 px above the left (PyMuPDF's metadata table): no
    right cell overlaps its label by half a line."""
    keys = ["keywords", "title", "creationDate", "creator", "subject"]
    values = ["Keywords", "Title", "Date of creation", "Creating application", "Subject"]
    boxes = [TextBox(k, (85, 138 + 62 * i, 85 + 12 * len(k), 179 + 62 * i)) for i, k in enumerate(keys)]
    boxes += [TextBox(v, (560, 112 + 62 * i, 560 + 12 * len(v), 153 + 62 * i)) for i, v in enumerate(values)]
    return boxes


def test_row_read_shifted_off_its_labels_line() -> None:
    boxes = shifted_table()
    ev = _cross(boxes, "In the creator row, what is the Keywords?")
    assert ev is not None
    assert _texts(boxes, ev) == {"Creating application"}


def test_aligned_rows_keep_the_strict_line() -> None:
    """Where the strict line finds the crossing, the shifted pass never runs: the cell is on the label's line."""
    boxes = [TextBox(h, (200 + 150 * j, 20, 300 + 150 * j, 44)) for j, h in enumerate(["Rate", "Count"])]
    for i, lab in enumerate(["North", "South", "East"]):
        y = 60 + 30 * i
        boxes.append(TextBox(lab, (40, y, 120, y + 24)))
        boxes += [TextBox(f"{i}{j}.5", (200 + 150 * j, y, 260 + 150 * j, y + 24)) for j in range(2)]
    ev = _cross(boxes, "What is the Count for South?")
    assert ev is not None
    assert _texts(boxes, ev) == {"11.5"}


def district_table(join_label: bool = True) -> list[TextBox]:
    """Districts whose names differ in a few letters; OCR joins the Southern row's label and first value."""
    heads = ["Population", "Area", "Density"]
    boxes = [TextBox(h, (300 + 120 * j, 20, 380 + 120 * j, 40)) for j, h in enumerate(heads)]
    for i, lab in enumerate(["Northern district", "Southern district", "Eastern district", "Western district"]):
        y = 60 + 30 * i
        vals = [f"{i + 1}{i + 2},{i}5{i}", f"{i + 3}.{i}", f"{i + 4}{i}"]
        if join_label and i == 1:
            boxes.append(TextBox(f"{lab} {vals[0]}", (40, y, 370, y + 20)))
            boxes += [TextBox(vals[j], (300 + 120 * j, y, 370 + 120 * j, y + 20)) for j in (1, 2)]
        else:
            boxes.append(TextBox(lab, (40, y, 200, y + 20)))
            boxes += [TextBox(vals[j], (300 + 120 * j, y, 370 + 120 * j, y + 20)) for j in range(3)]
    return boxes


def test_label_spelled_beats_a_neighbour_matching_loosely() -> None:
    boxes = district_table()
    ev = _cross(boxes, "What is the Area for Southern district?")
    assert ev is not None
    assert _texts(boxes, ev) == {"4.1"}


def test_value_joined_to_its_label_is_the_cell() -> None:
    boxes = district_table()
    ev = _cross(boxes, "What is the Population for Southern district?")
    assert ev is not None
    (cell,) = [r for r, w in zip(ev.regions, ev.weights, strict=True) if w == 1.0]
    x0, y0, x1, y1 = cell
    assert (y0, y1) == (90, 110)
    assert 250 < x0 < 300 and x1 == 370  # the value's part of "Southern district 23,151", under "Population"


def test_label_joined_to_words_is_not_cut() -> None:
    """Only a number or amount after the label is a joined cell: "Total" does not cut "Total operating costs"."""
    boxes = [TextBox(h, (300 + 120 * j, 20, 380 + 120 * j, 40)) for j, h in enumerate(["2020", "2021"])]
    for i, lab in enumerate(["Total", "Total operating costs", "Other"]):
        y = 60 + 30 * i
        boxes.append(TextBox(lab, (40, y, 240, y + 20)))
        boxes += [TextBox(f"{i}{j}.5", (300 + 120 * j, y, 360 + 120 * j, y + 20)) for j in range(2)]
    ev = _cross(boxes, "What is the 2021 for Total?")
    assert ev is not None
    assert _texts(boxes, ev) == {"01.5"}
