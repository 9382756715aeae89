"""Structure: layout analysis on OCR boxes (lines, columns, blocks, sections, title, reading order, words, charts).

The text path (``arr_coc.reading``) matches a question's words against recognised text boxes. Questions about a
page's *structure* ("the second section of the left column", "the last word of the section titled X", "which word
comes right after 'ability to'", "the title of this page", "which month has the lowest value") name no box; they
need to know how the boxes are organised. This module recovers that organisation from box geometry alone, so it
works on any OCR output (plain data in, plain data out; no image, no model):

    boxes ─► lines      boxes on one baseline whose gaps are small (a table cell or a column's line stays apart)
          ─► columns    vertical white gutters in the x-coverage of the lines; lines crossing a gutter "span"
          ─► blocks     a column's lines split at vertical gaps and at changes of text height
          ─► roles      title (largest text near the top), heading (taller or short unpunctuated single line),
                        code (``=``, ``>>>``, brackets), footnote (small text at the bottom), paragraph
          ─► sections   a heading and the blocks after it, in reading order (a section may continue in the next
                        column); attributed to the column of its heading
          ─► order      spanning blocks above the columns, the columns left to right, spanning blocks below
          ─► words      each line's words with boxes interpolated by character position (OCR gives line boxes)
          ─► chart      numeric value labels and short category labels (what a comparison must keep)

Every threshold is a field of ``LayoutConfig`` (one commented config, no literals in the code paths).

Example:
    >>> boxes = [("Title Here", (10, 10, 300, 50)), ("left text", (10, 80, 140, 100)),
    ...          ("right text", (200, 80, 330, 100))]
    >>> layout = analyse(boxes)
    >>> [layout.line_text(i) for i in layout.title]
    ['Title Here']
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

__all__ = ["Box", "LayoutConfig", "Word", "Line", "Block", "Section", "Layout", "analyse", "flat_layout", "as_pairs"]

Box = tuple[float, float, float, float]  # (x0, y0, x1, y1) pixels, x right, y down

_NUMBER_RE = re.compile(r"^[\s$€£¥(+-]*\d[\d,.' ]*%?[)]?\s*[a-zA-Z]{0,4}\.?$")
_CODE_RE = re.compile(r"^\s*(?:>>>|\$ |#include|def |import |from \S+ import)|[=(\[{].*[)\]}]|\w\s?=\s?\S")
_END_PUNCT = ".,;:!?"


@dataclass(frozen=True)
class LayoutConfig:
    """Thresholds of the layout analysis.

    Text size is measured as a line's width per character (``cw``), relative to the page's median: OCR detectors
    pad their boxes and a slightly rotated scan makes long lines' boxes taller, so box heights say little about the
    font size, while width per character follows it closely (a bold heading at 1.3x the body size is ~1.4x as wide
    per character). Horizontal gaps are in units of the page's median ``cw``; vertical gaps in units of the
    median line pitch (top-to-top distance of consecutive lines in a column).
    """

    line_overlap: float = 0.5  # boxes share a line when their vertical overlap >= this share of the smaller height
    line_gap: float = 2.5  # ... and the horizontal gap between them is at most this many cw (else: another column)
    gutter_min: float = 2.0  # a column gutter is an x-range at least this many cw wide ...
    gutter_max_share: float = 0.04  # ... covered by at most this share of the lines (at least 1: a title may cross it)
    block_pitch: float = 1.3  # a line further below the previous one than this many median pitches starts a block
    heading_size: float = 1.25  # a heading-like line (short, capitalised, unpunctuated) this much larger: a heading
    heading_max_words: int = 8  # headings are short
    plain_heading_max_words: int = 6  # a body-size single line this short, unpunctuated, capitalised, is a heading
    title_size: float = 1.45  # the title's text is at least this many times the body size ...
    title_top_share: float = 0.3  # ... and starts in the top 30% of the text's vertical extent
    footnote_size: float = 0.9  # text smaller than this in the bottom 25% of the text's extent is a footnote
    label_max_words: int = 3  # chart category labels are short


@dataclass(frozen=True)
class Word:
    """One word of a line, with a box interpolated from the character positions in its OCR box."""

    text: str
    box: Box
    line: int  # index into Layout.lines
    source: int  # index of the OCR box it came from


@dataclass(frozen=True)
class Line:
    """OCR boxes on one baseline, left to right, close enough to read as one line."""

    boxes: tuple[int, ...]  # indices into the input boxes
    text: str
    box: Box
    column: int  # index into Layout.columns, -1 when the line crosses a gutter (titles, full-width text)


@dataclass(frozen=True)
class Block:
    """Consecutive lines of one column with no large gap or height change between them."""

    lines: tuple[int, ...]  # indices into Layout.lines, top to bottom
    box: Box
    column: int
    role: str  # "title" | "heading" | "paragraph" | "code" | "footnote"


@dataclass(frozen=True)
class Section:
    """A heading and the blocks after it (in reading order) up to the next heading."""

    heading: int | None  # index into Layout.blocks (None: text before the first heading)
    blocks: tuple[int, ...]  # indices into Layout.blocks, heading first, reading order
    column: int  # column of the heading (or of the first block)


@dataclass
class Layout:
    """The page's structure; every list is in reading order and refers to the input boxes by index."""

    boxes: list[tuple[str, Box]]
    body_height: float  # median line height (px)
    lines: list[Line] = field(default_factory=list)
    columns: list[tuple[float, float]] = field(default_factory=list)  # (x0, x1), left to right
    blocks: list[Block] = field(default_factory=list)  # reading order
    sections: list[Section] = field(default_factory=list)  # reading order
    title: tuple[int, ...] = ()  # line indices of the title (empty when none is found)
    words: list[Word] = field(default_factory=list)  # reading order
    values: tuple[int, ...] = ()  # box indices whose text is a number (chart values, ticks, table numbers)
    labels: tuple[int, ...] = ()  # box indices of short non-numeric texts (axis / category / legend labels)

    def line_text(self, i: int) -> str:
        """Text of line ``i``."""
        return self.lines[i].text

    def block_text(self, b: int) -> str:
        """Text of block ``b``, lines joined by spaces."""
        return " ".join(self.lines[i].text for i in self.blocks[b].lines)

    def block_words(self, b: int) -> list[int]:
        """Indices into ``words`` of block ``b``'s words, in reading order."""
        lines = set(self.blocks[b].lines)
        return [k for k, w in enumerate(self.words) if w.line in lines]

    def section_words(self, s: int) -> list[int]:
        """Indices into ``words`` of section ``s``'s words (heading included), in reading order."""
        return [k for b in self.sections[s].blocks for k in self.block_words(b)]

    def summary(self) -> dict[str, Any]:
        """A JSON-able description (for debugging and the CLI): roles, columns, sections and the title."""
        return {
            "columns": [list(c) for c in self.columns],
            "title": [self.line_text(i) for i in self.title],
            "blocks": [{"role": b.role, "column": b.column, "text": self.block_text(k)[:60]}
                       for k, b in enumerate(self.blocks)],
            "sections": [{"heading": None if s.heading is None else self.block_text(s.heading), "column": s.column,
                          "blocks": len(s.blocks)} for s in self.sections],
            "config": asdict(LayoutConfig()),
        }


