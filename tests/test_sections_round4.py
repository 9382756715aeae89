"""Named sections on the pages of a second, differently made generator (issue 40, round 4;
``arr_coc.reading.layout.sections``): columns the layout joined on a tilted scan (tall boxes side by side on one
baseline) or that the reader boxed as one, run-in heads ("Kiln Sites. The chapel ..."), an unquoted name running on
into the question, capitals headings, a page number and a running header between two columns of one section."""

from __future__ import annotations

from arr_coc.reading.layout.sections import named_extent, separate_columns, unshift
from arr_coc.reading.layout.structural_query import parse, resolve
from arr_coc.reading.layout.structure import analyse

COLW, GUTTER, X0 = 420, 20, 40
PITCH, H = 28, 40  # a tilted scan's boxes are taller than the line pitch's text


def _prose(n: int, words: list[str], seed: int) -> list[str]:
    base = "the old pier was built by the town and the mill near the road grew along the quiet river bank".split()
    out = []
    for k in range(n):
        toks = [base[(seed + k * 5 + j) % len(base)] for j in range(9)]
        out.append(" ".join(toks))
    for at, w in words:
        out[at] = out[at].rsplit(" ", 2)[0] + " " + w
    return out


def _columns(left: list[str], right: list[str], slope: float = 0.0, top: float = 100.0) -> list:
    """Two justified columns of line boxes (each as wide as its column, a heading as wide as its text), the page
    tilted by ``slope`` (x moves by slope * y)."""
    boxes = []
    for c, texts in enumerate((left, right)):
        x = X0 + c * (COLW + GUTTER)
        y = top
        for t in texts:
            short = len(t.split()) <= 3 or t.endswith(".")
            width = min(COLW, 11 * len(t)) if short else COLW
            dx = slope * y
            boxes.append((t, (x + dx, y, x + width + dx, y + H)))
            y += PITCH
    return boxes


def _page(slope: float = 0.0) -> list:
    left = [
        "Field Sites",
        *_prose(6, [(2, "in 1887")], 0),
        "Kiln Sites",
        *_prose(7, [(1, "bridge cobbled")], 3),
    ]
    right = [
        *_prose(2, [(0, "in 1931")], 7),
        "bridge over the quiet market archive.",
        "Tithe Maps",
        *_prose(6, [(2, "in 1955"), (4, "bridge during")], 11),
        "the fair is lit at night.",
    ]
    return _columns(left, right, slope)


def _word(layout, shift: float, text: str, col: int):
    """A word's box in page pixels, from the separated layout (``col``: its column)."""
    for w in layout.words:
        b = unshift(w.box, shift)
        if w.text.strip(".,") == text and (b[0] > X0 + COLW) == bool(col):
            return b
    raise AssertionError(text)


def _covers(regions, box) -> bool:
    cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
    return any(r[0] <= cx <= r[2] and r[1] <= cy <= r[3] for r in regions)


def test_columns_the_layout_joined_are_separated_and_the_section_read_in_its_column():
    for slope in (0.0, 0.02, -0.02):
        layout = analyse(_page(slope))
        # the premise: the layout reads a left and a right box on one baseline as one line
        assert any(len(ln.boxes) > 1 for ln in layout.lines), slope
        sep = separate_columns(layout)
        assert sep is not None, slope
        moved, shift = sep
        assert not any(len(ln.boxes) > 1 for ln in moved.lines), slope
        cases = [
            ("Which year is mentioned in the section titled 'Kiln Sites'?", ("1931", 1), ("1887", 0)),
            (
                "In the section titled 'Kiln Sites', which word comes right after 'bridge'?",
                ("cobbled", 0),
                ("during", 1),
            ),
            ("What is the last word of the section titled 'Kiln Sites'?", ("archive", 1), ("night", 1)),
        ]
        for query, (good, gc), (bad, bc) in cases:
            ev = resolve(layout, parse(query))
            assert ev is not None, (slope, query)
            assert _covers(ev.regions, _word(moved, shift, good, gc)), (slope, query)
            assert not _covers(ev.regions, _word(moved, shift, bad, bc)), (slope, query)


def test_a_box_the_reader_ran_across_the_gutter_is_cut_and_a_title_above_the_columns_left_out():
    boxes = _page()
    # the reader boxed the 4th lines of both columns as one; the title above the columns runs across the gutter
    left4 = next(i for i, (t, b) in enumerate(boxes) if b[1] == 100 + 4 * PITCH and b[0] == X0)
    right4 = next(i for i, (t, b) in enumerate(boxes) if b[1] == 100 + 4 * PITCH and b[0] > X0 + COLW)
    joined = (
        boxes[left4][0] + " " + boxes[right4][0],
        (X0, boxes[left4][1][1], X0 + 2 * COLW + GUTTER, 100 + 4 * PITCH + H),
    )
    boxes = [b for i, b in enumerate(boxes) if i not in (left4, right4)] + [joined]
    boxes.append(("Trade and Settlement on the Eastern Estuary", (200, 20, 700, 60)))
    layout = analyse(boxes)
    moved, shift = separate_columns(layout)
    texts = [ln.text for ln in moved.lines]
    assert boxes[-2][0] not in texts
    assert any(t.startswith("in 1931") or "1931" in t and "1887" not in t for t in texts)
    assert not any("Trade and Settlement" in t for t in texts)
    ev = resolve(layout, parse("Which year is mentioned in the section titled 'Kiln Sites'?"))
    assert ev is not None and "columns separated" in ev.detail


