"""Layout analysis on hand-made OCR boxes: exact lines, columns, roles, sections, title, reading order, chart parts,
tables (exact grids, header cells), and tables on the document generator's own text boxes."""

from __future__ import annotations

import json
import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arr_coc.evaluation import docgen
from arr_coc.reading.layout.structure import PageLayoutConfig, analyse, as_pairs, flat_layout

# Boxes at 10 px per character, 30 px line pitch, boxes 36 px tall (detectors pad: consecutive lines overlap by 6 px),
# as an OCR engine returns them for a two-column page.
CW = 10


def _b(text: str, x: float, y: float, cw: float = CW, h: float = 36) -> tuple[str, tuple[float, float, float, float]]:
    return text, (x, y, x + cw * len(text), y + h)


TITLE = _b("Notes on Rivers", 60, 20, cw=26, h=60)
LEFT = [
    _b("Origins", 60, 120, cw=16, h=40),  # heading: 1.6x the body's width per character
    _b("The first town grew where the", 60, 162),
    _b("river met the ability to trade", 60, 192),
    _b("goods with the hill farms.", 60, 222),
    _b("Ferries", 60, 300, cw=16, h=40),
    _b("Boats crossed the water at dawn", 60, 342),
    _b("and returned each night.", 60, 372),
]
RIGHT = [
    _b("Mills", 420, 120, cw=16, h=40),
    _b("Water turned the wheels of two", 420, 162),
    _b("mills until the flood came.", 420, 192),
    _b("Bridges", 420, 270, cw=16, h=40),
    _b("A stone bridge replaced the", 420, 312),
    _b("ferry in the end.", 420, 342),
]
FOOT = [_b("1 Parish records.", 60, 560, cw=7, h=20)]
PAGE = [TITLE, *LEFT, *RIGHT, *FOOT]


def test_two_column_page_exact_structure() -> None:
    layout = analyse(PAGE)
    assert len(layout.columns) == 2
    assert layout.columns[0][1] < 420 and layout.columns[1][0] > 60 + CW * 31  # the cut lies in the gutter
    assert [layout.line_text(i) for i in layout.title] == ["Notes on Rivers"]
    roles = [(b.role, b.column, layout.block_text(k)) for k, b in enumerate(layout.blocks)]
    assert roles == [
        ("title", -1, "Notes on Rivers"),
        ("heading", 0, "Origins"),
        ("paragraph", 0, "The first town grew where the river met the ability to trade goods with the hill farms."),
        ("heading", 0, "Ferries"),
        ("paragraph", 0, "Boats crossed the water at dawn and returned each night."),
        ("footnote", 0, "1 Parish records."),
        ("heading", 1, "Mills"),
        ("paragraph", 1, "Water turned the wheels of two mills until the flood came."),
        ("heading", 1, "Bridges"),
        ("paragraph", 1, "A stone bridge replaced the ferry in the end."),
    ]
    heads = [(layout.block_text(s.heading), s.column) for s in layout.sections]
    assert heads == [("Origins", 0), ("Ferries", 0), ("Mills", 1), ("Bridges", 1)]


def test_reading_order_words_cross_line_breaks_and_columns() -> None:
    layout = analyse(list(reversed(PAGE)))  # input order does not matter
    words = [w.text for w in layout.words]
    assert words[:4] == ["Notes", "on", "Rivers", "Origins"]
    i = words.index("ability")
    assert words[i : i + 4] == ["ability", "to", "trade", "goods"]  # "trade" ends a line, "goods" starts the next
    assert words.index("Mills") > words.index("night.")  # the left column is read before the right one
    # word boxes are interpolated by character position inside their OCR box
    trade = layout.words[i + 2]
    text, (x0, _, _, _) = _b("river met the ability to trade", 60, 192)
    assert trade.box[0] == pytest.approx(x0 + CW * text.index("trade"))
    assert trade.box[2] == pytest.approx(x0 + CW * (text.index("trade") + 5))


