"""Issuers and dates in the text path: what lost real receipts and running text on source-grouped folds.

- a date printed without separators ("27032018") or with an OCR'd separator ("05-05~18") is a date, so a date
  question keeps it (the answer-type prior and the learned scorer's ``is_date``);
- a question about the business behind a document ("Which shop issued this receipt?", "Who is the seller?") asks
  for an organisation: names with a legal form or a kind of business, and the page's first line, are candidates;
- a checkpoint trained before a feature was added still reads today's ``box_features`` rows.

Hand-made boxes, lexical matching only (no model, no data).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from arr_coc.reading import QueryMatcher, TextBox
from arr_coc.reading.matching.learned import FEATURES, BoxScorer, box_features
from arr_coc.reading.matching.lexical import answer_types, has_type
from arr_coc.reading.matching.matcher import first_line

ROOT = Path(__file__).resolve().parents[1]

# a receipt: the shop's name heads it, the customer's company is printed lower down, a compact date, a total
RECEIPT = [
    TextBox("HON HWA HARDWARE TRADING", (120, 40, 600, 80)),
    TextBox("No. 37, Jalan Manis 7", (160, 90, 560, 125)),
    TextBox("Tel: 03-9130 2672", (200, 130, 520, 165)),
    TextBox("CASH RECEIPT", (220, 200, 500, 240)),
    TextBox("Bill to:", (40, 260, 160, 295)),
    TextBox("Makassar Fresh Market", (170, 260, 560, 295)),
    TextBox("Date:", (40, 310, 130, 345)),
    TextBox("27032018", (140, 310, 300, 345)),
    TextBox("Invoice No: 12345678", (330, 310, 650, 345)),
    *[TextBox(f"ITEM {i} BOLT M{i}", (40, 380 + 40 * i, 400, 410 + 40 * i)) for i in range(6)],
    *[TextBox(f"{i + 1}.50", (520, 380 + 40 * i, 620, 410 + 40 * i)) for i in range(6)],
    TextBox("TOTAL", (40, 640, 160, 675)),
    TextBox("RM 31.50", (480, 640, 620, 675)),
    TextBox("Thank you. Please come again.", (100, 720, 620, 760)),
]  # fmt: skip
SHOP, CUSTOMER, DATE, INVOICE_NO = 0, 5, 7, 8


@pytest.mark.parametrize("text", ["27032018", "20180327", "03272018", "27.03.2018", "05-05~18", "Date:27/03/2018"])
def test_dates_in_any_printed_form_are_dates(text: str) -> None:
    assert has_type(text, "date")


@pytest.mark.parametrize("text", ["12345678", "00123456", "27132018", "32032018", "27031850", "Invoice No: 98765432"])
def test_other_digit_runs_are_not_dates(text: str) -> None:
    assert not has_type(text, "date")


def test_a_compact_date_is_not_a_phone_number() -> None:
    assert has_type("12345678", "phone") and not has_type("27032018", "phone")


@pytest.mark.parametrize(
    "query",
    ["Which shop issued this receipt?", "Which store issued this receipt?", "Who is the seller?",
     "What is the name of the company that issued this receipt?", "Which company issued this receipt?",
     "Who is the vendor?", "Which restaurant is this bill from?"],
)  # fmt: skip
def test_issuer_questions_ask_for_an_organisation(query: str) -> None:
    assert "org" in answer_types(query)


@pytest.mark.parametrize("query", ["What is the date on this receipt?", "How much was paid?", "Who signed the form?"])
def test_other_questions_do_not(query: str) -> None:
    assert "org" not in answer_types(query)


@pytest.mark.parametrize(
    ("text", "org"),
    [("GARDENIA BAKERIES (KL) SDN BHD", True), ("Segi Cash & Carry Sdn.Bhd", True), ("ACME Ltd.", True),
     ("RESTORAN WAN SHENG", True), ("Muller GmbH", True), ("Smart marketing plan", False), ("TOTAL", False),
     ("Thank you. Please come again.", False)],
)  # fmt: skip
def test_organisation_names(text: str, org: bool) -> None:
    assert has_type(text, "org") is org


def test_first_line_is_the_top_line_with_words() -> None:
    boxes = [TextBox("*", (0, 0, 10, 8)), TextBox("ACME", (0, 20, 60, 40)), TextBox("LTD", (70, 22, 110, 42))]
    boxes.append(TextBox("Date", (0, 60, 40, 80)))
    assert first_line(boxes).tolist() == [False, True, True, False]
    assert first_line([]).tolist() == []
    assert first_line([TextBox("12", (0, 0, 9, 9))]).tolist() == [False]


def test_the_issuer_is_a_candidate_of_an_issuer_question() -> None:
    m = QueryMatcher(semantic=False)
    prior = m.type_prior(RECEIPT, "Which shop issued this receipt?")
    assert prior[SHOP] > 0  # first line and a kind of business
    assert prior[CUSTOMER] > 0  # a kind of business, not on the first line
    assert prior[DATE] == 0 and prior[INVOICE_NO] == 0
    scores = m.box_scores(RECEIPT, "Which shop issued this receipt?")
    assert scores[SHOP] >= scores[3]  # the name ranks with the "RECEIPT" key the question's words find
    assert scores[SHOP] > np.median(scores)


def test_a_date_question_keeps_a_compact_date() -> None:
    m = QueryMatcher(semantic=False)
    for query in ("What is the date on this receipt?", "On what day was this purchase made?"):
        prior = m.type_prior(RECEIPT, query)
        assert prior[DATE] > 0 and prior[INVOICE_NO] == 0
        scores = m.box_scores(RECEIPT, query)
        assert int(np.argsort(-scores)[0]) == DATE or scores[DATE] == scores.max()


def test_the_learned_features_see_both_types() -> None:
    m = QueryMatcher(semantic=False)
    feats = box_features(m, RECEIPT, "Who is the seller?", original_size=(700, 800))  # (N, F)
    col = {f: feats[:, i] for i, f in enumerate(FEATURES)}
    assert col["is_org"][SHOP] == 1 and col["is_org"][DATE] == 0 and col["q_org"].min() == 1
    assert col["is_date"][DATE] == 1 and col["digit_run"][DATE] == 0 and col["digit_run"][INVOICE_NO] == 1


def test_a_checkpoint_without_the_new_features_reads_todays_rows() -> None:
    old = tuple(f for f in FEATURES if f not in ("is_org", "q_org"))
    scorer = BoxScorer(hidden=0, features=old, residual=True).eval()
    feats = box_features(QueryMatcher(semantic=False), RECEIPT, "Who is the seller?", original_size=(700, 800))
    cut = scorer.own_columns(feats)
    assert cut.shape == (len(RECEIPT), len(old))
    assert np.array_equal(cut[:, old.index("rule")], feats[:, FEATURES.index("rule")])
    assert scorer.box_scores(cut).shape == (len(RECEIPT),)
    with pytest.raises(ValueError, match="expected"):
        scorer.box_scores(feats)  # the full rows are refused, not misread
    gone = BoxScorer(hidden=0, features=(*old, "no_such_feature"))
    with pytest.raises(ValueError, match="no_such_feature"):
        gone.own_columns(feats)
    current = BoxScorer(hidden=0)
    assert current.own_columns(feats) is feats
