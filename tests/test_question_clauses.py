"""The asking clause of an English question apart from the asker's situation (``reading.matching.question_clauses``),
and what reads it: concepts, roles and answer types of the asked part only (``paraphrase_en``), the situation's words
matched with no box (``lexical.unmatched_tokens``); the party paid on a receipt asks for a business, not an amount."""

from __future__ import annotations

import numpy as np
import pytest

from arr_coc.reading.config import LexicalConfig
from arr_coc.reading.matching.lexical import answer_types, lexical_scores, tokens, unmatched_tokens
from arr_coc.reading.matching.paraphrase_en import concepts
from arr_coc.reading.matching.question_clauses import asked_part, situation_part
from arr_coc.reading.matching.question_roles import transaction_party


@pytest.mark.parametrize(
    ("question", "asked", "situation"),
    [
        ("What is the total?", "What is the total?", ""),  # one clause: the question itself
        ("Who is it for, and when?", "Who is it for, and when?", ""),  # no purpose after the comma
        ("I'm logging this form — which product line is it?", "which product line is it?", "I'm logging this form"),
        ("Who drew it up? I need to credit them.", "Who drew it up?", "I need to credit them."),
        ("For tax records, which firm sold me these?", "which firm sold me these?", "For tax records"),
        ("When was it, for the expense sheet?", "When was it?", "for the expense sheet"),
        ("Dr. Smith asked: what is the date?", "Dr. Smith asked: what is the date?", ""),  # "Dr." ends no sentence
        ("Payee for this meal?", "Payee for this meal?", ""),  # no interrogative word: nothing set off
        ("Writing up the report. Total?", "Total?", "Writing up the report."),
        ("What range is low, as a share of the median?", "What range is low, as a share of the median?", ""),
        ("Which firm sold it? The auditor needs the vendor.", "Which firm sold it?", "The auditor needs the vendor."),
        ("Where are they based? Street and city, please.", "Where are they based? Street and city, please.", ""),
        # a clause naming what the page may print is never the situation: a table's row, a year, a code's name
        (
            "In the row Model D-4, what does the H2 column say?",
            "In the row Model D-4, what does the H2 column say?",
            "",
        ),
        ("For 1985, what figure is given under X?", "For 1985, what figure is given under X?", ""),
        ("Look at the 1985 row. What is the sales figure?", "Look at the 1985 row. What is the sales figure?", ""),
        (
            "According to the snippet, what does total_len get?",
            "According to the snippet, what does total_len get?",
            "",
        ),
    ],
)
def test_asked_and_situation(question, asked, situation):
    assert asked_part(question) == asked
    assert situation_part(question) == situation


@pytest.mark.parametrize(
    ("question", "want"),
    [
        # the asker's first person in the situation is no purchase of theirs: a form's role is read
        ("I need to credit whoever put this together. Who drew it up?", ("sender",)),
        ("Who handed this in? I need someone to contact about it.", ("sender",)),  # not "about" -> subject
        ("Who's this report going to? I'm adding them to the distribution.", ("recipient",)),  # not copies
        ("For tax records, which firm sold me these items?", ()),  # no tax
        # only when the asked part names nothing, the situation's concept
        ("Which outfit is doing this? I need the vendor for the order.", ("supplier",)),
        ("What is the total? I'm adding it to the budget sheet.", ("total",)),
    ],
)
def test_concepts_of_the_asked_part(question, want):
    assert concepts(question) == want


def test_situation_first_person_is_no_transaction():
    q = "Which cigarette product is this form about? I'm tagging it for the archive."
    assert transaction_party("Which cigarette product is this form about? I'm tagging it.")  # the whole text: yes
    assert "org" not in answer_types(q)  # but the asked part names no purchase of the asker's
    assert "org" in answer_types("Which merchant did I pay here? I need it for the log.")  # its own first person


@pytest.mark.parametrize(
    ("question", "want_org"),
    [
        ("Which merchant did I pay here?", True),
        ("Which establishment charged me?", True),
        ("Who was paid here?", True),
        ("Payee for this meal expense?", True),
        ("Name of the place I paid?", True),
        ("Where was this meal bought?", True),
        ("Who's the vendor here?", True),
        ("How much did I pay the merchant?", False),  # an amount asked
        ("Who was this paid for?", False),  # the customer, not the payee
    ],
)
def test_party_paid_is_a_business_not_an_amount(question, want_org):
    kinds = answer_types(question)
    found = concepts(question)
    assert ("org" in kinds) == want_org
    if want_org:
        assert not {"payable", "total", "address"} & set(found), found
    elif "how much" in question.lower():
        assert {"payable", "total"} & set(found)


def test_situation_words_match_no_box():
    q = "Where is their office? I'm planning the field visits."
    assert set(tokens("planning the field visits")) <= unmatched_tokens(q)
    assert not set(tokens("office")) & unmatched_tokens(q)
    texts = ["FIELD VISITS", "Office", "12 Main St"]
    s = lexical_scores(texts, q, LexicalConfig())
    assert s[0] == 0.0 and s[1] > 0.0  # the page's "FIELD VISITS" is no answer to where the office is
    assert np.argmax(s) == 1
    assert unmatched_tokens("Where is their office?") == unmatched_tokens("Where is their office?  ")


@pytest.mark.parametrize(
    ("question", "want_types", "not_concepts"),
    [
        # round 12: a business by its everyday names, the asker's visit for a meal, "called" naming a thing
        ("Can you read me the name of the outfit that gave us this receipt?", {"org"}, set()),
        ("What's the eatery called?", {"org"}, {"phone"}),
        ("Whose premises was this issued at?", {"org"}, set()),
        ("Which place did we have lunch at?", {"org"}, {"address"}),
        ("What's the place called where we had dinner?", {"org"}, {"phone", "address"}),
        ("Can you make out the name of the shop?", {"org"}, {"maker"}),  # "make out": read, not a maker
    ],
)
def test_a_business_by_its_everyday_names(question, want_types, not_concepts):
    assert want_types <= set(answer_types(question))
    assert not not_concepts & set(concepts(question)), concepts(question)


@pytest.mark.parametrize(
    ("question", "types", "concept"),
    [
        ("Which evening was this meal?", ("date",), "date"),  # a part of the day stands for the day
        ("Which night?", ("date",), "date"),
        ("What's the damage on this one?", ("money",), "total"),  # the bill's total in idiom
        ("How much did we fork out for this?", ("money",), "total"),
        ("What did it set us back?", ("money",), "total"),
    ],
)
def test_day_parts_and_spending_idioms(question, types, concept):
    assert set(types) <= set(answer_types(question))
    assert concept in concepts(question)


@pytest.mark.parametrize(
    "question",
    ["What morning sickness medicine is listed?", "How was the page laid out?", "Who should be called about this?"],
)
def test_look_alikes_keep_their_reading(question):
    kinds, found = set(answer_types(question)), set(concepts(question))
    assert "date" not in kinds and "total" not in found
    if "called about" in question:  # "called" with no naming "what's ... called": a phone call
        assert "phone" in kinds
