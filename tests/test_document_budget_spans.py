"""The in-page key-span rule in the model paths (issue 39, "in the model"): ``compress(budget_scope="prompt")`` (and the
vLLM plugin, through the same ``split_prompt``) spends each page's share from its key spans as
``allocate_pages`` / ``decide_pages`` do, with one shared function (``spans.refocus_pages``)."""

from __future__ import annotations

import importlib.util
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from PIL import Image, ImageDraw

from arr_coc.attending import TokenBudget
from arr_coc.deciding import Scoring
from arr_coc.integrations.document_budget import ScoredPage, split_prompt
from arr_coc.pages import PagesConfig, decide_pages
from arr_coc.reading.ocr.reader import TextBox

HAS_OCR = importlib.util.find_spec("rapidocr") is not None and importlib.util.find_spec("onnxruntime") is not None
QUESTION = "What does XpowN return?"
# relative boxes (x0, y0, x1, y1 in [0, 1]) of each page's lines; page 2 answers (spans.py's example page)
LINES = [
    [("Chapter 1 General remarks on the weather", (0.05, 0.05, 0.9, 0.09)),
     ("and the seasons of the year in the north", (0.05, 0.15, 0.9, 0.19)),
     ("XpowN is mentioned here once in passing", (0.05, 0.6, 0.9, 0.64))],
    [("result ^= Multiply(m, XpowN(d));", (0.05, 0.05, 0.85, 0.09)),
     ("see XpowN below for the loop", (0.05, 0.2, 0.72, 0.24)),
     ("// XpowN returns x**N mod P(x). Then", (0.05, 0.5, 0.92, 0.54)),
     ("the table is reduced.", (0.05, 0.65, 0.55, 0.69))],
    [("Appendix B Index of terms", (0.05, 0.05, 0.7, 0.09)),
     ("weather seasons north year", (0.05, 0.3, 0.7, 0.34))],
]  # fmt: skip
MARKS = [(200, 0, 0), (0, 200, 0), (0, 0, 200)]  # each page's corner colour: how the stand-in reader knows it
SIZE = (336, 448)  # (W, H): already the Qwen2.5-VL grid's size (12 x 16 merged cells): no resize anywhere


class PageReader:
    """OCR stand-in: each page's lines, in the pixels of the picture it is given (any size), found by its corner."""

    loaded = True

    def warmup(self) -> None:
        pass

    def read(self, picture):
        pixels = np.asarray(picture.convert("RGB") if isinstance(picture, Image.Image) else picture)
        h, w = pixels.shape[:2]
        corner = pixels[h - 6, w - 6].astype(int)
        page = int(np.argmin([np.abs(corner - m).sum() for m in MARKS]))
        return [TextBox(t, (x0 * w, y0 * h, x1 * w, y1 * h)) for t, (x0, y0, x1, y1) in LINES[page]]


def pages() -> list[Image.Image]:
    out = []
    for lines, mark in zip(LINES, MARKS, strict=True):
        img = Image.new("RGB", SIZE, "white")
        draw = ImageDraw.Draw(img)
        for _, (x0, y0, x1, y1) in lines:
            draw.rectangle((x0 * SIZE[0], y0 * SIZE[1], x1 * SIZE[0], y1 * SIZE[1]), fill=(20, 20, 20))
        draw.rectangle((SIZE[0] - 28, SIZE[1] - 28, SIZE[0], SIZE[1]), fill=mark)
        out.append(img)
    return out


def realizer():
    from arr_coc import Realizer
    from arr_coc.config import RelevanceConfig
    from arr_coc.reading import Reading, ReadingConfig

    r = Realizer(RelevanceConfig(term_weights=(3.0, 0.0, 0.5), reading={"semantic": {"enabled": False}}))
    reading = Reading(ReadingConfig().replace(semantic={"enabled": False}))
    reading.reader = PageReader()
    r._reading = reading
    return r


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
    imgs = pages()
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
