"""Questions worded in German, French, Spanish, Italian or Portuguese (issue 45): their function words are not keys,
their answer types are read ("¿Quién ...?" asks for a person, "¿A qué número hay que llamar?" for a phone number),
and the English MiniLM does not pick running text as keys once the question's own words name one. English questions
are unchanged (``foreign_words`` is False for them, even when they name "Café de Paris")."""

from __future__ import annotations

import numpy as np
import pytest

from arr_coc.reading import TextBox
from arr_coc.reading.config import LexicalConfig
from arr_coc.reading.matching.lexical import answer_types, foreign_words, query_terms
from arr_coc.reading.matching.matcher import QueryMatcher

FILLER = "El clima es suave y agradable. La estación está en el centro."
PAGE = [
    TextBox("Formulario", (60, 40, 300, 80)),
    TextBox("Cliente:", (60, 140, 160, 164)),
    TextBox("Begoña Ruiz", (172, 140, 330, 164)),
    TextBox("Teléfono:", (60, 200, 170, 224)),
    TextBox("+34 91 8882 7898", (172, 200, 400, 224)),
    TextBox("Número de factura:", (60, 260, 290, 284)),
    TextBox("B72144", (300, 260, 400, 284)),
    *[TextBox(FILLER, (50, 330 + 30 * i, 850, 350 + 30 * i)) for i in range(12)],
]
CUSTOMER, PHONE, NUMBER = 2, 4, 6


@pytest.mark.parametrize(
    ("question", "terms"),
    [
        ("¿Quién es el cliente?", ["cliente"]),
        ("¿Cuál es la dirección?", ["direccion"]),
        ("Wie lautet die Rechnungsnummer?", ["die", "rechnungsnummer"]),  # "die", "de": part of keys, English words
        ("Quel est le montant de la TVA ?", ["montant", "de", "tva"]),
        ("Qual è il totale?", ["totale"]),
    ],
)
def test_function_words_of_a_foreign_question_are_not_terms(question: str, terms: list[str]) -> None:
    assert foreign_words(question)
    assert [t for t, _ in query_terms(question, LexicalConfig())] == terms


@pytest.mark.parametrize(
    "question",
    [
        "What is the total at Café de Paris?",
        "What is the LRB Or Bill No. han Au No?",
        "Who is the seller?",
        "Where does the form say “Date”?",
        "How much was paid at Système U?",
    ],
)
def test_english_questions_stay_english(question: str) -> None:
    assert not foreign_words(question)  # so its terms, answer types and semantic keys are as before


def test_an_english_question_keeps_a_foreign_word_it_names() -> None:
    assert [t for t, _ in query_terms("What is the total at Café de Paris?", LexicalConfig())] == [
        "total",
        "cafe",
        "de",
        "pari",
    ]


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("¿Quién es el cliente?", "person"),
        ("¿Quiénes firmaron?", "person"),
        ("¿A qué número hay que llamar?", "phone"),
        ("Welche Nummer kann man anrufen?", "phone"),
        ("Quel numéro faut-il appeler ?", "phone"),
    ],
)
def test_answer_types_of_paraphrased_questions(question: str, kind: str) -> None:
    assert kind in answer_types(question)


class _Embedder:
    """Stands in for the English MiniLM reading a Spanish question: the running text looks most like it."""

    def embed(self, texts):
        vecs = np.array([[1.0, 0.0] if t.startswith(("¿", "El clima")) else [0.6, 0.8] for t in texts])
        return vecs.astype(np.float32)


def test_running_text_is_no_key_once_a_foreign_questions_words_name_one() -> None:
    m = QueryMatcher(embedder=_Embedder())  # type: ignore[arg-type]
    for question, answer in (("¿Quién es el cliente?", CUSTOMER), ("¿Cuál es el teléfono?", PHONE)):
        keys = m.key_weights(PAGE, question)
        assert keys[answer - 1] == keys.max() > 0
        assert not keys[7:].any()  # before: the English MiniLM's best matches, every line of running text
        scores = m.box_scores(PAGE, question)
        assert scores[answer] == scores.max() and scores[answer] > scores[7:].max()
    scores = m.box_scores(PAGE, "¿A qué número hay que llamar?")  # "número" names the invoice number's key
    assert scores[PHONE] >= scores[NUMBER]  # the phone number's type decides
