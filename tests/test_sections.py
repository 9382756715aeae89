"""A named section's extent on a two-column page (``arr_coc.reading.layout.sections``): the heading governs its own
column, across the column break, up to the next heading; the neighbouring column's same word is not chosen."""

from __future__ import annotations

from arr_coc.reading.layout.sections import line_columns, named_evidence, named_extent
from arr_coc.reading.layout.structural_query import parse, resolve
from arr_coc.reading.layout.structure import analyse

LEFT, RIGHT = (40, 460), (520, 940)  # column x extents (a 60 px gutter)
H, PITCH = 20, 28


def _page(right_first: list[str] | None = None) -> list[tuple[str, tuple[float, float, float, float]]]:
    """Two columns of OCR line boxes. Left: 'Harbour' (a year 1887, 'bridge near'), then 'Later Years' running to
    the column's foot. Right: 'Later Years' goes on at the top (1931, 'bridge over', ends with 'archive.'), then
    'Festivals' (1955, 'bridge during')."""
    left = [
        "Harbour",
        "The old pier was built by the town council",
        "in 1887 when a stone bridge near the mill",
        "was opened to carts and to the first trains.",
        "Later Years",
        "The chapel lost its roof in a storm and the",
        "parish paid for a new one after many years",
        "of letters and meetings in the old school hall",
        "and the grammar school moved into the hall",
    ]
    right = right_first or [
        "where the pupils stayed until the war began.",
        "In 1931 a new bridge over the river replaced",
        "the ferry and the town grew along the road",
        "to the station and the quiet market archive.",
        "Festivals",
        "Each summer since 1955 the fair has filled the",
        "square with music and a bridge during the night",
        "is lit with lanterns for the whole long week.",
    ]
    boxes = []
    for col, texts in ((LEFT, left), (RIGHT, right)):
        y = 100
        for t in texts:
            heading = len(t.split()) <= 3
            if heading and y > 100:
                y += PITCH // 2
            width = min(col[1] - col[0], 10 * len(t))
            boxes.append((t, (col[0], y, col[0] + width, y + H)))
            y += PITCH
    return boxes


def _centre(b):
    return (b[0] + b[2]) / 2, (b[1] + b[3]) / 2


def _covers(regions, box) -> bool:
    cx, cy = _centre(box)
    return any(r[0] <= cx <= r[2] and r[1] <= cy <= r[3] for r in regions)


def _word_box(layout, text: str, column_x: tuple[int, int]):
    return next(w.box for w in layout.words if w.text.strip(".,") == text and column_x[0] <= w.box[0] <= column_x[1])


def test_extent_crosses_the_column_break_and_stops_at_the_next_heading():
    layout = analyse(_page())
    ext = named_extent(layout, "Later Years")
    assert ext is not None
    assert layout.lines[ext.heading].text == "Later Years"
    texts = [layout.lines[i].text for i in ext.lines]
    assert texts[0].startswith("The chapel") and any(t.startswith("In 1931") for t in texts)
    assert not any("Festivals" in t or "1955" in t or "1887" in t for t in texts)
    assert layout.lines[ext.last_lines[0]].text.endswith("archive.")


def test_year_after_and_last_word_come_from_the_named_section_only():
    layout = analyse(_page())
    cases = [
        ("Which year is mentioned in the section titled 'Later Years'?", "1931", "1887"),
        ("In the section titled 'Later Years', which word comes right after 'bridge'?", "over", "near"),
        ("What is the last word of the section titled 'Later Years'?", "archive", "trains"),
    ]
    for query, answer, wrong in cases:
        ev = resolve(layout, parse(query))
        assert ev is not None, query
        assert _covers(ev.regions, _word_box(layout, answer, RIGHT)), query
        assert not _covers(ev.regions, _word_box(layout, wrong, LEFT)), query
        assert not _covers(ev.regions, _word_box(layout, "during", RIGHT)), query  # 'bridge during': Festivals


def test_before_a_word_in_the_named_section():
    layout = analyse(_page())
    ev = resolve(layout, parse("Which word precedes 'bridge' in the section headed 'Festivals'?"))
    assert ev is not None and ev.rule == "after-phrase"
    line = next(i for i, ln in enumerate(layout.lines) if ln.text.startswith("square"))
    a = next(w.box for w in layout.words if w.line == line and w.text == "a")  # "... music and a bridge"
    assert _covers(ev.regions, a)
    assert not _covers(ev.regions, _word_box(layout, "stone", LEFT))


def test_a_table_label_read_as_a_heading_does_not_end_the_section():
    right = [
        "where the pupils stayed until the war began.",
        "Total",  # a table's label over numbers, not the next section's heading
        "12 40 77",
        "In 1931 a new bridge over the river replaced",
        "the ferry and the town grew along the road",
        "to the station and the quiet market archive.",
        "Festivals",
        "Each summer since 1955 the fair has filled the",
        "square with music and a bridge during the night",
        "is lit with lanterns for the whole long week.",
    ]
    layout = analyse(_page(right))
    ext = named_extent(layout, "Later Years")
    assert ext is not None
    assert any(layout.lines[i].text.startswith("In 1931") for i in ext.lines)


def test_not_named_or_not_found_falls_back():
    layout = analyse(_page())
    assert named_evidence(layout, parse("Which word comes right after 'bridge'?")) is None
    assert named_extent(layout, "Economy and Trade") is None


def test_columns_from_narrow_lines_when_a_wide_block_hides_the_gutter():
    filler = "and the town and the river and the mill were old"
    boxes = _page()
    # longer columns (filler under each column's text), and an author block of three lines centred over the
    # gutter: the layout sees one column
    for col in (LEFT, RIGHT):
        boxes += [(filler, (col[0], 400 + PITCH * k, col[0] + 420, 400 + PITCH * k + H)) for k in range(6)]
    boxes += [(f"Author Name {k} University", (360, 10 + 24 * k, 620, 30 + 24 * k)) for k in range(3)]
    layout = analyse(boxes)
    assert len(layout.columns) == 1
    cols = line_columns(layout)
    left = {cols[i] for i, ln in enumerate(layout.lines) if ln.box[2] <= LEFT[1]}
    right = {cols[i] for i, ln in enumerate(layout.lines) if ln.box[0] >= RIGHT[0]}
    assert len(left) == 1 and len(right) == 1 and left != right and -1 not in left | right