def test_sections_survive_taller_boxes() -> None:
    """A slightly rotated scan makes long lines' boxes taller; width per character still finds the headings."""
    tall = [(t, (b[0], b[1] - 6, b[2], b[3] + 6)) if len(t) > 20 else (t, b) for t, b in PAGE]
    layout = analyse(tall)
    assert [layout.block_text(s.heading) for s in layout.sections] == ["Origins", "Ferries", "Mills", "Bridges"]


def test_key_value_lines_stay_apart_from_the_next_column() -> None:
    boxes = [_b("Total:", 60, 100), _b("$12.00", 130, 100), _b("Date:", 700, 100), _b("2024-01-03", 760, 100)]
    layout = analyse(boxes)
    assert sorted(ln.text for ln in layout.lines) == ["2024-01-03", "Date:", "Total: $12.00"] or sorted(
        ln.text for ln in layout.lines
    ) == ["Date: 2024-01-03", "Total: $12.00"]
    assert not any("Total" in ln.text and "Date" in ln.text for ln in layout.lines)


def test_chart_values_and_labels() -> None:
    boxes = [
        _b("Monthly visitors", 300, 20, cw=20, h=40),
        _b("139", 100, 300),
        _b("314", 200, 150),
        _b("Jan", 100, 500),
        _b("Feb", 200, 500),
        _b("$1,250.00", 300, 300),
        _b("Series A", 400, 60),
    ]
    layout = analyse(boxes)
    assert [layout.boxes[i][0] for i in layout.values] == ["139", "314", "$1,250.00"]
    assert [layout.boxes[i][0] for i in layout.labels] == ["Jan", "Feb", "Series A"]  # the title is not a label


def test_flat_layout_has_no_structure() -> None:
    layout = flat_layout(PAGE)
    assert layout.title == () and len(layout.blocks) == len(PAGE) and len(layout.columns) == 1
    assert all(s.heading is None for s in layout.sections)
    assert flat_layout(TABLE).tables == [] and flat_layout(TABLE).headers_of(4) == ()  # no tables either
    assert [w.text for w in layout.words][:3] == ["Notes", "on", "Rivers"]  # input order


def test_empty_and_bad_input() -> None:
    assert analyse([]).blocks == [] and flat_layout([]).words == []
    with pytest.raises(TypeError, match="text"):
        as_pairs([42])
    assert as_pairs([("a", (5, 6, 1, 2))]) == [("a", (1.0, 2.0, 5.0, 6.0))]  # corners sorted


def test_config_is_used() -> None:
    # with a gutter wider than the page's, the two columns merge into one
    layout = analyse(PAGE, PageLayoutConfig(gutter_min=100.0))
    assert len(layout.columns) == 1


# ------------------------------------------------------------------------------------------------------- tables

# A 4x3 table: a header row ("Region", "Q1", "Q2") and row labels; numbers right-aligned under left-aligned heads.
TABLE = [
    _b("Region", 60, 100),
    _b("Q1", 260, 100),
    _b("Q2", 400, 100),
    _b("North", 60, 140),
    _b("1,200", 250, 140),
    _b("980", 400, 140),
    _b("South", 60, 180),
    _b("860", 260, 180),
    _b("1,410", 390, 180),
    _b("West", 60, 220),
    _b("455", 260, 220),
    _b("37", 400, 220),
]


def _texts(layout, idx) -> list[str | None]:
    return [None if i is None else layout.boxes[i][0] for i in idx]


def test_table_grid_header_row_and_row_labels() -> None:
    layout = analyse(TABLE)
    assert len(layout.tables) == 1
    t = layout.tables[0]
    assert t.cells == ((0, 1, 2), (3, 4, 5), (6, 7, 8), (9, 10, 11))
    assert (t.header_row, t.header_col) == (0, 0)
    assert t.columns == ((60, 120), (250, 300), (390, 440)) and t.box == (60, 100, 440, 256)
    assert layout.cell_of(7) == (0, 2, 1) and layout.cell_of(0) == (0, 0, 0)
    assert _texts(layout, layout.headers_of(7)) == ["South", "Q1"]  # row header, then column header
    assert _texts(layout, layout.headers_of(11)) == ["West", "Q2"]
    assert layout.headers_of(1) == () and layout.headers_of(3) == ()  # header cells have no headers
    summary = json.loads(json.dumps(layout.summary()))
    assert summary["tables"][0]["cells"][2] == ["South", "860", "1,410"]
    assert summary["tables"][0]["header_row"] == 0 and summary["tables"][0]["header_col"] == 0