def as_pairs(boxes: Sequence[Any]) -> list[tuple[str, Box]]:
    """``(text, box)`` pairs from ``TextBox``-like objects (``.text``, ``.box``) or from pairs already.

    Raises:
        TypeError: if an item is neither.
    """
    out: list[tuple[str, Box]] = []
    for b in boxes:
        if hasattr(b, "text") and hasattr(b, "box"):
            text, box = b.text, b.box
        elif isinstance(b, (tuple, list)) and len(b) == 2:
            text, box = b
        else:
            raise TypeError(f"a box must have .text and .box or be a (text, (x0, y0, x1, y1)) pair, got {b!r}")
        x0, y0, x1, y1 = (float(v) for v in box)
        out.append((str(text), (min(x0, x1), min(y0, y1), max(x0, x1), max(y0, y1))))
    return out


def _cw(text: str, box: Box) -> float:
    """Width per character of a text box (a font-size estimate that box padding and slight rotation barely move)."""
    return max(1e-3, box[2] - box[0]) / max(1, len(text.strip()))


def _median_cw(texts: Sequence[str], boxes: Sequence[Box]) -> float:
    """The page's median width per character, over texts of 3+ characters (all texts when none is that long)."""
    vals = [_cw(t, b) for t, b in zip(texts, boxes, strict=True) if len(t.strip()) >= 3]
    vals = vals or [_cw(t, b) for t, b in zip(texts, boxes, strict=True)]
    return float(np.median(vals))


