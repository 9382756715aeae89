"""Layout analysis on hand-made OCR boxes: exact lines, columns, roles, sections, title, reading order, chart parts."""

from __future__ import annotations

import pytest

from arr_coc.structure import LayoutConfig, analyse, as_pairs, flat_layout

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
    assert words[i:i + 4] == ["ability", "to", "trade", "goods"]  # "trade" ends a line, "goods" starts the next
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
        ln.text for ln in layout.lines) == ["Date: 2024-01-03", "Total: $12.00"]
    assert not any("Total" in ln.text and "Date" in ln.text for ln in layout.lines)


def test_chart_values_and_labels() -> None:
    boxes = [_b("Monthly visitors", 300, 20, cw=20, h=40), _b("139", 100, 300), _b("314", 200, 150),
             _b("Jan", 100, 500), _b("Feb", 200, 500), _b("$1,250.00", 300, 300), _b("Series A", 400, 60)]
    layout = analyse(boxes)
    assert [layout.boxes[i][0] for i in layout.values] == ["139", "314", "$1,250.00"]
    assert [layout.boxes[i][0] for i in layout.labels] == ["Jan", "Feb", "Series A"]  # the title is not a label


def test_flat_layout_has_no_structure() -> None:
    layout = flat_layout(PAGE)
    assert layout.title == () and len(layout.blocks) == len(PAGE) and len(layout.columns) == 1
    assert all(s.heading is None for s in layout.sections)
    assert [w.text for w in layout.words][:3] == ["Notes", "on", "Rivers"]  # input order


def test_empty_and_bad_input() -> None:
    assert analyse([]).blocks == [] and flat_layout([]).words == []
    with pytest.raises(TypeError, match="text"):
        as_pairs([42])
    assert as_pairs([("a", (5, 6, 1, 2))]) == [("a", (1.0, 2.0, 5.0, 6.0))]  # corners sorted


def test_config_is_used() -> None:
    # with a gutter wider than the page's, the two columns merge into one
    layout = analyse(PAGE, LayoutConfig(gutter_min=100.0))
    assert len(layout.columns) == 1