def test_table_with_empty_cells_and_a_shorter_header_row() -> None:
    """No corner label, headers centred above right-aligned numbers (they overlap no number), one empty cell."""
    boxes = [
        _b("Mass", 285, 100),
        _b("Price", 430, 100),  # centred over columns ending at 340 and 480
        _b("Bolt", 60, 140),
        _b("0.5", 310, 140),
        _b("12.0", 440, 140),
        _b("Nut", 60, 180),
        _b("4.25", 440, 180),  # no mass
        _b("Washer", 60, 220),
        _b("0.1", 310, 220),
        _b("3.75", 440, 220),
    ]
    layout = analyse(boxes)
    assert len(layout.tables) == 1
    t = layout.tables[0]
    assert t.cells == ((None, 0, 1), (2, 3, 4), (5, None, 6), (7, 8, 9))
    assert (t.header_row, t.header_col) == (0, 0)
    assert _texts(layout, layout.headers_of(6)) == ["Nut", "Price"]
    assert _texts(layout, layout.headers_of(8)) == ["Washer", "Mass"]


def _invoice() -> list[tuple[str, tuple[float, float, float, float]]]:
    rows = [
        ("Server rental", "2", "120.00", "240.00"),
        ("Design review", "1", "80.50", "80.50"),
        ("Cable set", "12", "3.10", "37.20"),
        ("Support plan", "3", "45.00", "135.00"),
    ]
    boxes = [
        _b("Invoice 2231", 60, 20, cw=20, h=50),
        _b("Description", 60, 120),
        _b("Qty", 400, 120),
        _b("Unit", 500, 120),
        _b("price", 545, 120),
        _b("Amount", 700, 120),
    ]  # the OCR split "Unit price" into words
    for k, (d, q, u, a) in enumerate(rows):
        y = 160 + 30 * k
        boxes += [_b(d, 60, y), _b(q, 400, y), _b(u, 500, y), _b(a, 760 - CW * len(a), y)]  # amounts right-aligned
    boxes += [
        _b("Subtotal:", 500, 300),
        _b("$492.70", 700, 300),
        _b("Tax:", 500, 330),
        _b("$49.27", 700, 330),
        _b("Total:", 500, 360),
        _b("$541.97", 700, 360),
    ]
    y = 420
    for _ in range(4):  # fine print, one box a word (word-level OCR), small text across the table's columns
        x = 60
        for word in "Payment is due within thirty days of the invoice date and late fees may apply to all".split():
            boxes.append(_b(word, x, y, cw=7, h=20))
            x += 7 * len(word) + 5
        y += 24
    return boxes


def test_invoice_table_totals_and_fine_print() -> None:
    boxes = _invoice()
    layout = analyse(boxes)
    assert len(layout.tables) == 2
    items, totals = layout.tables
    grid = [
        [None if i is None else " ".join(_texts(layout, items.cell_boxes(r, c))) for c, i in enumerate(row)]
        for r, row in enumerate(items.cells)
    ]
    assert grid == [
        ["Description", "Qty", "Unit price", "Amount"],
        ["Server rental", "2", "120.00", "240.00"],
        ["Design review", "1", "80.50", "80.50"],
        ["Cable set", "12", "3.10", "37.20"],
        ["Support plan", "3", "45.00", "135.00"],
    ]
    assert (items.header_row, items.header_col) == (0, 0)
    unit = boxes.index(_b("3.10", 500, 220))
    assert _texts(layout, layout.headers_of(unit)) == ["Cable set", "Unit", "price"]  # the whole header cell
    assert layout.cell_of(boxes.index(_b("price", 545, 120))) == (0, 0, 2)  # every word of a cell maps to it
    assert [[layout.boxes[i][0] for i in row] for row in totals.cells] == [
        ["Subtotal:", "$492.70"],
        ["Tax:", "$49.27"],
        ["Total:", "$541.97"],
    ]
    assert (totals.header_row, totals.header_col) == (None, 0)  # a key/value stack: the key is the row header
    assert _texts(layout, layout.headers_of(boxes.index(_b("$541.97", 700, 360)))) == ["Total:"]
    fine = [i for i, (_, b) in enumerate(boxes) if b[1] >= 420]
    assert len(fine) > 40 and all(layout.cell_of(i) is None and layout.headers_of(i) == () for i in fine)


