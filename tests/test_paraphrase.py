"""The paraphrase lexicon: a German, French or Spanish question that names no printed key finds the key by what it
asks about (``reading.matching.paraphrase``); English questions never use it."""

from __future__ import annotations

import numpy as np
import pytest

from arr_coc.reading.config import LexicalConfig
from arr_coc.reading.matching.lexical import foreign_words, lexical_scores
from arr_coc.reading.matching.paraphrase import concepts, key_phrases

PAGE = [
    "Facture",
    "N° de facture",
    "F-2026-118",
    "Date de facture",
    "28.11.2026",
    "Échéance",
    "12.12.2026",
    "Client",
    "Hélène Dubois",
    "Sous-total",
    "412,00 €",
    "TVA",
    "82,40 €",
    "Montant total",
    "494,40 €",
    "Téléphone",
    "01 23 45 67 89",
    "Adresse",
    "12 rue de la Paix, 75002 Paris",
    "Merci de régler la facture par virement; tout retard de paiement entraîne des pénalités.",
]


@pytest.mark.parametrize(
    ("question", "want"),
    [
        ("Combien faut-il payer en tout ?", ("total",)),
        ("Combien avant les taxes ?", ("subtotal",)),  # not the tax, not the total
        ("Avant quand faut-il régler ?", ("due",)),  # not the total
        ("Quel numéro faut-il appeler ?", ("phone",)),  # not the document's number
        ("À qui la facture est-elle adressée ?", ("customer",)),  # not the address
        ("Où se trouve l'entreprise ?", ("address",)),
        ("¿Cuántos impuestos se pagaron?", ("tax",)),
        ("¿Hasta cuándo hay que pagar?", ("due",)),
        ("Wie viel kostet es vor Steuern?", ("subtotal",)),
        ("Wo sitzt die Firma?", ("address",)),
        ("An wen ist die Rechnung gerichtet?", ("customer",)),
    ],
)
def test_concepts(question: str, want: tuple[str, ...]) -> None:
    assert concepts(question) == want


@pytest.mark.parametrize(
    ("question", "key"),
    [
        ("Combien faut-il payer en tout ?", "Montant total"),
        ("Combien avant les taxes ?", "Sous-total"),
        ("Quel numéro faut-il appeler ?", "Téléphone"),
        ("À qui la facture est-elle adressée ?", "Client"),
        ("Où se trouve l'entreprise ?", "Adresse"),
        ("Quelle est la référence du document ?", "N° de facture"),
    ],
)
def test_a_paraphrased_question_finds_its_printed_key(question: str, key: str) -> None:
    scores = lexical_scores(PAGE, question, LexicalConfig())
    assert PAGE[int(np.argmax(scores))] == key, dict(zip(PAGE, scores.round(2).tolist(), strict=True))


def test_english_questions_never_use_the_lexicon() -> None:
    for q in ("How much must be paid in total?", "What is the date?", "Who is the customer?", "Café de Paris total?"):
        assert not foreign_words(q)
    assert key_phrases("How much must be paid in total?")  # the cue is there ("total") ...
    page = ["Total", "Amount due", "Sous-total"]
    got = lexical_scores(page, "Where is it?", LexicalConfig())  # ... but an English question is scored as before
    assert not got.any()


def test_a_question_naming_its_key_is_scored_by_its_own_words() -> None:
    literal = lexical_scores(PAGE, "Quel est le montant total ?", LexicalConfig())
    assert PAGE[int(np.argmax(literal))] == "Montant total" and literal.max() >= 0.6


def test_a_quoted_text_is_the_question_s_main_terms() -> None:
    from arr_coc.reading.matching.lexical import query_terms

    cfg = LexicalConfig()
    zh = dict(query_terms("「上正在运行的」后面写的是什么？", cfg))
    assert zh["正"] == zh["运行"] == 1.0 and zh["后面"] == cfg.meta_weight  # the frame only frames the quote
    de = dict(query_terms("Was steht nach „Entitäten für die“?", cfg))
    assert de["entitaten"] == de["die"] == 1.0 and de["steht"] == cfg.meta_weight
    english = 'What comes after "ability to"?'
    assert all(w == 1.0 for _, w in query_terms(english, cfg))  # English questions as before
    page = ["甚至可以通过向链接到运行进程的特殊文件写入数据", "上正在运行的进程的信息都可以在文件系统中找到。"]
    assert int(np.argmax(lexical_scores(page, "「上正在运行的」后面写的是什么？", cfg))) == 1
