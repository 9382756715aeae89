"""The keys a question asks about when it names none, from the shape of its answer (issue 40, para7:
``reading/matching/question_shapes.py``).

"day it was written?" (a form's DATE), "Who handed this in?" (REPORTED BY), "What's being given away?" (ITEM /
BRAND): no word of the question is printed on the page, nor any cue of the lexicon. Hand-made pages, lexical matching
only (no model, no data).
"""

from __future__ import annotations

import numpy as np
import pytest

from arr_coc.reading import QueryMatcher, TextBox
from arr_coc.reading.matching.paraphrase_en import concepts
from arr_coc.reading.matching.question_shapes import shape_concepts

# a promotion form: the date under its value, a "REPORTED BY" agent label, the item given away; running text that
# says "day" (the question's word), so the question's own words find only a sentence
FORM = [
    TextBox("PROMOTION ACTIVITY REPORT", (150, 30, 600, 70)),
    TextBox("ITEM / BRAND:", (40, 120, 200, 150)),
    TextBox("Newport Sunglasses", (220, 120, 520, 150)),
    TextBox("REPORTED BY:", (40, 170, 200, 200)),
    TextBox("R. E. Klein", (220, 170, 420, 200)),
    TextBox("REGION:", (40, 220, 160, 250)),
    TextBox("Northeast", (180, 220, 400, 250)),
    TextBox("The promotion ran for a 14 day period in every store of the region", (40, 300, 700, 330)),
    TextBox("by the retailers who took part in it", (40, 340, 700, 370)),
    TextBox("4/ 27/ 81", (480, 560, 600, 590)),
    TextBox("DATE", (500, 600, 560, 625)),
    TextBox("SIGNATURE", (100, 600, 260, 625)),
]  # fmt: skip
ITEM, AGENT, DATE_VALUE = 2, 4, 9


@pytest.mark.parametrize(
    ("question", "shape"),
    [
        ("day it was written?", ("date",)),
        ("Give me the purchase day.", ("date",)),
        ("Who handed this in?", ("sender",)),
        ("Who put this together?", ("sender",)),
        ("Who has compiled it?", ("sender",)),
        ("What's being given away?", ("brand", "product")),
        ("What was tested?", ("brand", "product")),
    ],
)
def test_the_answers_shape_names_the_concept(question: str, shape: tuple[str, ...]) -> None:
    assert shape_concepts(question) == shape
    assert concepts(question) == shape  # the question names no lexicon concept: its shape is read


@pytest.mark.parametrize(
    "question",
    [
        "Read the value of the first day.",  # a chart's label, not a date asked for
        "How much was paid that day?",
        "Who is the contact?",  # a copula: the question names its role
        "Who else received this?",
        "What is written next to Agency?",  # a verb of writing: the page's text
        "What is printed?",
        "Whose form is it?",
    ],
)
def test_other_shapes_name_no_concept(question: str) -> None:
    assert shape_concepts(question) == ()


def test_a_named_concept_or_role_is_kept() -> None:
    assert concepts("When was it sent?") == ("date",)  # the lexicon's own concept, not a shape's
    assert concepts("Who did I buy fuel from?") == ()  # a transaction's other party (``question_roles``), no sender
    assert concepts("Who served us?") == ()


@pytest.mark.parametrize(
    ("question", "value"),
    [("day it was written?", DATE_VALUE), ("Who handed this in?", AGENT), ("What's being given away?", ITEM)],
)
def test_on_a_form_the_shape_finds_the_label_and_its_value(question: str, value: int) -> None:
    m = QueryMatcher(semantic=False)
    scores = m.box_scores(FORM, question)
    others = [i for i, b in enumerate(FORM) if i != value and not b.text.endswith(":") and b.text not in ("DATE",)]
    # before: the running text saying "day", or every box the same (no key named)
    assert scores[value] > scores[others].max(), question
    assert np.isfinite(scores).all()
