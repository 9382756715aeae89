"""Three synthetic pages whose OCR is a stand-in, for the in-page key-span rule in the model paths
(tests/test_document_budget_spans.py, tests/vllm_plugin/test_vllm_qwen2_5_vl.py): page 2 answers :data:`QUESTION`
(``arr_coc.reading.matching.spans``' example page), and the stand-in reader finds each page's lines by its corner's
colour, in the pixels of whatever picture it is given (the original, or a model's frame)."""

from __future__ import annotations

import numpy as np
from PIL import Image, ImageDraw

from arr_coc.reading.ocr.reader import TextBox

QUESTION = "What does XpowN return?"
# relative boxes (x0, y0, x1, y1 in [0, 1]) of each page's lines
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


def pages(size: tuple[int, int]) -> list[Image.Image]:
    """The three pages at ``size`` (W, H): a dark bar where each line is, the page's colour in its corner."""
    out = []
    for lines, mark in zip(LINES, MARKS, strict=True):
        img = Image.new("RGB", size, "white")
        draw = ImageDraw.Draw(img)
        for _, (x0, y0, x1, y1) in lines:
            draw.rectangle((x0 * size[0], y0 * size[1], x1 * size[0], y1 * size[1]), fill=(20, 20, 20))
        draw.rectangle((size[0] - 28, size[1] - 28, size[0], size[1]), fill=mark)
        out.append(img)
    return out


def config():
    """A relevance config whose decision ``allocate`` and ``compress`` share exactly: no token-feature coupling (the
    model's features reach ``compress`` only), MiniLM off."""
    from arr_coc.config import RelevanceConfig

    return RelevanceConfig(term_weights=(3.0, 0.0, 0.5), reading={"semantic": {"enabled": False}})


def read_by_stand_in(realizer):
    """``realizer`` with the stand-in reader as its text path's OCR (MiniLM off); returned."""
    from arr_coc.reading import Reading, ReadingConfig

    reading = Reading(ReadingConfig().replace(semantic={"enabled": False}))
    reading.reader = PageReader()
    realizer._reading = reading
    return realizer
