"""Form keys named by their purpose (``reading.matching.form_purposes``): a question naming what a key is for finds
the key ("Who should get the reply?" -> "FROM:", "When did our office get it?" -> "Date Received", "Which product
line?" -> "BRAND"); a question the lexicon already read keeps its concepts; a buyer's own purchase day stays a date."""

from __future__ import annotations

import numpy as np
import pytest

from arr_coc.reading.config import LexicalConfig
from arr_coc.reading.matching.form_purposes import ROWS_ELSE, ROWS_FIRST, ROWS_MORE
from arr_coc.reading.matching.lexical import lexical_scores
from arr_coc.reading.matching.paraphrase_en import LEXICON, concepts, english_key_phrases

MEMO = ["MEMORANDUM", "TO:", "J. Smith", "FROM:", "R. Jones", "RE:", "Sampling plan", "DATE:", "May 3, 1994", "cc:"]
ROUTING = ["ROUTING SLIP", "Date", "4/12/93", "Date Received", "4/15/93", "Originator", "K. Lee", "Remarks", "ok"]
PROMO = ["PROMOTION REQUEST", "BRAND", "Newport", "Coupon Value", "$1.00", "Total", "1,200", "Acct. No.", "7741"]


@pytest.mark.parametrize(
    ("question", "want"),
    [
        ("Who should get the reply?", ("sender",)),  # a receiving verb, but the reply goes back to the sender
        ("Who do I respond to?", ("sender",)),
        ("Who should get this?", ("recipient",)),  # the grammar's recipient (``question_roles``) as before
        ("When did our office get it?", ("received",)),
        ("When was it logged in?", ("received",)),
        ("Which product line is this for?", ("goods",)),
        ("What kind of cigarettes are promoted?", ("goods",)),
        ("Which account is this charged to?", ("account",)),
        ("When is it needed by?", ("deadline",)),
        ("Which part of the company is it for?", ("department",)),
        ("Who was kept informed?", ("copies",)),
        ("Who compiled this?", ("sender",)),
        ("Who okayed it?", ("signature",)),
        ("Who commissioned this study?", ("requester",)),
        ("To whom is it going?", ("recipient",)),
        ("How is it described?", ("description",)),
        ("On whose behalf was the study done?", ("customer",)),
        ("How much is left?", ("funds_left",)),
        ("left?", ("funds_left",)),
        # round 11: the work a form describes, the person it is about, an outside firm, who wrote it up
        ("What does the job involve?", ("description",)),
        ("What is this study for?", ("description",)),
        ("Which person is this form filled out for?", ("person",)),
        ("Whose record is this?", ("person",)),
        ("Which outside company is doing the printing?", ("supplier",)),
        ("Which firm is handling this?", ("supplier",)),
        ("Who spotted this?", ("sender",)),
        ("Who wrote the incident up?", ("sender",)),
        ("Which cigarette product is this form about?", ("goods",)),
        # round 12: who put a request forward is its submitter; a desk's in-tray is the recipient's
        ("Who put this request forward for approval?", ("sender",)),
        ("Who sent the proposal up the line?", ("sender",)),
        ("Whose in-tray is this going into?", ("recipient",)),
        ("Whose inbox did it land in?", ("recipient",)),
    ],
)
def test_purposes_name_concepts(question: str, want: tuple[str, ...]) -> None:
    assert concepts(question) == want


@pytest.mark.parametrize(
    ("question", "want"),
    [
        ("When did I get these?", ("date",)),  # a buyer's purchase: the receipt's date, not a document's arrival
        ("When did we buy this?", ("date",)),
        ("How much was charged in total?", ("payable",)),  # "charged", not "charged to"
        ("Who else received a copy?", ("copies",)),
        ("What is this memo about?", ("subject",)),
        ("What does the form say for Supervisor / Manager?", ()),
        ("What is in the left column?", ()),
        ("Who left the message?", ("sender",)),  # the agent of an act (``question_shapes``), not a balance
        ("How much money left my account?", ("total",)),  # "left" the verb: what was spent, not a balance
        ("Which customer is this job for?", ("customer",)),  # a customer asked, not what the job is
        ("Who is this form for?", ("recipient",)),  # a memo's addressee (``question_roles``), not the person
    ],
)
def test_the_lexicons_readings_stay(question: str, want: tuple[str, ...]) -> None:
    assert concepts(question) == want


@pytest.mark.parametrize(
    ("page", "question", "key"),
    [
        (MEMO, "Who should get the reply?", "FROM:"),
        (ROUTING, "When did our office get it?", "Date Received"),
        (PROMO, "Which product line is this for?", "BRAND"),
        (PROMO, "Which account is this charged to?", "Acct. No."),
        (
            ["PERSONNEL ACTION", "NAME", "R. W. Davis", "DATE", "4/2/91", "TO:", "Payroll"],
            "Which person is this form filled out for?",
            "NAME",
        ),
        (
            ["PROJECT", "Subject:", "Budget", "Description", "Ad research", "Supplier", "Webcraft"],
            "What does this project involve?",
            "Description",
        ),
    ],
)
def test_a_purpose_finds_its_printed_key(page: list[str], question: str, key: str) -> None:
    scores = lexical_scores(page, question, LexicalConfig())
    assert page[int(np.argmax(scores))] == key, dict(zip(page, scores.round(2).tolist(), strict=True))


def test_rows_of_a_lexicon_concept_list_no_keys_and_new_purposes_do() -> None:
    lexicon = {name for name, *_ in LEXICON}
    for name, _, keys, _ in (*ROWS_FIRST, *ROWS_MORE, *ROWS_ELSE):
        assert (not keys) if name in lexicon else bool(keys), name
    assert "bal" in english_key_phrases("How much is left?")
    assert "to" in english_key_phrases("To whom is it going?")  # the lexicon's recipient keys
