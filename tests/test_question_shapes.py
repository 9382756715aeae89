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
from arr_coc.reading.matching.question_shapes import document_deixis, shape_concepts

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


def test_sent_to_asks_for_the_recipient_only() -> None:
    assert concepts("Who was this sent to?") == ("recipient",)  # before: the sender too ("sent")
    assert concepts("Who sent this?") == ("sender",)
    assert concepts("Who sent this to Mary?") == ("sender",)


MEMO = [
    TextBox("TO:", (40, 120, 100, 150)),
    TextBox("Mary Mazza", (120, 120, 400, 150)),
    TextBox("FROM:", (40, 170, 120, 200)),
    TextBox("Pam Churchill", (140, 170, 400, 200)),
    TextBox("RE:", (40, 220, 100, 250)),
    TextBox("Sampling results", (120, 220, 400, 250)),
    *[TextBox(f"We have sent the samples out, line {i}", (40, 300 + 40 * i, 640, 330 + 40 * i)) for i in range(4)],
]  # fmt: skip


def test_on_a_memo_sent_to_finds_the_recipient_not_the_sender() -> None:
    parts = QueryMatcher(semantic=False).box_parts(MEMO, "Who was this sent to?")
    assert parts["keys"][0] > 0 and parts["keys"][2] == 0  # before: "FROM:" a key as much as "TO:"
    assert parts["scores"][1] > parts["scores"][3]


@pytest.mark.parametrize(
    ("question", "words"),
    [
        ("What is this document about?", {"document"}),
        ("When was this form dated?", {"form"}),
        ("This form was placed before Bates ID?", set()),  # a printed key, quoted
        ("What does the form say for Agency?", set()),
    ],
)
def test_the_document_in_hand_is_no_key(question: str, words: set[str]) -> None:
    assert document_deixis(question) == words


NOTICE = [
    TextBox("SUBJECT:", (40, 120, 160, 150)),
    TextBox("25% Replacement of Propylene Glycol", (180, 120, 600, 150)),
    TextBox("PROJECT NO:", (40, 170, 200, 200)),
    TextBox("1703", (220, 170, 300, 200)),
    TextBox("DOCUMENT", (400, 20, 600, 50)),  # a stamp
    TextBox("Copy 2 of 3", (400, 60, 600, 90)),
]  # fmt: skip


def test_what_is_this_document_about_finds_the_subject_not_the_word_document() -> None:
    parts = QueryMatcher(semantic=False).box_parts(NOTICE, "What is this document about?")
    assert parts["keys"][4] == 0  # before: the stamp saying "DOCUMENT" a key (0.58)
    assert parts["scores"][1] > parts["scores"][4] and parts["scores"][1] > parts["scores"][5]