def test_cramped_header_words_split_at_the_body_columns() -> None:
    """Word-level OCR: "Unit", "price" and "Amount" lie a space apart (one phrase) but over two body columns."""
    boxes = [_b("Item", 60, 100), _b("Unit", 300, 100), _b("price", 345, 100), _b("Amount", 400, 100)]
    for k, (item, unit, amount) in enumerate([("Bolts", "0.25", "1,200.00"), ("Nuts", "0.10", "30.00")]):
        y = 140 + 30 * k
        boxes += [_b(item, 60, y), _b(unit, 300, y), _b(amount, 480 - CW * len(amount), y)]
    layout = analyse(boxes)
    assert [(t.cells, t.header_row, t.header_col) for t in layout.tables] == [(((0, 1, 3), (4, 5, 6), (7, 8, 9)), 0, 0)]
    assert layout.tables[0].cell_boxes(0, 1) == (1, 2)  # "Unit price"
    assert _texts(layout, layout.headers_of(6)) == ["Bolts", "Amount"]
    assert _texts(layout, layout.headers_of(8)) == ["Nuts", "Unit", "price"]


def test_prose_and_a_lone_key_value_line_are_not_tables() -> None:
    assert analyse(PAGE).tables == []  # two columns of prose lines side by side share baselines, not a table
    layout = analyse([_b("Total:", 60, 100), _b("$12.00", 200, 100), _b("Thank you.", 60, 200)])
    assert layout.tables == [] and layout.headers_of(1) == () and layout.cell_of(1) is None


def test_aligned_words_of_two_text_columns_are_not_a_table() -> None:
    """A paragraph's last word in each column, then a heading in each: two rows of two short cells, no header."""
    boxes = [
        _b("workshop.", 60, 100),
        _b("museum.", 420, 100),
        _b("The Harbour", 60, 140, cw=14, h=40),
        _b("Farming", 420, 140, cw=14, h=40),
    ]
    assert analyse(boxes).tables == []


def test_capital_labels_above_values_are_column_headers() -> None:
    """A form's fields: labels in capitals on one line, the values below them."""
    boxes = [
        _b("APPLICANT", 60, 100, cw=8, h=24),
        _b("CITY", 300, 100, cw=8, h=24),
        _b("BORN", 500, 100, cw=8, h=24),
        _b("Jonas Schmidt", 60, 130),
        _b("Tampere", 300, 130),
        _b("15 Feb 1983", 500, 130),
    ]
    layout = analyse(boxes)
    assert [(t.cells, t.header_row, t.header_col) for t in layout.tables] == [(((0, 1, 2), (3, 4, 5)), 0, None)]
    assert layout.headers_of(3) == (0,) and layout.headers_of(5) == (2,)  # a single body row has no row labels


@pytest.mark.parametrize("seed", range(8))
def test_a_header_set_apart_heads_a_text_table_and_jitter_does_not(seed: int) -> None:
    """Text only, one font: the first row is a header when it stands 1.7 pitches above the body, not when the
    rows are evenly spaced and merely jittered by +-3 px (up to 1.25 pitches: (30 + 6) / (30 - 1.2))."""

    def page(first_gap: float):
        rows = [
            ("Owner", "Room"),
            ("Ada Byron", "North hall"),
            ("Alan Kay", "South wing"),
            ("Grace Hopper", "Lab"),
            ("Edsger Dijkstra", "Attic"),
        ]
        boxes, y = [], 100.0
        for k, (a, b) in enumerate(rows):
            boxes += [_b(a, 60, y), _b(b, 300, y)]
            y += first_gap if k == 0 else 30
        return _distort(boxes, seed)

    apart, even = analyse(page(51)), analyse(page(30))
    assert [(t.cells, t.header_row) for t in apart.tables] == [(tuple((2 * k, 2 * k + 1) for k in range(5)), 0)]
    assert even.tables == []  # nothing names the cells: no header row, no label column


