"""The role a question asks about, read from its grammar (issue 40, para6: ``reading/matching/question_roles.py``).

A writer who has not read the lexicon names a key by its role: "Who's it from?" (FROM:), "Who should get this?"
(TO:), "Who did I buy fuel from?" (the receipt's issuer). Hand-made pages, lexical matching only (no model, no data).
"""

from __future__ import annotations

import numpy as np
import pytest

from arr_coc.reading import QueryMatcher, TextBox
from arr_coc.reading.matching.lexical import answer_types
from arr_coc.reading.matching.paraphrase_en import concepts
from arr_coc.reading.matching.question_roles import role_concepts, role_types, transaction_party

# a memo: the sender's and recipient's keys are stop words, printed as labels
MEMO = [
    TextBox("INTEROFFICE MEMORANDUM", (100, 30, 600, 70)),
    TextBox("TO:", (40, 120, 100, 150)),
    TextBox("J. R. Harper", (120, 120, 400, 150)),
    TextBox("FROM:", (40, 170, 120, 200)),
    TextBox("L. M. Stone", (140, 170, 400, 200)),
    TextBox("DATE:", (40, 220, 120, 250)),
    TextBox("March 3, 1994", (140, 220, 400, 250)),
    TextBox("SUBJECT:", (40, 270, 160, 300)),
    TextBox("Test market results", (180, 270, 520, 300)),
    *[TextBox(f"Line {i} of the memo's running text", (40, 340 + 40 * i, 640, 370 + 40 * i)) for i in range(8)],
]  # fmt: skip
TO_VALUE, FROM_VALUE = 2, 4

# a receipt: the station's name heads it; no key names the issuer
RECEIPT = [
    TextBox("PETRON SERVICE STATION SDN BHD", (120, 40, 600, 80)),
    TextBox("Lot 12, Jalan Kebun", (160, 90, 560, 125)),
    TextBox("TAX INVOICE", (220, 200, 500, 240)),
    TextBox("Date: 12/04/2018", (40, 260, 330, 295)),
    TextBox("PUMP 3 PRIMAX 95", (40, 320, 400, 355)),
    TextBox("RM 50.00", (480, 320, 620, 355)),
    TextBox("TOTAL", (40, 400, 160, 435)),
    TextBox("RM 50.00", (480, 400, 620, 435)),
    TextBox("Served by: AHMAD", (40, 470, 400, 505)),
    TextBox("Thank you. Please come again.", (100, 560, 620, 600)),
]  # fmt: skip
ISSUER = 0


@pytest.mark.parametrize(
    ("question", "concept"),
    [
        ("Who's it from?", "sender"),
        ("Who is this one from?", "sender"),
        ("Who should get this?", "recipient"),
        ("Who is supposed to receive this?", "recipient"),
        ("Who's it for?", "recipient"),
        ("Who is the memo for?", "recipient"),
    ],
)
def test_a_who_questions_stranded_preposition_or_receiving_verb_names_the_role(question: str, concept: str) -> None:
    assert role_concepts(question) == (concept,)
    assert concept in concepts(question)


@pytest.mark.parametrize(
    "question",
    [
        "Who did I buy fuel from?",
        "From whom did I buy these?",
        "Who did we pay?",
        "Who served us?",
        "Tell me who I bought this from.",
        "Who sold me these?",
    ],
)
def test_the_other_party_of_the_askers_transaction_is_an_organisation(question: str) -> None:
    assert transaction_party(question) and role_types(question) == ("org",)
    assert "org" in answer_types(question)
    assert "sender" not in concepts(question)  # the seller, not a memo's "FROM:"


@pytest.mark.parametrize(
    "question",
    [
        "Which number do I call?",  # a phone number
        "When did I shop here?",  # a date
        "How much did I pay?",  # an amount
        "Who wrote this to me?",  # a letter's sender
        "Who was this billed for?",  # the passive: the customer ("Bill To"), not the seller
        "Who is this addressed to?",  # no first person, no transaction
        "What is written next to Part I?",  # "I" an identifier
        "Which value does the table give Système U for market share?",  # "me" inside a word
    ],
)
def test_other_questions_are_no_transaction_party(question: str) -> None:
    assert not transaction_party(question)


def test_a_role_ruled_out_by_an_earlier_concept_is_not_added() -> None:
    """ "Who else is this sent to?" asks for the copies; the stranded "to" adds nothing the lexicon ruled out."""
    assert "copies" in concepts("Who else gets copies of this?")
    assert "recipient" not in concepts("Who else gets copies of this?")


def test_on_a_memo_the_role_finds_the_printed_label_and_its_value() -> None:
    m = QueryMatcher(semantic=False)
    cases = (("Who's it from?", FROM_VALUE, TO_VALUE), ("Who should get this?", TO_VALUE, FROM_VALUE))
    for question, value, other in cases:
        scores = m.box_scores(MEMO, question)
        assert scores[value] > scores[other], question


def test_on_a_receipt_the_seller_is_the_issuer_at_its_head() -> None:
    m = QueryMatcher(semantic=False)
    for question in ("Who did I buy fuel from?", "From whom did I buy these?"):  # before: every box the same
        scores = m.box_scores(RECEIPT, question)
        assert scores[ISSUER] > np.delete(scores, ISSUER).max(), question


@pytest.mark.parametrize("question", ["Which eatery is this?", "Which outfit was this receipt from?"])
def test_which_named_thing_the_document_is_from_asks_for_the_issuer(question: str) -> None:
    assert "org" in answer_types(question)


@pytest.mark.parametrize(
    "question",
    ["What day was this?", "What make of cigarette is it?", "Which unit is it from?", "What kind of form is this?"],
)
def test_a_named_concept_or_a_kind_of_document_is_no_issuer(question: str) -> None:
    assert "org" not in answer_types(question)
