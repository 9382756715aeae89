"""Greek and Cyrillic look-alikes of Latin letters inside a Latin word read as the Latin word (issue 45): "Tοpic" with a
Greek omicron, in a question or in OCR text, matches "Topic"; a word wholly in Greek or Cyrillic is left alone."""

from __future__ import annotations

import numpy as np

from arr_coc.reading.config import LexicalConfig
from arr_coc.reading.matching.lexical import lexical_scores, tokens
from arr_coc.reading.scripts import script_notes
from arr_coc.reading.text import HOMOGLYPHS, clean, fold, fold_homoglyphs

GREEK_TOPIC = "T\u03bfpic"  # a real form question's key: a Greek small omicron between Latin letters
CYRILLIC_CODE = "C\u043ede"  # a Cyrillic small o


def test_look_alikes_inside_a_latin_word_fold_to_latin() -> None:
    assert fold_homoglyphs(GREEK_TOPIC) == "Topic"
    assert fold_homoglyphs(f"What does the form say for {GREEK_TOPIC}?") == "What does the form say for Topic?"
    assert fold_homoglyphs(CYRILLIC_CODE + " \u0420O-12") == "Code PO-12"  # a Cyrillic capital Er beside a Latin O
    assert fold(GREEK_TOPIC) == "topic" and clean(CYRILLIC_CODE) == "Code"
    assert tokens(GREEK_TOPIC) == tokens("Topic") == ("topic",)
    assert all(len(k) == len(v) == 1 and v.isascii() and v.isalpha() for k, v in HOMOGLYPHS.items())


def test_words_wholly_in_greek_or_cyrillic_and_other_text_are_left_alone() -> None:
    greek, cyrillic = "\u03a4\u03bf\u03c1", "\u0441\u0447\u0451\u0442"
    for text in (greek, cyrillic, "Topic", "合计金额", "Größe 1.234,56 €", "", "αβγ x"):
        assert fold_homoglyphs(text) == text
    assert tokens(cyrillic) == ("\u0441\u0447\u0435\u0442",)  # Cyrillic stays Cyrillic (its accent folded)


def test_a_look_alike_question_matches_the_latin_key_and_is_read() -> None:
    texts = ["Topic:", "Cyrogeneric Epidemiology", "Date: 12/03/1998"]
    for query in (f"What does the form say for {GREEK_TOPIC}?", "What does the form say for Topic?"):
        scores = lexical_scores(texts, query, LexicalConfig())
        assert int(np.argmax(scores)) == 0 and scores[0] > 0.5
    # the OCR side too: a box read with a look-alike matches the Latin question
    assert lexical_scores([f"{GREEK_TOPIC}:", "Other"], "What is the Topic?", LexicalConfig())[0] > 0.5
    assert script_notes(f"What does the form say for {GREEK_TOPIC}?") == []  # not "Greek ignored"
    assert script_notes("\u0427\u0442\u043e \u044d\u0442\u043e?")  # a Cyrillic question still says it is not read
