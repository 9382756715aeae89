"""Questions and page text in any script (issue 45): tokens, numbers, dates, amounts, answer types, notes.

* ``tokens``: letters of any alphabet ("Größe" is one token, accents folded on both sides), NFKC (full-width forms),
  CJK runs as character bigrams with their function words and hiragana dropped, European amounts canonical.
* ``answer_types`` in the question's language; ``has_type`` reads CJK and European dates and amounts.
* the English MiniLM is not asked about a CJK question (its similarities would be noise).
* ``script_notes``: one line for each script the text path cannot read; Chinese and Japanese are read.
* Nothing crashes on any Unicode (hypothesis, through the query cues, the notes and the lexical matcher).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arr_coc.query import parse_query
from arr_coc.reading.config import LexicalConfig, SemanticConfig
from arr_coc.reading.matching.lexical import answer_types, has_type, lexical_scores, query_terms, tokens
from arr_coc.reading.matching.semantic import semantic_similarities
from arr_coc.reading.scripts import script_notes, script_of
from arr_coc.realizing import query_notes


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("Größe", ("große",)),
        ("GRÖSSE", ("grösse".replace("ö", "o"),)),
        ("Número de factura", ("numero", "de", "factura")),
        ("Ｔｏｔａｌ：１２３", ("total", "123")),  # full-width forms (NFKC)
        ("1.234,56 €", ("1234.56",)),
        ("12,50 €", ("12.5",)),
        ("发票号码是多少？", ("发票", "票号", "号码")),
        ("請求書の合計金額はいくらですか？", ("請求", "求書", "合計", "計金", "金額")),
        ("合計：¥1,234", ("合計", "1234")),
        ("2026年11月28日", ("2026", "年", "11", "月", "28", "日")),
        # English as before
        ("Total: $1,234.00", ("total", "1234")),
        ("What is the invoice no.?", ("what", "is", "the", "invoice", "number")),
        ("Invoiced 3 items", ("invoic", "3", "item")),
    ],
)
def test_tokens_in_any_script(text: str, want: tuple[str, ...]) -> None:
    assert tokens(text) == want


def test_a_chinese_question_finds_its_key_and_not_the_others() -> None:
    texts = ["发票号码：", "A12345", "开票日期：", "2026年11月28日", "合计：", "¥492.50"]
    scores = lexical_scores(texts, "开票日期是哪一天？", LexicalConfig())
    assert int(np.argmax(scores)) == 2 and scores[0] == 0.0
    assert [t for t, _ in query_terms("开票日期是哪一天？", LexicalConfig())] == ["开票", "票日", "日期"]


def test_german_and_french_keys_match_with_or_without_accents() -> None:
    texts = ["Fälligkeit:", "Gesamtbetrag:", "Échéance :", "Montant total :"]
    assert int(np.argmax(lexical_scores(texts, "Wie hoch ist der Gesamtbetrag?", LexicalConfig()))) == 1
    assert int(np.argmax(lexical_scores(texts, "Quelle est l'echeance ?", LexicalConfig()))) == 2


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("开票日期是哪一天？", "date"),
        ("合计金额是多少？", "money"),
        ("合計はいくらですか？", "money"),
        ("支払期限はいつですか？", "date"),
        ("Wie viel kostet das?", "money"),
        ("Quel est le montant total ?", "money"),
        ("¿Cuándo vence la factura?", "date"),
        ("Wer ist der Kunde?", "person"),
        ("What is the total?", "money"),
        ("When was it paid?", "date"),
    ],
)
def test_answer_types_in_the_questions_language(question: str, kind: str) -> None:
    assert kind in answer_types(question)


def test_english_questions_get_no_foreign_types() -> None:
    assert answer_types("What was the date?") == ("date",)
    assert answer_types("Describe the picture") == ()


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("2026年11月28日", "date"),
        ("令和8年", "date"),
        ("28.11.2026", "date"),
        ("28. November 2026", "date"),
        ("12 de marzo de 2026", "date"),
        ("1.234,56 €", "money"),
        ("¥492.50", "money"),
        ("350元", "money"),
        ("1,200円", "money"),
    ],
)
def test_value_patterns_read_other_formats(text: str, kind: str) -> None:
    assert has_type(text, kind)


class _Embedder:
    def embed(self, texts):
        raise AssertionError("the English MiniLM must not be asked about a CJK question")


def test_a_cjk_question_is_matched_lexically_alone() -> None:
    out = semantic_similarities(_Embedder(), ["合计", "小计"], "合计金额是多少？", SemanticConfig(), 512)
    assert out.tolist() == [0.0, 0.0]


@pytest.mark.parametrize(
    ("question", "words"),
    [
        ("얼마를 지불해야 합니까?", "Korean"),
        ("كم يجب أن أدفع؟", "right-to-left"),
        ("कितना भुगतान करना है?", "Devanagari"),
        ("ต้องจ่ายเท่าไหร่", "Thai"),
        ("Сколько стоит?", "Cyrillic"),
    ],
)
def test_unread_scripts_say_what_happens_in_one_line(question: str, words: str) -> None:
    notes = query_notes(question)
    assert len(notes) == 1 and words in notes[0] and "query-blind" in notes[0]


def test_read_scripts_have_no_note_and_mixed_questions_name_the_ignored_words() -> None:
    assert query_notes("合计金额是多少？") == [] and query_notes("請求書の合計は？") == []
    assert query_notes("Wie hoch ist die Größe?") == []
    notes = script_notes("Total 얼마 合计")
    assert len(notes) == 1 and notes[0].endswith(": 얼마") and "Korean" in notes[0]
    assert script_of("ß") == "latin" and script_of("の") == "cjk" and script_of("1") is None


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=80))
def test_nothing_crashes_on_any_unicode(question: str) -> None:
    cues = parse_query(question)
    assert 0.0 <= cues.specificity <= 1.0
    query_notes(question)
    answer_types(question)
    terms = query_terms(question, LexicalConfig())
    assert all(isinstance(t, str) and t for t, _ in terms)
    texts = ["合计：", "¥492.50", "Größe", question]
    scores = lexical_scores(texts, question, LexicalConfig())
    assert scores.shape == (4,) and np.all((scores >= 0) & (scores <= 1))
    assert all(has_type(question, k) in (True, False) for k in ("date", "money", "phone"))