def test_key_value_stack_is_a_two_column_table_with_row_labels() -> None:
    boxes = [
        _b("Name:", 60, 100),
        _b("Ada Byron", 200, 100),
        _b("City:", 60, 140),
        _b("London", 200, 140),
        _b("Born:", 60, 180),
        _b("1815", 200, 180),
    ]
    layout = analyse(boxes)
    assert len(layout.tables) == 1
    t = layout.tables[0]
    assert t.cells == ((0, 1), (2, 3), (4, 5)) and (t.header_row, t.header_col) == (None, 0)
    assert layout.headers_of(1) == (0,) and layout.headers_of(5) == (4,) and layout.headers_of(0) == ()


def test_ocr_key_value_boxes_that_touch_or_overlap() -> None:
    """The OCR cuts a line after "Key:" at an interpolated x, so a key's box may reach into its value's by a few px;
    the keys vary in length, the values start where their key ends. Still a key column and a value column."""
    boxes = [
        _b("PO ref:", 60, 100),
        ("R429655", (128, 100, 198, 136)),
        _b("Doc. number:", 60, 134),
        ("290/6093", (176, 134, 256, 170)),  # overlaps its key by 4 px
        _b("Dated:", 60, 168),
        ("August 9, 2020", (121, 168, 261, 204)),
    ]  # touches its key
    layout = analyse(boxes)
    assert [(t.cells, t.header_row, t.header_col) for t in layout.tables] == [(((0, 1), (2, 3), (4, 5)), None, 0)]
    assert layout.headers_of(3) == (2,) and layout.headers_of(5) == (4,)


def _distort(boxes, seed: int, angle_deg: float = 0.0, jitter: float = 3.0):
    """Rotate the boxes' corners about (400, 300) by ``angle_deg`` (their axis-aligned hull) and move every
    coordinate by up to ``jitter`` px."""
    rng = random.Random(seed)
    a = math.radians(angle_deg)
    out = []
    for text, (x0, y0, x1, y1) in boxes:
        pts = [(x - 400, y - 300) for x, y in ((x0, y0), (x1, y0), (x0, y1), (x1, y1))]
        xs = [400 + x * math.cos(a) - y * math.sin(a) for x, y in pts]
        ys = [300 + x * math.sin(a) + y * math.cos(a) for x, y in pts]
        out.append((text, tuple(v + rng.uniform(-jitter, jitter) for v in (min(xs), min(ys), max(xs), max(ys)))))
    return out


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("angle", [0.0, 0.5, -0.5])
def test_tables_survive_jitter_and_slight_rotation(seed: int, angle: float) -> None:
    for boxes in (TABLE, _invoice()):
        clean, noisy = analyse(boxes), analyse(_distort(boxes, seed, angle))
        assert [(t.cells, t.header_row, t.header_col) for t in noisy.tables] == [
            (t.cells, t.header_row, t.header_col) for t in clean.tables
        ]


def _docgen_built(split: str, kind: str, index: int):
    """The generator's drawing of a sample (every text item it drew, with its exact box), as ``make_sample`` draws
    it before the scan look."""
    para = index % docgen.PARAPHRASE_EVERY == 1
    for attempt in range(docgen.MAX_ATTEMPTS):
        rng = random.Random(f"arr-coc-docgen|{split}|{kind}|{index}|0|{attempt}")
        built = docgen.BUILDERS[kind](rng, split, para)
        if not built.unique or docgen._occurrences(built.canvas.all_text(), built.answer) == 1:
            return built
    raise AssertionError("no draw")


