"""Scanned pages: OCR-noise tolerant word matching and word units that do not chain across tight lines.

Two weak spots of the text path on real scans (issue 40; ``benchmarks/scans_data.py`` builds the questions):

- **Tight lines.** PP-OCR's line boxes are the detector's unclipped text regions, about twice as tall as the ink
  (a 31 px word in a 62 px box). On running text set tight (typewriter pages, books, 300 dpi office scans) the box of
  one line overlaps the next line's box, so a word's cells (``word_units``, kept whole by ``select_units``) share
  cells with the words of the lines above and below, and keeping one word drags in all of them: at a tight budget
  the answer's word no longer fits and is passed. ``tight_prose`` detects such a page from the boxes alone (lines
  that overlap, ``tight_lines``, holding running text);
  ``core_boxes`` shrinks every box to its ink band (``CORE`` of its height, around its centre) and
  ``QueryMatcher.units`` builds the word units from those on such pages only (forms, receipts, tables and pages
  whose lines do not overlap keep their units exactly).
- **Misread words.** A question quotes the page as printed; OCR reads ``0`` for ``O``, ``rn`` for ``m``, drops or
  doubles a letter, glues two words or splits one. ``ocr_token_sim`` scores two tokens under those confusions (1.0
  equal; below 1 for a confusion-equal or near spelling, scaled by length) and ``match_span`` finds a phrase in a
  word sequence allowing a glued pair ("deuien" for "de uien") or a split word ("lin zen" for "linzen").

Depends on nothing but the standard library and NumPy (plain boxes in, plain boxes out).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import numpy as np

CORE = 0.5  # share of an OCR box's height that holds the ink (the detector's unclip ratio is about 2)
TIGHT_SHARE = 0.25  # a page is tight when at least this share of its line boxes overlaps the next line's box
TIGHT_MIN = 4  # ... and at least this many do
PROSE_WORDS = 4  # running text: the median line box holds this many words or more
_CONFUSE = str.maketrans({"0": "o", "1": "l", "i": "l", "|": "l", "!": "l", "5": "s", "8": "b", "6": "b", "$": "s"})
_DIGRAPHS = (("rn", "m"), ("cl", "d"), ("vv", "w"), ("ii", "u"), ("li", "h"))


def tight_lines(boxes: Sequence[Any]) -> bool:
    """Whether the page's line boxes overlap the next line's (``TIGHT_SHARE`` of them, ``TIGHT_MIN`` at least).

    Args:
        boxes: ``TextBox``-like objects (``.box`` = ``(x0, y0, x1, y1)``) or plain 4-sequences.
    """
    b = np.asarray([getattr(x, "box", x) for x in boxes], dtype=np.float64).reshape(-1, 4)
    if len(b) < TIGHT_MIN:
        return False
    h = b[:, 3] - b[:, 1]
    cy = (b[:, 1] + b[:, 3]) / 2
    order = np.argsort(cy, kind="stable")
    overlapping = 0
    for n, i in enumerate(order):
        for j in order[n + 1 :]:
            if cy[j] - cy[i] > h[i]:  # lines below this one no longer reach it
                break
            if cy[j] - cy[i] < 0.5 * min(h[i], h[j]):  # the same line (or a box beside it)
                continue
            wide = min(b[i, 2], b[j, 2]) - max(b[i, 0], b[j, 0])
            if wide > 0.3 * min(b[i, 2] - b[i, 0], b[j, 2] - b[j, 0]) and b[j, 1] < b[i, 3]:
                overlapping += 1
                break
    return overlapping >= TIGHT_MIN and overlapping >= TIGHT_SHARE * len(b)


def tight_prose(boxes: Sequence[Any]) -> bool:
    """Whether the page is running text set tight: ``tight_lines`` and its boxes hold ``PROSE_WORDS`` words or more
    at the median (forms, receipts and tables, whose boxes hold a key or a value, keep their word units)."""
    words = [len(str(getattr(x, "text", "")).split()) for x in boxes]
    return bool(words) and float(np.median(words)) >= PROSE_WORDS and tight_lines(boxes)


def core_boxes(boxes: Sequence[Any]) -> list[Any]:
    """The boxes shrunk vertically to their ink band (``CORE`` of the height around the centre), same type."""
    out = []
    for tb in boxes:
        x0, y0, x1, y1 = tb.box
        half = (y1 - y0) * CORE / 2
        cy = (y0 + y1) / 2
        out.append(type(tb)(tb.text, (x0, cy - half, x1, cy + half), tb.confidence))
    return out


def _fold(tok: str) -> str:
    out = tok.translate(_CONFUSE)
    for a, b in _DIGRAPHS:
        out = out.replace(a, b)
    return out


def _edits(a: str, b: str) -> int:
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


@lru_cache(maxsize=65536)
def ocr_token_sim(a: str, b: str) -> float:
    """Similarity of a question's token ``a`` and a page token ``b`` read by OCR, in [0, 1].

    1.0 when equal; 0.9 when equal after folding OCR's confusions (0/o, 1/l/i, 5/s, rn/m, cl/d, vv/w); else, for
    tokens of 4+ characters, ``1 - edits / longer length`` on the folded spellings when the edits are at most a
    quarter of the longer one (at least 1): 0.75 for one slip in four letters, 0.9 in ten; 0.8 when ``b`` starts or
    ends with ``a`` (4+ characters: glued to a neighbouring word); otherwise 0. Tokens of
    3 characters or fewer only match exactly or by folding (short words are common, slips there change the word).
    """
    if a == b:
        return 1.0
    fa, fb = _fold(a), _fold(b)
    if fa == fb:
        return 0.9
    if len(fa) >= 4 and len(fb) > len(fa) and (fb.startswith(fa) or fb.endswith(fa)):
        return 0.8  # glued to a neighbouring word ("uienbakken" for "bakken")
    la, lb = len(fa), len(fb)
    if min(la, lb) < 4 or abs(la - lb) > max(1, max(la, lb) // 4):
        return 0.0
    d = _edits(fa, fb)
    if d > max(1, max(la, lb) // 4):
        return 0.0
    return round(min(0.9, 1.0 - d / max(la, lb)), 4)


def match_span(
    toks: Sequence[str], target: Sequence[str], start: int = 0, end: int | None = None, floor: float = 0.7
) -> tuple[int, int, float] | None:
    """The best occurrence of ``target`` in ``toks[start:end]`` scoring at least ``floor``: ``(first, last, score)``
    (indices into ``toks``, score the mean token similarity, ``ocr_token_sim``), or None. A page token may hold two
    target tokens glued ("deuien") and two page tokens may hold one split target token ("lin", "zen"); ties go to
    the earliest. Only positions where the phrase's first token (or its first two, glued) can start are tried when
    a miss there would leave the phrase under ``floor``."""
    end = len(toks) if end is None else end
    n = len(target)
    if n == 0:
        return None
    best: tuple[int, int, float] | None = None
    must_start = (n - 1) / n < floor  # a phrase missing its first token cannot reach the floor
    head = target[0] + target[1] if n > 1 else target[0]
    for i in range(start, end):
        if must_start and not (
            ocr_token_sim(target[0], toks[i]) > 0
            or ocr_token_sim(head, toks[i]) > 0
            or (i + 1 < end and ocr_token_sim(target[0], toks[i] + toks[i + 1]) > 0)
        ):
            continue
        got, j, t = 0.0, i, 0
        while t < n and j < end:
            s = ocr_token_sim(target[t], toks[j])
            if t + 1 < n:  # glued: one page token for two target tokens
                glued = ocr_token_sim(target[t] + target[t + 1], toks[j])
                if glued > s and glued >= 0.75:
                    got, j, t = got + 2 * glued * 0.95, j + 1, t + 2
                    continue
            if j + 1 < end and s < 1.0:  # split: two page tokens for one target token
                split = ocr_token_sim(target[t], toks[j] + toks[j + 1])
                if split > s and split >= 0.75:
                    got, j, t = got + split * 0.95, j + 2, t + 1
                    continue
            got, j, t = got + s, j + 1, t + 1
        score = got / n
        if t == n and score >= floor and (best is None or score > best[2] + 1e-9):
            best = (i, j - 1, score)
    return best
