"""Questions a section's heading decides (issue 40): a named section's year, the word before / after a word inside a
named section, a section's last word; the section runs on into the next column."""

from __future__ import annotations

import pytest

from arr_coc.reading.layout.structural_query import parse, resolve
from arr_coc.reading.layout.structure import analyse
from tests.test_structure import _b

# Two columns; "Ferries" starts at the foot of the left column and ends at the top of the right one. "the mill"
# is printed in "Origins" and in "Ferries" (followed by another word), each section prints its own year.
LEFT = [
    _b("Origins", 60, 120, cw=16, h=40),
    _b("The first town grew in 1821 where", 60, 162),
    _b("the mill stood by the river bank", 60, 192),
    _b("and the road met the hill farms.", 60, 222),
    _b("Ferries", 60, 300, cw=16, h=40),
    _b("Boats crossed the water in 1902", 60, 342),
    _b("and the ferry left from the quay", 60, 372),
]
RIGHT = [
    _b("behind the mill gates each night", 420, 120),
    _b("until the new bridge was opened.", 420, 150),
    _b("Mills", 420, 230, cw=16, h=40),
    _b("Water turned the wheels of two", 420, 272),
    _b("mills until the flood of 1954.", 420, 302),
]
PAGE = [_b("Notes on Rivers", 60, 20, cw=26, h=60), *LEFT, *RIGHT]


def _texts(layout, regions) -> set[str]:
    """Words of the layout whose box lies inside one of ``regions``."""
    out = set()
    for w in layout.words:
        x0, y0, x1, y1 = w.box
        if any(r[0] <= x0 + 1 and r[1] <= y0 + 1 and r[2] >= x1 - 1 and r[3] >= y1 - 1 for r in regions):
            out.add(w.text)
    return out


@pytest.mark.parametrize(
    ("query", "fields"),
    [
        ("Which year is mentioned in the section titled 'Ferries'?", {"year": True, "named": "ferries"}),
        ("What year does the 'Mills' section give?", {"year": True, "named": "mills", "rule": "year-in-unit"}),
        (
            "What is the next word after 'mill' in the Ferries section?",
            {"after": "mill", "named": "ferries", "rule": "after-phrase"},
        ),
        ("Which word precedes \u201cmill\u201d in the section headed \u201cFerries\u201d?", {"before": "mill"}),
        ("With which word does the 'Ferries' section close?", {"word_of": "last", "named": "ferries"}),
        ("What is in the second column?", {"named": None, "year": False}),
        ("What is the heading of the second section in the left column?", {"rule": "ordinal-unit"}),
    ],
)
def test_parse_section_questions(query: str, fields: dict) -> None:
    sq = parse(query)
    for name, value in fields.items():
        assert getattr(sq, name) == value, (query, name, sq)


def test_section_runs_on_into_the_next_column() -> None:
    layout = analyse(PAGE)
    heads = [layout.block_text(s.heading) for s in layout.sections if s.heading is not None]
    assert heads == ["Origins", "Ferries", "Mills"]
    ferries = layout.sections[[layout.block_text(s.heading) for s in layout.sections].index("Ferries")]
    words = [layout.words[k].text for k in layout.section_words(layout.sections.index(ferries))]
    assert words[-1].rstrip(".") == "opened" and "gates" in words  # the right column's top belongs to Ferries


def test_year_of_a_named_section() -> None:
    layout = analyse(PAGE)
    ev = resolve(layout, parse("Which year is mentioned in the section titled 'Ferries'?"))
    assert ev is not None and ev.rule == "year-in-unit"
    kept = _texts(layout, ev.regions)
    assert "1902" in kept and "1821" not in kept and "1954" not in kept and "Ferries" in kept


def test_word_after_a_word_inside_a_named_section() -> None:
    layout = analyse(PAGE)
    ev = resolve(layout, parse("In the section titled 'Ferries', which word comes right after 'mill'?"))
    assert ev.rule == "after-phrase"
    kept = _texts(layout, ev.regions)
    assert "gates" in kept and "stood" not in kept  # the Ferries occurrence (right column), not Origins'
    ev = resolve(layout, parse("Which word precedes 'mill' in the section headed 'Origins'?"))
    assert "the" in _texts(layout, ev.regions) and "gates" not in _texts(layout, ev.regions)
    # without a section the first occurrence on the page is taken, as before
    ev = resolve(layout, parse("Which word comes right after 'mill'?"))
    assert "stood" in _texts(layout, ev.regions)


def test_last_word_of_a_section_that_ends_in_the_next_column() -> None:
    layout = analyse(PAGE)
    ev = resolve(layout, parse("With which word does the 'Ferries' section close?"))
    assert ev.rule == "word-of-unit"
    kept = _texts(layout, ev.regions)
    assert "opened." in kept or "opened" in kept


def test_numbered_body_size_headings_start_sections() -> None:
    """ "2. Ferries" at the body's size, set close above its text, is a heading (a section number before it); a
    numbered line without the dot ("1 HH GLASSES", a receipt's item) is not taken for one."""
    page = [
        _b("1. Origins", 60, 100),
        _b("The first town grew in 1821 where the", 60, 130),
        _b("mill stood by the river bank and road.", 60, 160),
        _b("2. Ferries", 60, 190),
        _b("Boats crossed the water in 1902 and the", 60, 220),
        _b("ferry left from the quay every night.", 60, 250),
    ]
    layout = analyse(page)
    heads = [layout.block_text(s.heading) for s in layout.sections if s.heading is not None]
    assert "2. Ferries" in heads  # (a column's first line has no sentence end above it: left to the gap rule)
    ev = resolve(layout, parse("Which year is mentioned in the section titled 'Ferries'?"))
    assert "1902" in _texts(layout, ev.regions) and "1821" not in _texts(layout, ev.regions)