@pytest.mark.parametrize("split,index", [("dev", 0), ("dev", 1), ("dev", 2), ("dev", 3), ("test", 0), ("test", 1)])
def test_docgen_table_answer_headers(split: str, index: int) -> None:
    """On the generator's own text boxes the answer cell's headers are its row label and its column header."""
    built = _docgen_built(split, "table", index)
    items = built.canvas.items
    layout = analyse(items)
    heads = _texts(layout, layout.headers_of(items.index((built.answer, built.box))))
    assert len(heads) == 2 and heads[0] in built.query  # the row label is always named
    assert built.paraphrased or heads[1] in built.query  # the column header when the question is literal
    row_label = next(t for t, b in items if b[1] <= built.box[3] and b[3] >= built.box[1] and b[0] < built.box[0])
    assert heads[0] == row_label


@pytest.mark.parametrize("split,index", [("dev", 0), ("dev", 1), ("dev", 2), ("test", 0), ("test", 1)])
def test_docgen_invoice_line_items(split: str, index: int) -> None:
    """The line items form a table under their header; each amount's headers are its description and the amount
    column's header; the totals' keys label their values; fine print joins no table."""
    items = _docgen_built(split, "invoice", index).canvas.items
    layout = analyse(items)
    heads = (
        ["Description", "Qty", "Unit price", "Amount"] if split == "dev" else ["Item", "Units", "Rate", "Line total"]
    )
    table = next(t for t in layout.tables if _texts(layout, t.cells[0]) == heads)
    assert (table.header_row, table.header_col) == (0, 0) and len(table.cells) >= 4
    for row in table.cells[1:]:
        assert None not in row
        assert _texts(layout, layout.headers_of(row[3])) == [items[row[0]][0], heads[3]]
    below = [t for t in layout.tables if t.box[1] > table.box[3]]
    assert len(below) == 1  # the totals: a key/value stack of their own
    totals = below[0]
    assert (totals.header_row, totals.header_col) == (None, 0) and len(totals.cells) == 3
    for key, value in totals.cells:
        assert items[key][0].endswith(":") and layout.headers_of(value) == (key,)
    after = range(max(totals.cells[-1]) + 1, len(items))  # drawn after the totals: notes and fine print (a box a word)
    assert all(layout.cell_of(i) is None for i in after)


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_tables_do_not_depend_on_input_order(data) -> None:
    n_rows = data.draw(st.integers(2, 6))
    n_cols = data.draw(st.integers(2, 5))
    boxes = []
    for r in range(n_rows):
        for c in range(n_cols):
            if r > 0 and c > 1 and data.draw(st.booleans()) and data.draw(st.booleans()):
                continue  # an empty cell now and then (a row keeps two cells: a table row has two or more)
            text = f"Row{r}" if c == 0 else (f"Col{c}" if r == 0 else str(data.draw(st.integers(0, 99999))))
            boxes.append(
                _b(text, 60 + 150 * c + data.draw(st.integers(-3, 3)), 100 + 30 * r + data.draw(st.integers(-3, 3)))
            )
    boxes.append(_b("A closing sentence below the table, long enough to be prose.", 60, 140 + 30 * n_rows))
    perm = data.draw(st.permutations(range(len(boxes))))
    shuffled = [boxes[k] for k in perm]  # shuffled[j] = boxes[perm[j]]
    a, b = analyse(boxes), analyse(shuffled)

    def mapped(layout, to_orig):
        return [
            (
                tuple(tuple(None if i is None else to_orig(i) for i in row) for row in t.cells),
                t.header_row,
                t.header_col,
            )
            for t in layout.tables
        ]

    assert mapped(a, lambda i: i) == mapped(b, lambda j: perm[j])
    assert len(a.tables) == 1 and a.tables[0].header_row == 0  # the grid, whole; row labels need two body rows
    assert a.tables[0].header_col == (0 if n_rows >= 3 else None)
    assert sorted(i for row in a.tables[0].cells for i in row if i is not None) == list(range(len(boxes) - 1))
    for layout in (a, b):
        for i in range(len(boxes)):
            assert i not in layout.headers_of(i)
            where = layout.cell_of(i)
            assert where is None or layout.tables[where[0]].cells[where[1]][where[2]] == i