def _union(boxes: Sequence[Box]) -> Box:
    return (min(b[0] for b in boxes), min(b[1] for b in boxes), max(b[2] for b in boxes), max(b[3] for b in boxes))


def _height(b: Box) -> float:
    return max(1.0, b[3] - b[1])


def analyse(boxes: Sequence[Any], config: LayoutConfig | None = None) -> Layout:
    """Recover the layout of a page from its OCR boxes.

    Args:
        boxes: ``TextBox``-like objects or ``(text, (x0, y0, x1, y1))`` pairs, in pixels (any order).
        config: thresholds (default ``LayoutConfig()``).

    Returns:
        A ``Layout``; empty lists for an empty page.
    """
    cfg = config or LayoutConfig()
    pairs = as_pairs(boxes)
    if not pairs:
        return Layout(boxes=[], body_height=0.0)
    cw = _median_cw([t for t, _ in pairs], [b for _, b in pairs])
    lines = _lines(pairs, cw, cfg)
    columns = _columns(lines, cw, cfg)
    lines = [_assign_column(ln, columns, cw) for ln in lines]
    body_h = float(np.median([_height(ln.box) for ln in lines]))
    blocks = _blocks(lines, cw, cfg)
    blocks, title = _roles(blocks, lines, cw, cfg)
    blocks = _reading_order(blocks, lines)
    sections = _sections(blocks)
    words = [w for b in blocks for i in b.lines for w in _words(pairs, lines, i)]
    values = tuple(i for i, (t, _) in enumerate(pairs) if _NUMBER_RE.match(t))
    title_boxes = {j for i in title for j in lines[i].boxes}
    labels = tuple(i for i, (t, _) in enumerate(pairs)
                   if i not in values and i not in title_boxes and 0 < len(t.split()) <= cfg.label_max_words)
    return Layout(pairs, body_h, lines, columns, blocks, sections, title, words, values, labels)


def flat_layout(boxes: Sequence[Any], config: LayoutConfig | None = None) -> Layout:
    """No layout analysis (the ablation): each box is its own line and paragraph, in the given (OCR) order, in one
    column; no title, headings or sections. Words and value/label typing are kept."""
    cfg = config or LayoutConfig()
    pairs = as_pairs(boxes)
    if not pairs:
        return Layout(boxes=[], body_height=0.0)
    lines = [Line((i,), t, b, 0) for i, (t, b) in enumerate(pairs)]
    blocks = [Block((i,), ln.box, 0, "paragraph") for i, ln in enumerate(lines)]
    x0 = min(b[0] for _, b in pairs)
    x1 = max(b[2] for _, b in pairs)
    words = [w for i in range(len(lines)) for w in _words(pairs, lines, i)]
    values = tuple(i for i, (t, _) in enumerate(pairs) if _NUMBER_RE.match(t))
    labels = tuple(i for i, (t, _) in enumerate(pairs)
                   if i not in values and 0 < len(t.split()) <= cfg.label_max_words)
    body_h = float(np.median([_height(b) for _, b in pairs]))
    return Layout(pairs, body_h, lines, [(x0, x1)], blocks, [Section(None, tuple(range(len(blocks))), 0)], (), words,
                  values, labels)


def _lines(pairs: list[tuple[str, Box]], h: float, cfg: LayoutConfig) -> list[Line]:
    """Group boxes into lines, left to right: a box joins the line whose last box ends just left of it (gap at most
    ``line_gap * h``, ``h`` the page's median width per character) on the same baseline (vertical overlap at least
    ``line_overlap`` of the smaller height), the best-overlapping such line; otherwise it starts a line."""
    order = sorted(range(len(pairs)), key=lambda i: (pairs[i][1][0], pairs[i][1][1]))
    runs: list[list[int]] = []
    for i in order:
        b = pairs[i][1]
        best, best_ov = None, 0.0
        for r, run in enumerate(runs):
            last = pairs[run[-1]][1]
            gap = b[0] - last[2]
            if not -0.5 * h <= gap <= cfg.line_gap * h:
                continue
            ov = (min(b[3], last[3]) - max(b[1], last[1])) / min(_height(b), _height(last))
            if ov >= cfg.line_overlap and ov > best_ov:
                best, best_ov = r, ov
        if best is None:
            runs.append([i])
        else:
            runs[best].append(i)
    lines = [_line(pairs, run) for run in runs]
    lines.sort(key=lambda ln: (ln.box[1], ln.box[0]))
    return lines


