"""The English paraphrase lexicon (``reading.matching.paraphrase_en``): a question that names no printed key finds it
by what it asks about ("How much was charged in total?" -> "Amount due", "Who is the recipient?" -> "TO:"), and a
question naming its key is scored by its own words as before."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from arr_coc.reading.config import LexicalConfig
from arr_coc.reading.matching.lexical import answer_types, lexical_scores
from arr_coc.reading.matching.paraphrase_en import concepts, english_key_phrases, english_types, label_hits

RECEIPT = [
    "KEDAI RUNCIT ANEKA SDN BHD",
    "No. 12, Jalan Bunga, 43000 Kajang",
    "Tel: 03-8736 1122",
    "Cashier: Aminah",
    "12/03/2018 10:23",
    "Sub Total",
    "20.00",
    "GST 6%",
    "1.20",
    "Amount Due",
    "21.20",
    "Cash",
    "50.00",
    "Change",
    "28.80",
]
MEMO = ["MEMORANDUM", "TO:", "J. Smith", "FROM:", "R. Jones", "RE:", "Sampling plan", "DATE:", "May 3, 1994", "cc:"]


@pytest.mark.parametrize(
    ("question", "want"),
    [
        ("How much was charged in total?", "payable"),
        ("What was the price before tax?", "subtotal"),
        ("How much change was given back?", "change"),
        ("By when must it be done?", "deadline"),
        ("Who is the recipient?", "recipient"),
        ("Who else received a copy?", "copies"),
        ("Who sent this?", "sender"),
        ("What is this memo about?", "subject"),
        ("What number should one ring?", "phone"),
        ("Where is the shop located?", "address"),
    ],
)
def test_concepts(question: str, want: str) -> None:
    assert concepts(question)[0] == want


@pytest.mark.parametrize(
    ("page", "question", "key"),
    [
        (RECEIPT, "How much was charged in total?", "Amount Due"),
        (RECEIPT, "What was the price before tax?", "Sub Total"),
        (RECEIPT, "What number should one ring?", "Tel: 03-8736 1122"),
        (MEMO, "Who is the recipient?", "TO:"),
        (MEMO, "Who sent this?", "FROM:"),
        (MEMO, "What is this document about?", "RE:"),
    ],
)
def test_a_paraphrased_question_finds_its_printed_key(page: list[str], question: str, key: str) -> None:
    scores = lexical_scores(page, question, LexicalConfig())
    assert page[int(np.argmax(scores))] == key, dict(zip(page, scores.round(2).tolist(), strict=True))


def test_a_question_naming_its_key_is_scored_by_its_own_words() -> None:
    page = ["Date", "Date received", "Total", "Amount due"]
    got = lexical_scores(page, "What is the Date received?", LexicalConfig())
    assert page[int(np.argmax(got))] == "Date received" and got.max() >= 0.95  # the lexicon does not fire
    assert not english_key_phrases("What does the form say for Supervisor / Manager?")


def test_labels_of_stop_words() -> None:
    got = label_hits(["TO:", "To", "to: Mr X", "Total", "Today", "Re :"], "to")
    assert got.tolist() == [1.0, 1.0, 1.0, 0.0, 0.0, 0.0]


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("Who sold these items?", "org"),
        ("Tell me who I bought this from.", "org"),
        ("Which outlet printed this receipt?", "org"),
        ("day of purchase?", "date"),
        ("What is the bottom line of the bill?", "money"),
    ],
)
def test_answer_types_of_paraphrased_wordings(question: str, kind: str) -> None:
    assert kind in english_types(question) and kind in answer_types(question)


def test_the_paraphrase_set_is_well_formed() -> None:
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "paraphrase_questions.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    assert len(rows) > 1000
    assert {r["style"] for r in rows} == {"A", "B"} and {r["split"] for r in rows} == {"dev", "held-out"}
    for r in rows:  # a source is held out whole
        assert r["id"].startswith(r["rephrases"]) and r["query"]
    split_of: dict[str, set[str]] = {}
    for r in rows:
        split_of.setdefault(r["source"], set()).add(r["split"])
    assert all(len(s) == 1 for s in split_of.values())
