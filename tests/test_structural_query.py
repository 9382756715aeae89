"""Structural query parsing, resolution on hand-made layouts, and the budget rule inside the text path."""

from __future__ import annotations

import numpy as np
import pytest

from arr_coc.evaluation import docgen
from arr_coc.reading.layout.structural_query import RULES, parse, resolve
from arr_coc.reading.layout.structure import analyse
from tests.test_structure import CW, PAGE, _b


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("Which word comes right after 'ability to'?", {"after": "ability to", "rule": "after-phrase"}),
        ("What word follows the phrase \u201cstone bridge\u201d?", {"after": "stone bridge"}),
        ('Which word is printed just before "the flood"?', {"before": "the flood", "rule": "after-phrase"}),
        (
            "What is the last word of the section titled 'Ferries'?",
            {"word_of": "last", "unit": "section", "named": "ferries", "rule": "word-of-unit"},
        ),
        ("What is the first word of the section titled Mills?", {"word_of": "first", "named": "mills"}),
        (
            "What is mentioned at the end of the paragraph that begins with 'Boats crossed'?",
            {"word_of": "last", "unit": "paragraph", "starts_with": "boats crossed"},
        ),
        (
            "What is the heading of the second section in the left column?",
            {"ordinal": 2, "unit": "section", "column": "left", "rule": "ordinal-unit"},
        ),
        (
            "Which heading opens the 3rd part of the right-hand column?",
            {"ordinal": 3, "unit": "section", "column": "right"},
        ),
        ("What does the last paragraph say?", {"ordinal": -1, "unit": "paragraph"}),
        ("What is in the second column?", {"column": 2, "unit": None, "ordinal": None}),
        ("What is the title of this page?", {"title": True, "rule": "title"}),
        ("What headline does this document carry?", {"title": True}),
        ("Which city has the lowest value?", {"compare": "min", "rule": "compare"}),
        ("In which month did the line peak?", {"compare": "max"}),
        ("Which products sold more than 500 units?", {"compare": "more"}),
        ("What is written at the top of the page?", {"compare": None}),
        # where on the page the answer sits is no superlative; a ranking's verb or another superlative keeps it
        ("Which shop is this from? The name at the very top is fine.", {"compare": None, "rule": None}),
        ("What day was it bought? Look near the top or bottom.", {"compare": None}),
        ("Which business is printed up top?", {"compare": None}),
        ("What does it all come to at the bottom?", {"compare": None}),
        ("Which country ranks at the top?", {"compare": "max"}),
        ("Which city has the lowest value, at the bottom?", {"compare": "min"}),
        (
            "What is the value for the third month of the year?",
            {"implied_labels": ("march", "mar"), "rule": "implied-label"},
        ),
        ("What value is shown for the second day of the week?", {"implied_labels": ("tuesday", "tue")}),
        ("What is the invoice number?", {"rule": None}),
    ],
)
def test_parse(query: str, expected: dict) -> None:
    sq = parse(query)
    for field, value in expected.items():
        assert getattr(sq, field) == value, (query, field, sq)


def test_existing_key_questions_fire_no_rule_but_implied_labels() -> None:
    """The key questions the engine already answers are left to it (only a named month/weekday becomes a label)."""
    questions = []
    for concept in docgen.CONCEPTS.values():
        for split in docgen.SPLITS:
            questions += list(concept.paraphrases.get(split, ()))
            questions += [
                t.format(key=k, doc="invoice") for t in docgen.KEY_QUESTIONS[split] for k in concept.keys[split]
            ]
    for split in docgen.SPLITS:
        for fact in docgen.FACTS[split]:
            questions += [fact.question.format(e="Lyon"), fact.paraphrase.format(e="Lyon")]
        questions += [q for kind in docgen.SIGNS.values() for q in kind[split]]
    for q in questions:
        assert parse(q).rule is None, q
    dev_bar = [f"What value does the chart show for {p}?" for seq in docgen.BAR_CATEGORIES["dev"] for _, p in seq]
    assert {parse(q).rule for q in dev_bar} <= {None, "implied-label"}


def test_resolve_on_a_two_column_page() -> None:
    layout = analyse(PAGE)
    # the phrase runs over a line break; the words after it are kept
    ev = resolve(layout, parse("Which word comes right after 'to trade'?"))
    assert ev is not None and ev.rule == "after-phrase"
    goods = next(w for w in layout.words if w.text == "goods")
    assert goods.box in ev.regions
    # the last word of a named section: its heading and its last line
    ev = resolve(layout, parse("What is the last word of the section titled 'Ferries'?"))
    assert ev.rule == "word-of-unit"
    assert sorted(ev.regions) == sorted(
        [_b("Ferries", 60, 300, cw=16, h=40)[1], _b("and returned each night.", 60, 372)[1]]
    )
    # counting sections needs every heading up to the counted one
    ev = resolve(layout, parse("What is the heading of the second section in the right column?"))
    assert ev.rule == "ordinal-unit"
    bridges = _b("Bridges", 420, 270, cw=16, h=40)[1]
    mills = _b("Mills", 420, 120, cw=16, h=40)[1]
    assert bridges in ev.regions and mills in ev.regions
    assert all(r[0] >= 420 for r in ev.regions)  # nothing from the left column
    ev = resolve(layout, parse("What is the title of this page?"))
    assert ev.rule == "title" and ev.regions == [PAGE[0][1]]
    assert resolve(layout, parse("What is the heading of the ninth section?")) is None  # no ninth section
    assert resolve(layout, parse("What is the invoice number?")) is None