def _line(pairs: list[tuple[str, Box]], idx: list[int]) -> Line:
    return Line(tuple(idx), " ".join(pairs[i][0] for i in idx), _union([pairs[i][1] for i in idx]), -1)


def _columns(lines: list[Line], h: float, cfg: LayoutConfig) -> list[tuple[float, float]]:
    """Column x-ranges: the page's text extent cut at the middle of each vertical white gutter (an interior x-range,
    at least ``gutter_min * h`` wide, that almost no line covers)."""
    x0 = min(ln.box[0] for ln in lines)
    x1 = max(ln.box[2] for ln in lines)
    width = int(np.ceil(x1 - x0)) + 1
    cover = np.zeros(width, dtype=np.int32)
    for ln in lines:
        cover[int(ln.box[0] - x0): int(np.ceil(ln.box[2] - x0)) + 1] += 1
    free = cover <= max(1, int(cfg.gutter_max_share * len(lines)))
    cuts: list[float] = []
    x = 0
    while x < width:
        if free[x]:
            end = x
            while end < width and free[end]:
                end += 1
            interior = x > 0 and end < width
            if interior and end - x >= cfg.gutter_min * h:
                cuts.append(x0 + (x + end) / 2)
            x = end
        else:
            x += 1
    edges = [x0, *cuts, x1]
    return [(edges[k], edges[k + 1]) for k in range(len(edges) - 1)]


def _assign_column(ln: Line, columns: list[tuple[float, float]], h: float) -> Line:
    """The column holding the line's centre; -1 when the line reaches over a cut into a neighbour by > h."""
    cx = (ln.box[0] + ln.box[2]) / 2
    k = next((c for c, (a, b) in enumerate(columns) if a <= cx <= b), 0)
    a, b = columns[k]
    spans = ln.box[0] < a - h or ln.box[2] > b + h
    return Line(ln.boxes, ln.text, ln.box, -1 if spans else k)


def _line_cw(ln: Line) -> float:
    return _cw(ln.text, ln.box)


def _blocks(lines: list[Line], cw: float, cfg: LayoutConfig) -> list[Block]:
    """Split each column's lines (top to bottom) where the pitch to the previous line is unusually large, or where a
    short line's text is ``heading_size`` times larger or smaller than its neighbour's (a heading)."""
    by_col: dict[int, list[int]] = {}
    for i, ln in enumerate(lines):
        by_col.setdefault(ln.column, []).append(i)
    pitches: list[float] = []
    for idx in by_col.values():
        idx.sort(key=lambda i: lines[i].box[1])
        pitches += [lines[b].box[1] - lines[a].box[1] for a, b in zip(idx, idx[1:], strict=False)]  # top to top
    pitches = [p for p in pitches if p > 0]
    pitch = float(np.median(pitches)) if pitches else float(np.median([_height(ln.box) for ln in lines]))
    blocks: list[Block] = []
    for col in sorted(by_col):
        run: list[int] = []
        for i in by_col[col]:
            if run:
                prev, cur = lines[run[-1]], lines[i]
                step = max(cur.box[1] - prev.box[1], cur.box[3] - prev.box[3])  # a taller heading box: bottoms
                ratio = _line_cw(cur) / _line_cw(prev)
                larger = cur if ratio > 1 else prev
                resized = max(ratio, 1 / ratio) >= cfg.heading_size and _heading_like(larger.text, cfg)
                if step > cfg.block_pitch * pitch or resized:
                    blocks.append(Block(tuple(run), _union([lines[j].box for j in run]), col, "paragraph"))
                    run = []
            run.append(i)
        if run:
            blocks.append(Block(tuple(run), _union([lines[j].box for j in run]), col, "paragraph"))
    return blocks


