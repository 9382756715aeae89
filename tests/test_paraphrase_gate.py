"""The English lexicon's gate (``paraphrase_en.printed_concepts``): a question naming a printed key in the page's own
words, even partly ("client", "sold to", "Name / Phone Ext", "AUTHORIZATION NO"), is scored by its own words, and the
lexicon's other keys for that concept ("Customer No", "Bill To", "Tel", "APPROVED BY") do not outrank it; a question
whose word for the concept the page does not print ("charged" for "Amount Due") still finds the key through the
lexicon. Words describing the document ("receipt", "issued") match no box but still weigh in the question."""

from __future__ import annotations

import numpy as np
import pytest

from arr_coc.reading.config import LexicalConfig
from arr_coc.reading.matching.lexical import STOP_WORDS, lexical_scores
from arr_coc.reading.matching.paraphrase_en import concepts, printed_concepts, unprinted_key_phrases

INVOICE = [
    "NORTHWIND SUPPLIES",
    "INVOICE",
    "Invoice No: 4471",
    "Customer No",
    "C-0912",
    "Bill To",
    "Harbor Cafe, 12 Pier Road",
    "Client: Dana Whitfield",
    "Sold To:",
    "Harbor Cafe Ltd",
    "Total Items: 3",
    "Sub Total",
    "120.00",
    "Amount Due",
    "127.20",
]
FORM = [
    "PROJECT AUTHORIZATION",
    "AUTHORIZATION NO.",
    "NP-75",
    "APPROVED BY:",
    "SUBMITTED BY:",
    "Name/Phone Ext.:",
    "M. Hamann x4410",
    "Tel:",
    "910-741-5000",
]


def _top(page: list[str], question: str) -> str:
    scores = lexical_scores(page, question, LexicalConfig())
    return page[int(np.argmax(scores))]


@pytest.mark.parametrize(
    ("page", "question", "key", "concept", "rivals"),
    [
        (
            INVOICE,
            "What value does the invoice show for client?",
            "Client: Dana Whitfield",
            "customer",
            ("Customer No", "Bill To"),
        ),
        (INVOICE, "Read the sold to field.", "Sold To:", "customer", ("Customer No", "Bill To")),
        (FORM, "What is written next to AUTHORIZATION NO?", "AUTHORIZATION NO.", "signature", ("APPROVED BY:",)),
        (FORM, "What is written next to Name / Phone Ext?", "Name/Phone Ext.:", "phone", ("Tel:",)),
    ],
)
def test_a_literal_partial_key_wins_over_the_lexicon(
    page: list[str], question: str, key: str, concept: str, rivals: tuple[str, ...]
) -> None:
    assert concept in concepts(question)  # the lexicon reads the concept in the question's words...
    assert concept in printed_concepts(question, page, STOP_WORDS)  # ...which the page prints: not looked up
    got = dict(zip(page, lexical_scores(page, question, LexicalConfig()).tolist(), strict=True))
    assert all(got[key] > got[r] for r in rivals), got  # the concept's other keys do not outrank the printed one


@pytest.mark.parametrize(
    ("question", "key"),
    [
        ("How much was charged in total?", "Amount Due"),
        ("Who was this billed for?", "Bill To"),  # "billed" is not the printed word "Bill"
    ],
)
def test_a_true_paraphrase_still_finds_its_key(question: str, key: str) -> None:
    assert not printed_concepts(question, INVOICE, STOP_WORDS) & set(concepts(question)[:1])
    assert _top(INVOICE, question) == key


def test_a_printed_cue_word_counts_whole_and_in_one_box() -> None:
    q = "What is written next to DEPARTMENT?"
    assert printed_concepts(q, ["DEPARTMENT:", "R&D Library"], STOP_WORDS) == {"department"}
    # an OCR line running the key into the value prints no word "department": the lexicon is looked up
    assert not printed_concepts(q, ["JUne 21, 1993DEPARTMENT:"], STOP_WORDS)
    assert "department" in unprinted_key_phrases(q, ["JUne 21, 1993DEPARTMENT:"], STOP_WORDS)
    # a cue of stop words alone ("how much") is never printed
    assert "total" in concepts("How much?") and not printed_concepts("How much?", ["How much"], STOP_WORDS)


def test_context_words_match_no_box_but_weigh_in_the_question() -> None:
    page = ["Company Reg No.: 75495-W", "GL HANDICRAFT & TAILORING", "RECEIPT", "Issued by cashier 2"]
    cfg = LexicalConfig()
    got = dict(zip(page, lexical_scores(page, "Which company issued this receipt?", cfg).tolist(), strict=True))
    assert got["RECEIPT"] == 0.0 and got["Issued by cashier 2"] == 0.0  # the document's words locate nothing
    alone = lexical_scores(page, "Which company?", cfg)[0]
    assert 0.0 < got["Company Reg No.: 75495-W"] < alone  # a box naming one word of three is a partial match


def test_a_cue_word_in_running_text_names_no_key() -> None:
    page = [
        "The information in this facsimile message is confidential and intended only for the addressee",
        "Fax Number:",
        "(910) 741-5000",
    ]
    q = "What is the facsimile number?"
    assert not printed_concepts(q, page, STOP_WORDS)  # a sentence is not a key: the lexicon is looked up
    assert _top(page, q) == "Fax Number:"