def test_compare_keeps_every_value_and_label_and_implied_label_names_keys() -> None:
    boxes = [_b("Monthly visitors", 300, 20, cw=20, h=40)]
    for i, (m, v) in enumerate(zip(("Jan", "Feb", "Mar", "Apr"), (139, 314, 151, 60), strict=True)):
        boxes += [_b(m, 100 + 120 * i, 500), _b(str(v), 100 + 120 * i, 400 - v)]
    layout = analyse(boxes)
    ev = resolve(layout, parse("Which month has the lowest value?"))
    assert ev.rule == "compare" and sorted(ev.regions) == sorted(b for _, b in boxes[1:])
    ev = resolve(layout, parse("What is the value for the third month of the year?"))
    assert ev.rule == "implied-label" and [layout.boxes[i][0] for i in ev.keys] == ["Mar"]
    value = next(b for t, b in boxes if t == "151")
    inside = [r for r in ev.regions if r[0] <= value[0] and r[1] <= value[1] and r[2] >= value[2] and r[3] >= value[3]]
    assert inside, ev.regions  # the band above the label holds the value, even where OCR missed it
    assert not any(r[0] <= 100 + 30 <= r[2] and r[1] <= 300 for r in inside)  # and not Jan's value


def test_rules_are_documented() -> None:
    import arr_coc.reading.layout.structural_query as sq

    for rule in RULES:
        assert f"``{rule}``" in sq.__doc__


def test_budget_rule_in_the_text_path() -> None:
    """The evidence scores 1 and everything else at most ``evidence_damp`` of its score; the rule is reported; with
    query parsing off the map is the plain key-matching one."""
    from arr_coc.reading import QueryMatcher, TextBox

    boxes = [TextBox(t, b) for t, b in PAGE]
    size, rows, cols = (800, 600), 20, 27
    m = QueryMatcher(semantic=False)
    query = "What is the heading of the second section in the right column?"
    rel, ev = m.relevance_and_evidence(boxes, query, rows, cols, size)
    assert ev.rule == "ordinal-unit"
    plain, none = QueryMatcher(semantic=False, query_parsing=False).relevance_and_evidence(
        boxes, query, rows, cols, size
    )
    assert none is None
    from arr_coc.reading import paint_boxes

    ev_map = paint_boxes([TextBox("", r) for r in ev.regions], [1.0] * len(ev.regions), rows, cols, size)
    assert np.all(rel[ev_map > 0] == 1.0)
    np.testing.assert_allclose(rel[ev_map == 0], m.evidence_damp * plain[ev_map == 0], rtol=0, atol=1e-7)
    assert rel[ev_map == 0].max() < 1.0  # evidence first
    np.testing.assert_array_equal(m.relevance(boxes, query, rows, cols, size), rel)
    # an implied label becomes a key: the value above "Mar" outranks the other values
    chart = [
        TextBox("Mar", (300, 500, 330, 520)),
        TextBox("151", (300, 400, 330, 420)),
        TextBox("Jan", (100, 500, 130, 520)),
        TextBox("139", (100, 400, 130, 420)),
    ]
    scores = m.box_scores(chart, "What is the value for the third month of the year?", extra_keys=[0])
    assert scores[1] > scores[3]


@pytest.mark.skipif(__import__("importlib").util.find_spec("rapidocr") is None, reason="rapidocr not installed")
def test_ocr_allocate_reports_the_rule_and_keeps_the_whole_title() -> None:
    """End to end on a rendered page: the title question fires the title rule and every title cell is kept."""
    import random

    from arr_coc.evaluation import evidence as er
    from arr_coc.realizing import allocate

    built = docgen._page_layout(random.Random("e2e"), "dev", False)
    image, (title, box) = built.canvas.image, built.canvas.items[0]  # the title is drawn first
    assert title in docgen.PROSE["dev"]["titles"]
    query = "What is the title of this page?"
    alloc = allocate(
        image, query, 1 / 9, family=er.FAMILY, max_pixels=er.MAX_PIXELS, mode="text", text_options={"semantic": False}
    )
    assert alloc.evidence is not None and alloc.evidence.rule == "title"
    w, h = image.size
    cells = er.answer_cells(box, w, h, *alloc.grid)
    assert np.isin(cells, alloc.keep.numpy()).all()


def test_assignment_keeps_the_right_hand_side_not_the_prose_mention() -> None:
    sq = parse("In the code example, what is assigned to markers?")
    assert sq.assigned == "markers" and sq.rule == "after-phrase"
    boxes = [_b("These markers are pixels we can label", 20, 20), _b(">>> markers = np.zeros_like(coins)", 20, 60)]
    ev = resolve(analyse(boxes), sq)
    assert ev is not None and all(r[1] == 60 for r in ev.regions)  # the code line, not the sentence above
    rhs = (20 + CW * boxes[1][0].index("np."), 20 + CW * len(boxes[1][0]))
    assert any(r[0] <= rhs[0] + 1e-6 and r[2] >= rhs[1] - 1e-6 for r in ev.regions)