def _roles(blocks: list[Block], lines: list[Line], cw: float,
           cfg: LayoutConfig) -> tuple[list[Block], tuple[int, ...]]:
    """Title, headings, code, footnotes; returns the re-labelled blocks and the title's line indices."""
    top = min(b.box[1] for b in blocks)
    bottom = max(b.box[3] for b in blocks)
    extent = max(1.0, bottom - top)

    def text_h(b: Block) -> float:  # text size relative to the body (width per character)
        return float(np.median([_line_cw(lines[i]) for i in b.lines])) / cw

    title_block: int | None = None
    cands = [k for k, b in enumerate(blocks)
             if text_h(b) >= cfg.title_size and b.box[1] - top <= cfg.title_top_share * extent
             and len(b.lines) <= 3]
    if cands:
        title_block = max(cands, key=lambda k: (text_h(blocks[k]), -blocks[k].box[1]))
    out: list[Block] = []
    for k, b in enumerate(blocks):
        text = " ".join(lines[i].text for i in b.lines).strip()
        n_words = len(text.split())
        th = text_h(b)
        if k == title_block:
            role = "title"
        elif th >= cfg.heading_size and len(b.lines) <= 2 and _heading_like(text, cfg):
            role = "heading"
        elif (len(b.lines) == 1 and 0 < n_words <= cfg.plain_heading_max_words and text[-1] not in _END_PUNCT
              and not _CODE_RE.search(text) and not _NUMBER_RE.match(text) and text[:1].isupper()
              and _has_block_below(blocks, k)):
            role = "heading"
        elif th <= cfg.footnote_size and b.box[1] - top >= 0.75 * extent:
            role = "footnote"
        elif len(b.lines) <= 2 and _CODE_RE.search(text):
            role = "code"
        else:
            role = "paragraph"
        out.append(Block(b.lines, b.box, b.column, role))
    title = out[title_block].lines if title_block is not None else ()
    return out, title


def _heading_like(text: str, cfg: LayoutConfig) -> bool:
    """Short, starting with a capital or digit, not ending like a sentence or a clause."""
    text = text.strip()
    return (0 < len(text.split()) <= cfg.heading_max_words and text[-1] not in _END_PUNCT
            and (text[0].isupper() or text[0].isdigit()))


def _has_block_below(blocks: list[Block], k: int) -> bool:
    """A body-sized line is a heading only when a paragraph of two or more lines follows it in its column."""
    b = blocks[k]
    below = [o for o in blocks if o.column == b.column and o.box[1] > b.box[1]]
    if not below:
        return False
    nxt = min(below, key=lambda o: o.box[1])
    return len(nxt.lines) >= 2


def _reading_order(blocks: list[Block], lines: list[Line]) -> list[Block]:
    """Spanning blocks above the columns, then each column top to bottom, then spanning blocks below."""
    col_blocks = [b for b in blocks if b.column >= 0]
    col_top = min((b.box[1] for b in col_blocks), default=float("inf"))

    def key(b: Block) -> tuple[int, int, float]:
        if b.column >= 0:
            return (1, b.column, b.box[1])
        return (0 if b.box[1] < col_top else 2, 0, b.box[1])

    return sorted(blocks, key=key)


def _sections(blocks: list[Block]) -> list[Section]:
    sections: list[Section] = []
    cur: list[int] = []
    head: int | None = None
    for k, b in enumerate(blocks):
        if b.role in ("title", "footnote"):
            continue
        if b.role == "heading":
            if cur:
                sections.append(Section(head, tuple(cur), blocks[cur[0]].column))
            head, cur = k, [k]
        else:
            cur.append(k)
    if cur:
        sections.append(Section(head, tuple(cur), blocks[cur[0]].column))
    return sections


def _words(pairs: list[tuple[str, Box]], lines: list[Line], i: int) -> list[Word]:
    """Words of line ``i`` with boxes interpolated by character position inside each OCR box."""
    out: list[Word] = []
    for src in lines[i].boxes:
        text, (x0, y0, x1, y1) = pairs[src]
        n = max(1, len(text))
        for m in re.finditer(r"\S+", text):
            a = x0 + (x1 - x0) * m.start() / n
            b = x0 + (x1 - x0) * m.end() / n
            out.append(Word(m.group(), (a, y0, b, y1), i, src))
    return out
