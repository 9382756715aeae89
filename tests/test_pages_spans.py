"""Key spans (``arr_coc.reading.matching.spans``): a page's small share of a document's budget is spent where the
question's words stand together, then along the text that follows them, before the page's other mentions."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import torch

from arr_coc.pages import decide_pages
from arr_coc.reading.matching.propagation import span_cells
from arr_coc.reading.matching.spans import (
    SpanConfig,
    key_spans,
    question_terms,
    reading_words,
    refocus,
    span_priorities,
)
from arr_coc.reading.ocr.reader import TextBox

SIZE = (400, 200)  # (W, H) of the synthetic page; a 20 x 40 grid of 10 px cells
ROWS, COLS = 20, 40


def _page() -> list[TextBox]:
    """A dense page: the question's name in a code line, in a prose mention, and once where the answer follows."""
    return [
        TextBox("result ^= Multiply(m, XpowN(d));", (0, 10, 340, 20)),
        TextBox("see XpowN below for the loop", (0, 40, 290, 50)),
        TextBox("// XpowN returns x**N mod P(x). Then", (0, 100, 370, 110)),
        TextBox("the table is reduced.", (0, 130, 210, 140)),
    ]


def _cells(box: tuple[float, float, float, float]) -> np.ndarray:
    return span_cells(np.array([box], dtype=np.float64), ROWS, COLS, SIZE)[1][0]


def test_question_terms_split_content_from_link_words():
    assert question_terms("What does XpowN return?") == (["xpown", "return"], [])
    assert question_terms("What is the word size?") == (["word", "size"], ["is"])


def test_the_occurrence_that_gathers_the_question_ranks_first():
    spans = key_spans(_page(), "What does XpowN return?")
    assert spans[0].line == 2 and spans[0].score == 1.0  # "XpowN returns": subject and verb together
    assert {s.line for s in spans[1:]} == {0, 1} and all(s.score < 1.0 for s in spans[1:])


def test_letter_spaced_words_are_read_as_one():
    boxes = [TextBox("9 // XpowN r e t u r n s (x", (0, 10, 280, 20))]
    assert "returns" in [w.text for w in reading_words(boxes)]


def test_a_quote_mark_joins_the_line_it_sits_on():
    boxes = [TextBox('"', (0, 10, 5, 13)), TextBox("till", (10, 10, 40, 21)), TextBox(": a pointer", (45, 10, 150, 22))]
    assert [w.line for w in reading_words(boxes)] == [0, 0, 0, 0, 0]


def test_a_definition_mark_counts_as_the_link_and_a_comparison_does_not():
    boxes = [TextBox("(rnd2 == MPFR_RNDN)", (0, 10, 190, 20)), TextBox("rnd2 : the rounding mode", (0, 40, 240, 50))]
    spans = key_spans(boxes, "What is rnd2?")
    assert spans[0].line == 1 and spans[1].score < 1.0


def test_priority_runs_along_the_sentence_after_the_phrase_and_stops_at_its_end():
    prio = span_priorities(_page(), "What does XpowN return?", ROWS, COLS, SIZE).reshape(ROWS, COLS)
    line = prio[10]  # the answer's line (y 100-110)
    words = reading_words(_page())
    at = {w.text: _cells(w.box) for w in words if w.line == 2}
    phrase, answer = at["XpowN"], at["x**N"]
    after = np.setdiff1d(at["Then"], at["P(x)."])  # a cell shared by two words takes the better one's
    assert prio.reshape(-1)[phrase].max() == 1.0
    assert 0 < prio.reshape(-1)[answer].max() < 1.0  # after the phrase, a little less each word
    assert prio.reshape(-1)[after].max() == 0.0  # "P(x)." ends the sentence
    assert line.max() == 1.0 and prio[13].max() == 0.0  # nothing on the next sentence's line


def test_refocus_keeps_the_answer_where_the_page_scores_favour_another_line():
    boxes = _page()
    scores = np.zeros((ROWS, COLS), dtype=np.float32)
    scores[1, :34] = 1.0  # the matcher lifts the code line
    scores[4, :29] = 0.9
    scores[10, :37] = 0.6  # the answer's line, lower
    page = SimpleNamespace(text_boxes=boxes, grid=(ROWS, COLS), original=SIZE, scores=scores, units=[])
    answer = _cells(reading_words(boxes)[[w.text for w in reading_words(boxes)].index("x**N")].box)
    plain = torch.sort(torch.from_numpy(scores.reshape(-1)), descending=True, stable=True).indices[:20]
    assert not np.isin(answer, plain.numpy()).all()
    kept = refocus(page, "What does XpowN return?", 20, 0.5)
    assert kept is not None and kept.numel() == 20 and np.isin(answer, kept.numpy()).all()
    assert refocus(page, "What is the weather?", 20, 0.5) is None  # the question names nothing on the page
    assert refocus(page, "What does XpowN return?", 20, 0.0) is None  # focus off


def test_decide_pages_spends_the_same_shares_and_focus_zero_is_the_plain_selection():
    boxes = _page()
    scores = np.zeros((ROWS, COLS), dtype=np.float32)
    scores[1, :34], scores[10, :37] = 1.0, 0.6
    page = SimpleNamespace(text_boxes=boxes, grid=(ROWS, COLS), original=SIZE, scores=scores, units=[])
    other = SimpleNamespace(text_boxes=[], grid=(ROWS, COLS), original=SIZE, scores=scores * 0.5, units=[])
    q = "What does XpowN return?"
    plain = decide_pages([page, other], {0: 1.0, 1: 0.5}, True, 24)
    off = decide_pages([page, other], {0: 1.0, 1: 0.5}, True, 24, query=q, focus=0.0)
    on = decide_pages([page, other], {0: 1.0, 1: 0.5}, True, 24, query=q, focus=0.5)
    assert all(torch.equal(a, b) for a, b in zip(plain, off, strict=True))
    assert [len(k) for k in on] == [len(k) for k in plain]  # the page split is the document decision's
    assert torch.equal(on[1], plain[1]) and not torch.equal(on[0], plain[0])


def test_span_config_defaults_are_the_documented_ones():
    assert SpanConfig() == SpanConfig(window=4, near=0.8, after=0.9, horizon=16, defines=1.0, guard_evidence=True,
                                      guard_typed=True)  # fmt: skip


def test_a_more_specific_rule_of_the_text_path_is_left_alone():
    boxes = [TextBox("Date: 2024-03-01 XpowN returns x", (0, 10, 330, 20))]
    scores = np.ones((ROWS, COLS), dtype=np.float32)
    page = SimpleNamespace(text_boxes=boxes, grid=(ROWS, COLS), original=SIZE, scores=scores, units=[], evidence=None)
    assert refocus(page, "What does XpowN return?", 8, 0.5) is not None
    assert refocus(page, "When is the date?", 8, 0.5) is None  # a typed answer: the type prior places it
    page.evidence = SimpleNamespace(rule="table-cell")
    assert refocus(page, "What does XpowN return?", 8, 0.5) is None
