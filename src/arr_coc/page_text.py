"""A born-digital PDF page's own text layer as the text path's boxes: exact words, no OCR.

    PDF page ──► PDFium's text runs (``PdfTextPage.get_rect``: one box per run of text in one font and one line)
             ──► (text, box as fractions of the page), top to bottom
    picture  ──► :class:`LayerReader.read`: the runs scaled to the picture (what an OCR reader returns: ``TextBox``)

Why: a typeset manual's PDF carries every word with its box. Reading it costs ~3 ms a page (OCR of a dense page: seconds
on a CPU) and is exact where OCR misreads a small or monospaced word, so ``arr_coc.pages.allocate_pages`` scores a PDF
page from its text layer when it has one and OCR-reads it only when it has none (a scan). Single-page ``allocate`` is
untouched (it reads pixels; this reader is passed only by ``allocate_pages`` for a PDF's pages).

Why runs, not lines: the text path is box-based (a box that names the question's words is a key, the boxes to its right
and below are its candidate values), and a manual sets a name in its own font ("octetName" in typewriter, then ": name
of the OCTET STRING field"), so a run is the key alone and the rest of the line its value; joined into one line, the
key's box is long, its match diluted, and a lone mention elsewhere on the page wins. Chosen on the tuning sources of
``benchmarks/pages_manuals.py`` (the right page alone at 1% of 8 pages: lines 0.808, runs 0.882, words 0.731; held-out
sources: 0.556, 0.808, 0.787).

Example:
    >>> reader = LayerReader((("Report bugs to: help@gnu.org", (0.1, 0.1, 0.5, 0.12)),))
    >>> [(b.text, b.box) for b in reader.read(Image.new("RGB", (200, 100)))]
    [('Report bugs to: help@gnu.org', (20.0, 10.0, 100.0, 12.0))]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from PIL import Image

Line = tuple[str, tuple[float, float, float, float]]  # text, (x0, y0, x1, y1) as fractions of the page, y down

JOIN_GAP = 1.0  # runs on one baseline are one line when the gap between them is under this many line heights
MIN_CHARS = 20  # a page whose text layer has fewer visible characters is read by OCR (a scan, a picture)


def _clean(text: str) -> str:
    """PDFium's text of a run: its soft hyphen (U+0002) a hyphen, line breaks and repeated spaces one space."""
    return " ".join(text.replace("\x02", "-").replace("\r", " ").replace("\n", " ").replace("\x00", "").split())


def _words(runs: list[Line]) -> list[Line]:
    """Each run split at its spaces, a word's box its share of the run's width by characters."""
    out: list[Line] = []
    for text, (x0, y0, x1, y1) in runs:
        at = 0
        for word in text.split(" "):
            a, b = at, at + len(word)
            at = b + 1
            if word:
                w = (x1 - x0) / max(1, len(text))
                out.append((word, (x0 + a * w, y0, x0 + b * w, y1)))
    return out


def text_lines(textpage: Any, width: float, height: float, unit: str = "run") -> tuple[Line, ...]:
    """The boxes of one page's text layer (an open ``pypdfium2.PdfTextPage`` of a page ``width`` x ``height``
    points), top to bottom, left to right; () when the page has fewer than ``MIN_CHARS`` visible characters.
    ``unit``: "run" (PDFium's runs, the default), "line" (runs on one baseline joined when the gap is under
    ``JOIN_GAP`` line heights) or "word" (each run split at its spaces)."""
    runs = []
    for i in range(textpage.count_rects()):
        left, bottom, right, top = textpage.get_rect(i)
        text = _clean(textpage.get_text_bounded(left, bottom, right, top))
        if text and right > left and top > bottom:
            runs.append((text, (left / width, 1 - top / height, right / width, 1 - bottom / height)))
    if sum(len(t) for t, _ in runs) < MIN_CHARS:
        return ()
    runs.sort(key=lambda r: (round((r[1][1] + r[1][3]) / 2 * height), r[1][0]))
    if unit == "run":
        return tuple(runs)
    if unit == "word":
        return tuple(_words(runs))
    lines: list[list[Any]] = []
    for text, box in runs:
        if lines:
            last_text, last = lines[-1]
            h = max(last[3] - last[1], box[3] - box[1]) * height  # points
            same_row = abs((last[1] + last[3]) / 2 - (box[1] + box[3]) / 2) * height < 0.5 * h
            gap = (box[0] - last[2]) * width
            if same_row and -0.5 * h <= gap < JOIN_GAP * h:
                lines[-1] = [
                    f"{last_text} {text}",
                    (min(last[0], box[0]), min(last[1], box[1]), max(last[2], box[2]), max(last[3], box[3])),
                ]
                continue
        lines.append([text, box])
    return tuple((t, tuple(float(v) for v in b)) for t, b in lines)  # type: ignore[misc]


class LayerReader:
    """An OCR reader's interface (``read(picture) -> list[TextBox]``) over one page's text layer: the lines scaled to
    the picture's pixels. ``fallback``: the reader for a page with no text layer (None: the default OCR reader).

    Args:
        lines: the page's :func:`text_lines` (fractions of the page).
        fallback: read the picture with this when ``lines`` is empty.
    """

    def __init__(self, lines: Sequence[Line], fallback: Any = None) -> None:
        self.lines = tuple(lines)
        self.fallback = fallback

    def read(self, picture: Any) -> list:
        from .reading import TextBox

        if not self.lines:
            if self.fallback is None:
                from .reading import shared_reader

                return shared_reader(warm=True).read(picture)
            return self.fallback.read(picture)
        if isinstance(picture, Image.Image):
            w, h = picture.size
        else:
            arr = np.asarray(picture)
            h, w = int(arr.shape[0]), int(arr.shape[1])
        return [TextBox(t, (b[0] * w, b[1] * h, b[2] * w, b[3] * h), 1.0) for t, b in self.lines]


__all__ = ["JOIN_GAP", "MIN_CHARS", "LayerReader", "Line", "text_lines"]
