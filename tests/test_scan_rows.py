"""Rows of scanned pages read with noise (issue 40, round 4): phrases over joined words, evidence on tight lines."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import torch

from arr_coc.attending import select
from arr_coc.reading.layout import analyse, parse, resolve
from arr_coc.reading.layout.scan_rows import ink_regions, word_tokens
from arr_coc.reading.matching.matcher import QueryMatcher
from arr_coc.reading.ocr.reader import TextBox

ROOT = Path(__file__).resolve().parents[1]


def _lines(lines: list[str], pitch: float, height: float, cw: float = 10.0) -> list[TextBox]:
    """One OCR box per line, ``pitch`` px apart and ``height`` px tall (PP-OCR's boxes are ~2x the ink)."""
    return [
        TextBox(t, (20, 20 + i * pitch, 20 + cw * len(t), 20 + i * pitch + height), 0.9) for i, t in enumerate(lines)
    ]


def test_word_tokens_flatten_and_remember_their_word():
    toks, owner, first = word_tokens([["new", "york"], ["but"], [], ["kieft"]])
    assert toks == ["new", "york", "but", "", "kieft"]
    assert owner == [0, 0, 1, 2, 3]
    assert first == [0, 2, 3, 4, 5]  # word i's tokens are first[i]:first[i + 1]


HISTORY = [
    "the West India company of Amster-",
    "dam. Wouter Van Twiller arrived at Fort Amsterdam",
    "(now New York) and took upon him the government of",
    "the colony, in June 1629. His style, in the patents",
    "In 1640, the English, who had taken possession of the",
    "about 40 miles from the city of New-York. But Kieft broke",
    "up their establishment and the English retired",
]


def test_phrase_over_a_word_ocr_read_with_a_hyphen():
    """ "New-York." is one OCR word holding two tokens: the phrase "New-York But" is found there, not at the weaker
    "New York) and" three lines above (2 of 3 tokens), which won when page words were compared whole."""
    layout = analyse(_lines(HISTORY, 40, 24))
    words = [w.text for w in layout.words]
    ev = resolve(layout, parse("What word precedes \u00abNew-York But\u00bb?"))
    assert ev is not None and ev.rule == "after-phrase"
    at = int(ev.detail.rsplit(" ", 1)[1])
    assert words[at] == "New-York." and words[at - 1] == "of"
    ev = resolve(layout, parse("Which word comes right after 'New-York But'?"))
    assert ev is not None and words[int(ev.detail.rsplit(" ", 1)[1])] == "New-York."
    assert min(r[1] for r in ev.regions) == layout.words[at].box[1]  # from line 6 on, never line 3
    # whole words still match as before
    ev = resolve(layout, parse("Which word comes right after 'Wouter Van'?"))
    assert ev is not None and words[int(ev.detail.rsplit(" ", 1)[1])] == "Wouter"


def test_ink_regions_only_on_tight_running_text():
    tight = _lines(HISTORY, 20, 40)  # boxes twice as tall as the line pitch
    spaced = _lines(HISTORY, 40, 24)
    r = [TextBox("", (20.0, 100.0, 80.0, 140.0))]
    (got,) = ink_regions(r, tight, "after-phrase")
    assert got.box == (20.0, 110.0, 80.0, 130.0)  # the middle half: the ink band
    assert ink_regions(r, spaced, "after-phrase")[0].box == r[0].box
    assert ink_regions(r, tight, "ordinal-unit")[0].box == r[0].box  # blocks and sections keep their extent


def test_evidence_on_a_tight_page_keeps_the_answer_not_the_neighbour_lines():
    """A small scan, tight lines in a coarse grid: the evidence painted with the full boxes topped the cells of the
    lines above and below, whose words (units on the ink band) were kept first and spent the budget."""
    lines = [
        "evidence and shall finally hear and determine",
        "matter brought before them in the most summary",
        "and expeditious manner and in case any person",
        "shall be convicted of any crime for which the",
        "the offender ought to suffer death they shall",
        "shall give judgment and award and cause the",
    ]
    size = (480, 144)
    # 6 lines 24 px apart, boxes 48 px tall (twice the ink); the grid 6 x 20 (24 px cells), budget 11.1%
    boxes = [TextBox(t, (10, i * 24 - 12, 10 + 10.5 * len(t), i * 24 + 36), 0.95) for i, t in enumerate(lines)]
    rows, cols = 6, 20
    m = QueryMatcher(semantic=False)
    scores, ev = m.relevance_and_evidence(boxes, "What word precedes \u00abof any\u00bb?", rows, cols, size)
    assert ev is not None and ev.rule == "after-phrase"
    layout = m.layout_of(boxes)
    conv = next(w for w in layout.words if w.text == "convicted")
    x0, y0, x1, y1 = conv.box
    cy = (y0 + y1) / 2
    answer = {int(cy // 24) * cols + c for c in range(int(x0 // 24), int((x1 - 1) // 24) + 1)}
    k = round(0.111 * rows * cols)
    flat = torch.as_tensor(np.asarray(scores, dtype=np.float32)).ravel()
    keep = set(select(flat, k, units=m.units(boxes, rows, cols, size)).tolist())
    assert answer <= keep
    # the evidence's best cells sit on the answer's own line (its ink band), not on the neighbours'
    flat = flat.numpy()
    top_rows = {int(i) // cols for i in np.flatnonzero(flat >= flat.max() - 1e-6)}
    assert top_rows == {int(cy // 24)}


def test_round4_sources_split_before_measuring():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import scans_data

    assert set(scans_data.NEW_HELD_OUT) <= set(scans_data.NEW_SOURCES) <= set(scans_data.PAGES)
    dev = set(scans_data.NEW_SOURCES) - set(scans_data.NEW_HELD_OUT)
    assert dev == {"journal", "oldbook", "dewarp", "dibco"}
    assert all(s in scans_data.__doc__ for s in scans_data.NEW_SOURCES)


def test_fax_copy_is_black_and_white_with_lines_shown_twice():
    import random

    from PIL import Image, ImageDraw

    sys.path.insert(0, str(ROOT / "benchmarks"))
    import scans_data

    page = Image.new("RGB", (400, 300), "white")
    ImageDraw.Draw(page).text((20, 20), "the quick brown fox", fill="black")
    fax = scans_data.fax_copy(page, 0.5, random.Random(0))
    arr = np.asarray(fax.convert("L"))
    assert fax.size == (200, 150)
    assert set(np.unique(arr).tolist()) <= {0, 255} and (arr == 0).any()
    assert np.array_equal(arr[0::2], arr[1::2])  # 98 dpi lines, each shown twice
