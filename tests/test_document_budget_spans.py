"""The in-page key-span rule in the model paths (issue 39, "in the model"): ``compress(budget_scope="prompt")`` (and the
vLLM plugin, through the same ``split_prompt``) spends each page's share from its key spans as
``allocate_pages`` / ``decide_pages`` do, with one shared function (``spans.refocus_pages``)."""

from __future__ import annotations

import importlib.util
from types import SimpleNamespace

import pytest
import torch
from spans_pages import LINES, QUESTION, config, pages, read_by_stand_in

from arr_coc.attending import TokenBudget
from arr_coc.deciding import Scoring
from arr_coc.integrations.document_budget import ScoredPage, split_prompt
from arr_coc.pages import PagesConfig, decide_pages
from arr_coc.reading.ocr.reader import TextBox

HAS_OCR = importlib.util.find_spec("rapidocr") is not None and importlib.util.find_spec("onnxruntime") is not None
SIZE = (336, 448)  # (W, H): already the Qwen2.5-VL grid's size (12 x 16 merged cells): no resize anywhere


def realizer():
    from arr_coc import Realizer

    return read_by_stand_in(Realizer(config()))


# ----- the rule on scorings: the same function as decide_pages --------------------------------------------------------
def _scoring(lines, rows=20, cols=40, size=(400, 200), seed=0) -> Scoring:
    w, h = size
    boxes = [TextBox(t, (x0 * w, y0 * h, x1 * w, y1 * h)) for t, (x0, y0, x1, y1) in lines]
    scores = torch.rand(1, rows, cols, generator=torch.Generator().manual_seed(seed))
    prior = torch.full((1, rows, cols), 0.5)
    if any("XpowN returns" in t for t, _ in lines):
        prior[0, 0, 0] = 1.0  # the page that matches
        scores[0, 1, :34] += 1.0  # its scores lift the code line, not the answer's
    return Scoring(scores, [], prior, "text", boxes=[boxes], sizes=[size])


def test_split_prompt_spends_each_share_from_the_key_spans_as_decide_pages():
    scorings = [_scoring(lines, seed=i) for i, lines in enumerate(LINES)]
    flat = [s.scores.flatten() for s in scorings]
    budget = TokenBudget.parse(24)
    got = split_prompt(flat, budget, QUESTION, scorings)
    plain = split_prompt(flat, budget, QUESTION, scorings, config=PagesConfig(focus=0.0))
    assert [len(k) for k in got] == [len(k) for k in plain] == [0, 24, 0]  # the page split is unchanged
    assert not torch.equal(got[1], plain[1])  # the answer's page spent from its key spans
    allocations = [
        SimpleNamespace(
            text_boxes=s.boxes[0], evidence=None, grid=(20, 40), original=(400, 200), scores=s.scores[0].numpy(),
            units=[],
        )
        for s in scorings
    ]  # fmt: skip
    same = decide_pages(allocations, {0: 0.0, 1: 1.0, 2: 0.0}, True, 24, query=QUESTION, focus=PagesConfig().focus)
    assert torch.equal(same[1], got[1])
    # a scoring whose picture size is unknown, or read as texture, keeps the split's cells
    assert ScoredPage.of(Scoring(flat[0].view(1, 20, 40), mode="text", boxes=[[]]), flat[0]) is None
    assert ScoredPage.of(Scoring(flat[0].view(1, 20, 40)), flat[0]) is None


# ----- on a tiny random-weight model: compress's kept cells are allocate_pages' -------------------------------------
@pytest.fixture(scope="module")
def tiny():
    pytest.importorskip("transformers")
    if not HAS_OCR:
        pytest.skip("the [ocr] extra is not installed (mode='text' checks for it)")
    from arr_coc.testing import tiny_model

    model, processor = tiny_model("qwen2.5-vl")
    imgs = pages(SIZE)
    content = [{"type": "image"} for _ in imgs] + [{"type": "text", "text": QUESTION}]
    text = processor.apply_chat_template([{"role": "user", "content": content}], tokenize=False,
                                         add_generation_prompt=True)  # fmt: skip
    return model, processor, imgs, dict(processor(text=[text], images=imgs, return_tensors="pt"))


@pytest.mark.parametrize("budget", [12, 0.02])
def test_compress_keeps_the_cells_allocate_pages_keeps(tiny, budget):
    from arr_coc import compress
    from arr_coc.pages import allocate_pages

    model, processor, imgs, inputs = tiny
    r = realizer()
    doc = allocate_pages(imgs, QUESTION, budget, family="qwen2.5-vl", max_pixels=256 * 28 * 28, mode="text",
                         realizer=r)  # fmt: skip
    assert doc.specific and [p.budget for p in doc.pages][1] == doc.budget  # the answer's page gets it all
    unfocused = allocate_pages(imgs, QUESTION, budget, family="qwen2.5-vl", max_pixels=256 * 28 * 28, mode="text",
                               realizer=r, config=PagesConfig(focus=0.0))  # fmt: skip
    assert not torch.equal(unfocused.pages[1].keep, doc.pages[1].keep)  # the rule changes this page's cells
    for foveate in (False, True):
        cm = compress(model, budget, processor=processor, query=QUESTION, realizer=r, budget_scope="prompt",
                      text_prior=True, foveate=foveate)  # fmt: skip
        with torch.no_grad():
            cm(**inputs)
        got = [a.keep.tolist() for a in cm.last_allocation[0]]
        assert got == [p.keep.tolist() for p in doc.pages], foveate
        if foveate:  # the tower encoded each page's kept patches only: none for the pages that keep nothing
            feats = cm.last_inputs.mm_encoder_outputs["image"].pooler_output
            assert [int(f.shape[0]) for f in feats] == [len(k) for k in got]


def test_the_refocused_path_at_full_budget_is_the_model(tiny):
    from arr_coc import compress

    model, processor, _, inputs = tiny
    with torch.no_grad():
        ref = model(**inputs).logits
        cm = compress(model, 1.0, processor=processor, query=QUESTION, realizer=realizer(), budget_scope="prompt",
                      text_prior=True)  # fmt: skip
        assert torch.equal(cm(**inputs).logits, ref)
        fov = compress(model, 1.0, processor=processor, query=QUESTION, realizer=realizer(), budget_scope="prompt",
                       text_prior=True, foveate=True)  # fmt: skip
        torch.testing.assert_close(fov(**inputs).logits, ref, rtol=1e-5, atol=1e-5)