def test_one_column_page_is_left_as_it_is():
    layout = analyse(_columns([*_prose(12, [], 0)], []))
    assert separate_columns(layout) is None


def _runin() -> list:
    lines = [
        "Field Sites. The old pier was built in 1887",
        "by the town near the mill and a bridge near",
        "the road.",
        "Kiln Sites. The chapel lost its roof in 1931",
        "when a bridge over the river gave way and the",
        "parish paid.",
        "   The mill was rebuilt and the road grew longer",
        "along the river.",
        "Tithe Maps. Each summer since 1955 a bridge",
        "during the fair is lit.",
    ]
    return [(t, (40, 100 + k * 28, 40 + 10 * len(t), 120 + k * 28)) for k, t in enumerate(lines)]


def test_run_in_heads_open_their_section_and_end_the_one_before():
    layout = analyse(_runin())
    ext = named_extent(layout, "Kiln Sites")
    assert ext is not None
    words = [layout.words[k].text.strip(".,") for k in ext.words]
    assert words[:3] == ["The", "chapel", "lost"]  # the run-in head itself is not the section's text
    assert "1931" in words and "longer" in words and "1955" not in words and "1887" not in words
    ev = resolve(layout, parse("Which year is mentioned in the section titled 'Kiln Sites'?"))
    boxes = {w.text.strip(".,"): w.box for w in layout.words}
    assert ev is not None and _covers(ev.regions, boxes["1931"]) and not _covers(ev.regions, boxes["1955"])
    ev = resolve(layout, parse("What is the last word of the section titled 'Kiln Sites'?"))
    assert ev is not None and _covers(ev.regions, boxes["river"]) and not _covers(ev.regions, boxes["lit"])


def test_an_unquoted_name_running_on_into_the_question():
    sq = parse("Which year does the section called Kiln Sites mention?")
    assert sq.named == "kiln sites mention"  # the parse keeps the verb; the extent is found without it
    layout = analyse(_runin())
    ev = resolve(layout, sq)
    boxes = {w.text.strip(".,"): w.box for w in layout.words}
    assert ev is not None and ev.rule == "year-in-unit"
    assert _covers(ev.regions, boxes["1931"]) and not _covers(ev.regions, boxes["1887"])


def test_a_capitals_heading_at_body_size_ends_a_capitals_section():
    lines = [
        "FIELD SITES",
        "The old pier was built by the town in 1887 and",
        "the mill near the road grew along the quiet bank",  # the reader dropped the full stop
        "KILN SITES",
        "The chapel lost its roof in a storm in 1931 and",
        "the parish paid for a new one after many years",
        "TITHE MAPS",
        "Each summer since 1955 the fair has filled the",
        "square with music and lanterns for the week.",
    ]
    boxes = [(t, (40, 100 + k * 28, 40 + 10 * len(t), 120 + k * 28)) for k, t in enumerate(lines)]
    layout = analyse(boxes)
    roles = {layout.lines[i].text: b.role for b in layout.blocks for i in b.lines}
    assert roles["TITHE MAPS"] != "heading"  # the premise: no full stop above it, the layout reads it as prose
    ext = named_extent(layout, "Kiln Sites")
    assert ext is not None
    texts = " ".join(layout.lines[i].text for i in ext.lines)
    assert "1931" in texts and "1955" not in texts and "TITHE" not in texts


def test_a_page_number_and_a_running_header_between_a_section_s_two_columns_are_skipped():
    left = ["Kiln Sites", *_prose(5, [], 0), "the upper bridge.", "205"]
    right = [
        "pp. 396-496",
        "Records of the kiln show that the pasture",
        *_prose(3, [], 4),
        "Tithe Maps",
        *_prose(3, [], 9),
    ]
    boxes = []
    for c, texts in enumerate((left, right)):
        for k, t in enumerate(texts):
            x = 40 + c * 520
            boxes.append((t, (x, 100 + k * 28, x + min(440, 10 * len(t)), 120 + k * 28)))
    layout = analyse(boxes)
    ev = resolve(layout, parse("In the section titled 'Kiln Sites', which word comes right after 'bridge'?"))
    records = next(w.box for w in layout.words if w.text == "Records")
    assert ev is not None and _covers(ev.regions, records)
