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
          ─► tables     runs of baseline rows whose separate cells align into columns; header row and row-label
                        column; ``headers_of(i)`` gives a value's row and column header boxes

Every threshold is a field of ``PageLayoutConfig`` (one commented config, no literals in the code paths).

Example:
    >>> boxes = [("Title Here", (10, 10, 300, 50)), ("left text", (10, 80, 140, 100)),
    ...          ("right text", (200, 80, 330, 100))]
    >>> layout = analyse(boxes)
    >>> [layout.line_text(i) for i in layout.title]
    ['Title Here']
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

__all__ = [
    "Box",
    "PageLayoutConfig",
    "Word",
    "Line",
    "Block",
    "Section",
    "Table",
    "Layout",
    "analyse",
    "flat_layout",
    "as_pairs",
]

Box = tuple[float, float, float, float]  # (x0, y0, x1, y1) pixels, x right, y down

_NUMBER_RE = re.compile(r"^[\s$€£¥(+-]*\d[\d,.' ]*%?[)]?\s*[a-zA-Z]{0,4}\.?$")
_CODE_RE = re.compile(r"^\s*(?:>>>|\$ |#include|def |import |from \S+ import)|[=(\[{].*[)\]}]|\w\s?=\s?\S")
_END_PUNCT = ".,;:!?"
PROSE_WORDS = 5  # a column of prose: its lines hold this many words or more (median)
HEAD_WIDTH = 0.6  # a body-size heading line is shorter than this share of its column's widest line
# a section number before a heading's words ("3. Methods", "2.1 Data", "IV. Results", "B. Costs")
_SECTION_NUMBER_RE = re.compile(r"^\s*(?:\d{1,2}(?:\.\d{1,2})*\.|\d{1,2}\.\d{1,2}|[IVX]{1,5}\.|[A-H]\.)\s*(?=[A-Z])")


@dataclass(frozen=True)
class PageLayoutConfig:
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
    # tables: rows are boxes on one baseline (``line_overlap``) whatever the gap between them
    table_min_rows: int = 2  # a table has at least this many rows ...
    table_min_cols: int = 2  # ... and this many columns filled in at least two rows each
    table_window: int = 8  # a row joins a table when it fits the header and this many rows above it (linear time)
    table_cell_gap: float = 1.2  # boxes of a row closer than this many cw are one cell (word-level OCR: a space),
    # unless both are numbers (a cramped table's neighbouring values) or the first is a "Key:"
    table_cell_words: int = 4  # a table row's cells have at most this many words (median); prose lines have more
    table_align: float = 0.7  # cells whose x-ranges come within this many cw of each other share a column
    table_first_gap: float = 4.0  # a table's second row starts within this many text heights below its first ...
    table_row_gap: float = 1.5  # ... and each later row within this many of the table's median row pitch
    table_header_size: float = 1.08  # a first row this much wider per character than the body is a header (bold)
    table_header_gap: float = 1.4  # ... or one set this many body pitches above the next row (a separated header)
    table_label_fill: float = 0.75  # a row-label column has text in at least this share of the body rows
    table_numeric_share: float = 0.5  # a column is numeric when more than this share of its body cells are numbers


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


@dataclass(frozen=True)
class Table:
    """Rows of separate cells aligned into columns; every index refers to the input boxes.

    A cell is usually one OCR box; when the OCR gives one box a word, the words of a cell (boxes closer than
    ``table_cell_gap``) form one cell, named in ``cells`` by its leftmost box and listed whole in ``parts``.
    """

    cells: tuple[tuple[int | None, ...], ...]  # row-major grid, top to bottom, left to right; None: empty cell
    columns: tuple[tuple[float, float], ...]  # (x0, x1) of each column, left to right
    header_row: int | None  # the row of column headers (the first row), None when there is none
    header_col: int | None  # the column of row labels, None when there is none
    box: Box  # union of the cells' boxes
    parts: tuple[tuple[int, ...], ...] = ()  # the boxes of each cell made of several boxes (first: its index in cells)

    def cell_boxes(self, r: int, c: int) -> tuple[int, ...]:
        """Every box index of cell ``(r, c)`` (empty for an empty cell)."""
        i = self.cells[r][c]
        if i is None:
            return ()
        return next((p for p in self.parts if p[0] == i), (i,))


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
    tables: list[Table] = field(default_factory=list)  # top to bottom
    _cell_index: dict[int, tuple[int, int, int]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._cell_index = {}
        for t, table in enumerate(self.tables):
            for r, row in enumerate(table.cells):
                for c in range(len(row)):
                    for i in table.cell_boxes(r, c):
                        self._cell_index[i] = (t, r, c)

    def cell_of(self, i: int) -> tuple[int, int, int] | None:
        """``(table, row, column)`` of box ``i``'s table cell, None when it is in no table."""
        return self._cell_index.get(i)

    def headers_of(self, i: int) -> tuple[int, ...]:
        """Box indices of the row header cell and the column header cell of box ``i``'s cell (those that exist and
        are not ``i``); empty when box ``i`` is not in a table's body (header cells themselves have none)."""
        where = self._cell_index.get(i)
        if where is None:
            return ()
        t, r, c = where
        table = self.tables[t]
        if r == table.header_row or c == table.header_col:
            return ()
        out: list[int] = []
        if table.header_col is not None:
            out += table.cell_boxes(r, table.header_col)
        if table.header_row is not None:
            out += table.cell_boxes(table.header_row, c)
        return tuple(j for j in out if j != i)

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
            "blocks": [
                {"role": b.role, "column": b.column, "text": self.block_text(k)[:60]} for k, b in enumerate(self.blocks)
            ],
            "sections": [
                {
                    "heading": None if s.heading is None else self.block_text(s.heading),
                    "column": s.column,
                    "blocks": len(s.blocks),
                }
                for s in self.sections
            ],
            "tables": [
                {
                    "columns": [list(c) for c in t.columns],
                    "header_row": t.header_row,
                    "header_col": t.header_col,
                    "cells": [
                        [
                            None if i is None else " ".join(self.boxes[j][0] for j in t.cell_boxes(r, c))
                            for c, i in enumerate(row)
                        ]
                        for r, row in enumerate(t.cells)
                    ],
                }
                for t in self.tables
            ],
            "config": asdict(PageLayoutConfig()),
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


def analyse(boxes: Sequence[Any], config: PageLayoutConfig | None = None) -> Layout:
    """Recover the layout of a page from its OCR boxes.

    Args:
        boxes: ``TextBox``-like objects or ``(text, (x0, y0, x1, y1))`` pairs, in pixels (any order).
        config: thresholds (default ``PageLayoutConfig()``).

    Returns:
        A ``Layout``; empty lists for an empty page.
    """
    cfg = config or PageLayoutConfig()
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
    labels = tuple(
        i
        for i, (t, _) in enumerate(pairs)
        if i not in values and i not in title_boxes and 0 < len(t.split()) <= cfg.label_max_words
    )
    tables = _tables(pairs, cw, cfg)
    return Layout(pairs, body_h, lines, columns, blocks, sections, title, words, values, labels, tables)


def flat_layout(boxes: Sequence[Any], config: PageLayoutConfig | None = None) -> Layout:
    """No layout analysis (the ablation): each box is its own line and paragraph, in the given (OCR) order, in one
    column; no title, headings or sections. Words and value/label typing are kept."""
    cfg = config or PageLayoutConfig()
    pairs = as_pairs(boxes)
    if not pairs:
        return Layout(boxes=[], body_height=0.0)
    lines = [Line((i,), t, b, 0) for i, (t, b) in enumerate(pairs)]
    blocks = [Block((i,), ln.box, 0, "paragraph") for i, ln in enumerate(lines)]
    x0 = min(b[0] for _, b in pairs)
    x1 = max(b[2] for _, b in pairs)
    words = [w for i in range(len(lines)) for w in _words(pairs, lines, i)]
    values = tuple(i for i, (t, _) in enumerate(pairs) if _NUMBER_RE.match(t))
    labels = tuple(i for i, (t, _) in enumerate(pairs) if i not in values and 0 < len(t.split()) <= cfg.label_max_words)
    body_h = float(np.median([_height(b) for _, b in pairs]))
    return Layout(
        pairs,
        body_h,
        lines,
        [(x0, x1)],
        blocks,
        [Section(None, tuple(range(len(blocks))), 0)],
        (),
        words,
        values,
        labels,
    )


def _lines(pairs: list[tuple[str, Box]], h: float, cfg: PageLayoutConfig) -> list[Line]:
    """Group boxes into lines, left to right: a box joins the line whose last box ends just left of it (gap at most
    ``line_gap * h``, ``h`` the page's median width per character) on the same baseline (vertical overlap at least
    ``line_overlap`` of the smaller height), the best-overlapping such line; otherwise it starts a line."""
    order = sorted(range(len(pairs)), key=lambda i: (pairs[i][1][0], pairs[i][1][1]))
    hs = [_height(b) for _, b in pairs]
    unit = max(hs)  # a line's last box overlapping a box vertically has its centre less than this far from it
    rows: dict[int, list[int]] = {}  # runs by their last box's centre height // unit (to meet only nearby runs)

    def row_of(i: int) -> int:
        return int((pairs[i][1][1] + pairs[i][1][3]) / 2 // unit)

    runs: list[list[int]] = []
    for i in order:
        b = pairs[i][1]
        k = row_of(i)
        best, best_ov = None, 0.0
        for r in sorted(r for kk in (k - 1, k, k + 1) for r in rows.get(kk, ())):  # creation order, as all runs
            last = pairs[runs[r][-1]][1]
            gap = b[0] - last[2]
            if not -0.5 * h <= gap <= cfg.line_gap * h:
                continue
            ov = (min(b[3], last[3]) - max(b[1], last[1])) / min(hs[i], hs[runs[r][-1]])
            if ov >= cfg.line_overlap and ov > best_ov:
                best, best_ov = r, ov
        if best is None:
            runs.append([i])
            rows.setdefault(k, []).append(len(runs) - 1)
        else:
            rows[row_of(runs[best][-1])].remove(best)
            runs[best].append(i)
            rows.setdefault(k, []).append(best)
    lines = [_line(pairs, run) for run in runs]
    lines.sort(key=lambda ln: (ln.box[1], ln.box[0]))
    return lines


def _line(pairs: list[tuple[str, Box]], idx: list[int]) -> Line:
    return Line(tuple(idx), " ".join(pairs[i][0] for i in idx), _union([pairs[i][1] for i in idx]), -1)


def _columns(lines: list[Line], h: float, cfg: PageLayoutConfig) -> list[tuple[float, float]]:
    """Column x-ranges: the page's text extent cut at the middle of each vertical white gutter (an interior x-range,
    at least ``gutter_min * h`` wide, that almost no line covers)."""
    x0 = min(ln.box[0] for ln in lines)
    x1 = max(ln.box[2] for ln in lines)
    width = int(np.ceil(x1 - x0)) + 1
    cover = np.zeros(width, dtype=np.int32)
    for ln in lines:
        cover[int(ln.box[0] - x0) : int(np.ceil(ln.box[2] - x0)) + 1] += 1
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


def _blocks(lines: list[Line], cw: float, cfg: PageLayoutConfig) -> list[Block]:
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
        head = _run_in_headings([lines[i] for i in by_col[col]], cfg)
        for n, i in enumerate(by_col[col]):
            if run:
                prev, cur = lines[run[-1]], lines[i]
                step = max(cur.box[1] - prev.box[1], cur.box[3] - prev.box[3])  # a taller heading box: bottoms
                ratio = _line_cw(cur) / _line_cw(prev)
                larger = cur if ratio > 1 else prev
                resized = max(ratio, 1 / ratio) >= cfg.heading_size and _heading_like(larger.text, cfg)
                if step > cfg.block_pitch * pitch or resized or head[n] or (head[n - 1] and len(run) == 1):
                    blocks.append(Block(tuple(run), _union([lines[j].box for j in run]), col, "paragraph"))
                    run = []
            run.append(i)
        if run:
            blocks.append(Block(tuple(run), _union([lines[j].box for j in run]), col, "paragraph"))
    return blocks


def _run_in_headings(col_lines: list[Line], cfg: PageLayoutConfig) -> list[bool]:
    """Which lines of a column (top to bottom) are body-size headings set close above their text: in a column of
    prose (lines of ``PROSE_WORDS`` words or more at the median), a short line (under ``HEAD_WIDTH`` of the column's
    width) that starts with a capital (after a section number: "3. Methods"), ends without punctuation and follows a
    line that ends a sentence. Such a line starts a block of its own even where the gap above or below it is no
    wider than the text's line pitch (a slightly rotated scan makes long lines' boxes taller and eats the gap)."""
    out = [False] * len(col_lines)
    if len(col_lines) < 4 or np.median([len(ln.text.split()) for ln in col_lines]) < PROSE_WORDS:
        return out
    width = max(ln.box[2] - ln.box[0] for ln in col_lines)
    for n in range(1, len(col_lines) - 1):
        text, before = col_lines[n].text.strip(), col_lines[n - 1].text.strip()
        out[n] = (
            0 < len(text.split()) <= cfg.plain_heading_max_words
            and col_lines[n].box[2] - col_lines[n].box[0] < HEAD_WIDTH * width
            and text[-1] not in _END_PUNCT
            and _SECTION_NUMBER_RE.sub("", text)[:1].isupper()
            and not _NUMBER_RE.match(text)
            and not _CODE_RE.search(text)
            and before[-1:] in ".!?"
            and len(col_lines[n + 1].text.split()) >= PROSE_WORDS
        )
    return out


def _roles(
    blocks: list[Block], lines: list[Line], cw: float, cfg: PageLayoutConfig
) -> tuple[list[Block], tuple[int, ...]]:
    """Title, headings, code, footnotes; returns the re-labelled blocks and the title's line indices."""
    top = min(b.box[1] for b in blocks)
    bottom = max(b.box[3] for b in blocks)
    extent = max(1.0, bottom - top)

    def text_h(b: Block) -> float:  # text size relative to the body (width per character)
        return float(np.median([_line_cw(lines[i]) for i in b.lines])) / cw

    title_block: int | None = None
    cands = [
        k
        for k, b in enumerate(blocks)
        if text_h(b) >= cfg.title_size and b.box[1] - top <= cfg.title_top_share * extent and len(b.lines) <= 3
    ]
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
        elif (
            len(b.lines) == 1
            and 0 < n_words <= cfg.plain_heading_max_words
            and text[-1] not in _END_PUNCT
            and not _CODE_RE.search(text)
            and not _NUMBER_RE.match(text)
            and _SECTION_NUMBER_RE.sub("", text)[:1].isupper()  # "3. Trade Routes": a numbered heading
            and _has_block_below(blocks, k, lines)
        ):
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


def _heading_like(text: str, cfg: PageLayoutConfig) -> bool:
    """Short, starting with a capital or digit, not ending like a sentence or a clause."""
    text = text.strip()
    return (
        0 < len(text.split()) <= cfg.heading_max_words
        and text[-1] not in _END_PUNCT
        and (text[0].isupper() or text[0].isdigit())
    )


def _has_block_below(blocks: list[Block], k: int, lines: list[Line]) -> bool:
    """A body-sized line is a heading only when a paragraph of two or more lines follows it in its column."""
    b = blocks[k]
    below = [o for o in blocks if o.column == b.column and o.box[1] > b.box[1]]
    if not below:
        return False
    nxt = min(below, key=lambda o: o.box[1])
    if len(nxt.lines) >= 2:
        return True
    # a heading at a column's foot whose text goes on in the next column: one line of prose below it, the column's
    # last, and a later column holds text
    return (
        nxt is max(below, key=lambda o: o.box[1])
        and len(_block_text(lines, nxt).split()) >= PROSE_WORDS
        and any(o.column > b.column for o in blocks)
    )


def _block_text(lines: list[Line], b: Block) -> str:
    return " ".join(lines[i].text for i in b.lines)


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


# --------------------------------------------------------------------------------------------------- tables


@dataclass(frozen=True)
class _Cell:
    """A table cell candidate: the boxes of one phrase on a baseline, left to right."""

    boxes: tuple[int, ...]
    box: Box
    text: str
    parts: tuple[tuple[str, Box], ...]  # text and box of each of its boxes


@dataclass(frozen=True)
class _Row:
    """The cells of one baseline, left to right."""

    cells: tuple[_Cell, ...]
    cy: float  # median centre height of the cells
    height: float  # median cell height
    x0: float
    x1: float


def _tables(pairs: list[tuple[str, Box]], cw: float, cfg: PageLayoutConfig) -> list[Table]:
    """Tables: runs of consecutive baseline rows (top to bottom, overlapping in x) of >= 2 short cells each, whose
    cells align into the same columns; a row that does not fit (a prose line, a single cell, a cell across two
    columns, a gap much larger than the table's row pitch) ends the runs it overlaps. Tables side by side stay
    apart (each run only meets the rows that overlap it in x)."""
    rows = _baseline_rows(pairs, cw, cfg)
    pad = cfg.table_align * cw / 2
    open_runs: list[list[_Row]] = []
    done: list[list[_Row]] = []
    for row in rows:
        cand = len(row.cells) >= 2 and _median([len(c.text.split()) for c in row.cells]) <= cfg.table_cell_words
        placed = False
        keep: list[list[_Row]] = []
        for run in open_runs:
            if not (row.x0 < max(r.x1 for r in run) and row.x1 > min(r.x0 for r in run)):
                keep.append(run)
            elif cand and not placed and _fits(run, row, pad, cfg):
                run.append(row)
                keep.append(run)
                placed = True
            else:
                done.append(run)
        open_runs = keep
        if cand and not placed:
            open_runs.append([row])
    done += open_runs
    tables = [t for run in done if len(run) >= cfg.table_min_rows for t in _table(run, pad, cfg)]
    tables.sort(key=lambda t: (t.box[1], t.box[0]))
    return tables


def _median(v: Sequence[float]) -> float:
    """Median of a short non-empty list (``np.median``'s overhead dominates at this size)."""
    s = sorted(v)
    k = len(s) // 2
    return float(s[k]) if len(s) % 2 else (s[k - 1] + s[k]) / 2


def _baseline_rows(pairs: list[tuple[str, Box]], cw: float, cfg: PageLayoutConfig) -> list[_Row]:
    """Boxes grouped by baseline whatever the gaps between them (a box joins the row whose neighbours of it in x it
    overlaps vertically by >= ``line_overlap`` of the smaller height, and horizontally by less than that share of the
    narrower width), then each row's boxes closer than ``table_cell_gap * cw`` merged into one cell (the words of a
    phrase; two numbers stay apart, and so do a "Key:" box and the box after it). Rows sorted top to bottom."""
    bx = [b for _, b in pairs]
    hs = [_height(b) for b in bx]
    cys = [(b[1] + b[3]) / 2 for b in bx]
    order = sorted(range(len(pairs)), key=lambda i: (cys[i], bx[i], pairs[i][0]))
    max_h = max(hs)
    groups: list[list[int]] = []  # box indices of each group, sorted by x0 (boxes of a row do not overlap in x)
    lefts: list[list[float]] = []  # their x0, for bisection
    bottoms: list[float] = []  # lowest box bottom of each group
    active: list[int] = []  # groups that may still take boxes (their boxes reach down near the current one)
    for i in order:
        x0, y0, x1, y1 = bx[i]
        h = hs[i]
        active = [g for g in active if bottoms[g] >= cys[i] - max_h]
        best, best_ov, best_pos = None, 0.0, 0
        for g in active:
            pos = bisect.bisect_left(lefts[g], x0)
            ov = 0.0
            for j in groups[g][max(0, pos - 1) : pos + 1]:  # the neighbours in x: the only boxes it may overlap
                o = bx[j]
                if min(x1, o[2]) - max(x0, o[0]) > cfg.line_overlap * min(x1 - x0, o[2] - o[0]):  # one above the other
                    ov = 0.0
                    break
                ov = max(ov, (min(y1, o[3]) - max(y0, o[1])) / min(h, hs[j]))
            if ov >= cfg.line_overlap and ov > best_ov:
                best, best_ov, best_pos = g, ov, pos
        if best is None:
            groups.append([i])
            lefts.append([x0])
            bottoms.append(y1)
            active.append(len(groups) - 1)
        else:
            groups[best].insert(best_pos, i)
            lefts[best].insert(best_pos, x0)
            bottoms[best] = max(bottoms[best], y1)
    rows: list[_Row] = []
    for g in groups:
        cells: list[list[int]] = [[g[0]]]
        for j in g[1:]:
            gap = pairs[j][1][0] - max(pairs[k][1][2] for k in cells[-1])
            left = pairs[cells[-1][-1]][0]
            numbers = _NUMBER_RE.match(pairs[j][0]) and _NUMBER_RE.match(left)  # neighbouring values: two cells
            if gap < cfg.table_cell_gap * cw and not numbers and not left.rstrip().endswith(":"):  # "Key:" | value
                cells[-1].append(j)
            else:
                cells.append([j])
        cs = tuple(_cell(c, tuple(pairs[k] for k in c)) for c in cells)
        rows.append(_row(cs))
    rows.sort(key=lambda r: (r.cy, r.x0))
    return rows


def _cell(boxes: Sequence[int], parts: Sequence[tuple[str, Box]]) -> _Cell:
    return _Cell(tuple(boxes), _union([b for _, b in parts]), " ".join(t for t, _ in parts), tuple(parts))


def _row(cells: Sequence[_Cell]) -> _Row:
    return _Row(
        tuple(cells),
        _median([(c.box[1] + c.box[3]) / 2 for c in cells]),
        _median([_height(c.box) for c in cells]),
        cells[0].box[0],
        max(c.box[2] for c in cells),
    )


def _fits(run: list[_Row], row: _Row, pad: float, cfg: PageLayoutConfig) -> bool:
    """Whether ``row`` continues the table ``run``: close enough below it, holding key/value pairs when the run's
    body does and only then, and its cells fall into distinct columns of the run (and leave every earlier row's
    cells in distinct columns). Only the first row and the ``table_window`` rows above ``row`` are looked at, so
    that a long table costs linear time; ``_table`` checks the whole run once at the end."""
    step = row.cy - run[-1].cy
    recent = run[-cfg.table_window :]
    if len(run) == 1:
        if step > cfg.table_first_gap * max(row.height, run[0].height):
            return False
    elif step > cfg.table_row_gap * _median(
        [b.cy - a.cy for a, b in zip(recent, recent[1:], strict=False)] or [run[1].cy - run[0].cy]
    ):
        return False
    if len(run) >= 2 and _keyed(row) != _keyed(run[-1]):  # "Subtotal:  $x" under line items: another structure
        return False
    rows = _split_first([run[0], *run[1:][-cfg.table_window :], row], pad)
    return _assign(rows, _table_columns(rows, pad)) is not None


def _keyed(row: _Row) -> bool:
    """Whether a row holds a "Key:" cell followed by another cell (a key/value pair)."""
    return any(c.text.rstrip().endswith(":") for c in row.cells[:-1])


def _body_columns(rows: list[_Row], pad: float) -> list[list[float]]:
    """The union of the body rows' (all rows' for one row) cells widened by ``pad`` on each side, left to right,
    except that a cell whose row already has a cell in the column starts the next one (OCR boxes of a key and its
    value may touch or overlap: they are still two columns)."""
    ivs = sorted((c.box[0] - pad, c.box[2] + pad, r) for r, row in enumerate(rows[1:] or rows) for c in row.cells)
    cols: list[list[float]] = []
    members: set[int] = set()  # rows with a cell in the last column
    for a, b, r in ivs:
        if cols and a <= cols[-1][1] and r not in members:
            cols[-1][1] = max(cols[-1][1], b)
            members.add(r)
        else:
            cols.append([a, b])
            members = {r}
    return cols


def _split_first(rows: list[_Row], pad: float) -> list[_Row]:
    """The rows with the first row's cells of several boxes cut where their boxes fall over different body columns
    (word-level OCR merges "Unit price" and "Amount" of a cramped header into one phrase)."""
    if len(rows) < 2 or all(len(c.boxes) == 1 for c in rows[0].cells):
        return rows
    cols = _body_columns(rows, pad)

    def col(b: Box) -> int | None:
        k = max(range(len(cols)), key=lambda k: min(b[2], cols[k][1]) - max(b[0], cols[k][0]))
        return k if min(b[2], cols[k][1]) > max(b[0], cols[k][0]) else None

    cells: list[_Cell] = []
    for c in rows[0].cells:
        groups: list[list[int]] = []  # positions in c.parts
        last: int | None = None
        for p, (_, b) in enumerate(c.parts):
            k = col(b)
            if groups and (k is None or last is None or k == last):
                groups[-1].append(p)
            else:
                groups.append([p])
            last = k if k is not None else last
        cells += [_cell([c.boxes[p] for p in g], [c.parts[p] for p in g]) for g in groups]
    return [_row(cells), *rows[1:]]


def _table_columns(rows: list[_Row], pad: float) -> list[tuple[float, float]]:
    """Column x-ranges: the union of the body rows' cells widened by ``pad`` on each side (aligned cells overlap),
    then the first row's cells that meet none of them: each joins the nearest column no other first-row cell meets
    (a header aligned otherwise than its body), else makes a column of its own (one the body leaves empty)."""
    cols = _body_columns(rows, pad)
    if len(rows) > 1:
        body_n = len(cols)
        heads = [(c.box[0] - pad, c.box[2] + pad) for c in rows[0].cells]
        claimed = {k for a, b in heads for k in range(body_n) if a < cols[k][1] and b > cols[k][0]}
        for a, b in heads:
            if any(a < y and b > x for x, y in cols):
                continue
            # a header aligned otherwise than its column (centred above right-aligned numbers): the nearest column
            # that no other header cell sits on, else a column of its own
            k = min(range(body_n), key=lambda k: max(cols[k][0] - b, a - cols[k][1]))
            if k in claimed:
                cols.append([a, b])
            else:
                claimed.add(k)
                cols[k] = [min(a, cols[k][0]), max(b, cols[k][1])]
        cols.sort()
    return [(a, b) for a, b in cols]


def _assign(rows: list[_Row], cols: list[tuple[float, float]]) -> list[list[int]] | None:
    """Each cell's column: the one it overlaps most, or (columns may overlap a little) the next column to the right
    when its left neighbour in the row took that one and it overlaps the next one too; None when two cells of a row
    still share a column."""
    starts = [a for a, _ in cols]  # sorted
    out: list[list[int]] = []
    for r in rows:
        ks: list[int] = []
        for c in r.cells:
            x0, x1 = c.box[0], c.box[2]
            k, best = -1, -float("inf")
            # right to left from the first column starting at or after the cell's end (the nearest, when the cell
            # overlaps no column: a header a little beside its column)
            j = min(bisect.bisect_left(starts, x1), len(cols) - 1)
            while j >= 0:
                ov = min(x1, cols[j][1]) - max(x0, cols[j][0])
                if ov > best:
                    k, best = j, ov
                if cols[j][1] < x0 and j < k:  # columns further left end even earlier (they barely overlap)
                    break
                j -= 1
            if ks and k <= ks[-1]:
                k = ks[-1] + 1
                if k >= len(cols) or min(x1, cols[k][1]) - max(x0, cols[k][0]) <= 0:
                    return None
            ks.append(k)
        out.append(ks)
    return out


def _table(run: list[_Row], pad: float, cfg: PageLayoutConfig) -> list[Table]:
    """The tables of a run of rows: its grid, split where a key/value stack sits beside other columns."""
    whole = run
    run = _split_first(run, pad)
    cols = _table_columns(run, pad)
    assign = _assign(run, cols)
    if assign is None:  # rows that each fit their window but not the whole table: cut at the longest good prefix
        k = len(whole) - 1
        while (
            k > cfg.table_min_rows
            and _assign(_split_first(whole[:k], pad), _table_columns(_split_first(whole[:k], pad), pad)) is None
        ):
            k -= 1
        return [t for part in (whole[:k], whole[k:]) if len(part) >= cfg.table_min_rows for t in _table(part, pad, cfg)]
    grid: list[list[_Cell | None]] = [[None] * len(cols) for _ in run]
    for r, (row, ks) in enumerate(zip(run, assign, strict=True)):
        for c, k in zip(row.cells, ks, strict=True):
            grid[r][k] = c
    return _grid_tables(grid, [r.cy for r in run], cfg)


def _caps(c: _Cell) -> bool:
    """Whether a cell's text is in capitals (two letters or more, none lower-case)."""
    letters = [ch for ch in c.text if ch.isalpha()]
    return len(letters) >= 2 and all(ch.isupper() for ch in letters)


def _numeric(c: _Cell | None) -> bool:
    return c is not None and bool(_NUMBER_RE.match(c.text))


def _grid_tables(grid: list[list[_Cell | None]], cys: list[float], cfg: PageLayoutConfig) -> list[Table]:
    """Header row and row-label column of a grid (rows: top to bottom, centre heights ``cys``); none with fewer
    than ``table_min_rows`` rows or ``table_min_cols`` columns filled in two rows or more, or with neither a header
    row nor a row-label column (two short lines of neighbouring text columns align too, but nothing names them).

    The first row is the header row when its cells are text above numbers, or larger (bold), set apart, all
    "Key:" or all capitals over a body that is not (never numbers; never above a key/value stack). The row-label
    column is the first column of text filled in most of two or more body rows with a column of numbers to its
    right, or a column of "Key:" labels.

    A column of "Key:" labels makes a key/value stack of itself and the column after it; columns on either side
    (an address beside the stack, another stack) are tables of their own, so a key labels only its own value.
    """
    keep = [r for r, row in enumerate(grid) if any(c is not None for c in row)]
    grid, cys = [grid[r] for r in keep], [cys[r] for r in keep]
    n, m = len(grid), len(grid[0]) if grid else 0
    if (
        n < cfg.table_min_rows
        or sum(sum(grid[r][k] is not None for r in range(n)) >= 2 for k in range(m)) < cfg.table_min_cols
    ):
        return []
    body = range(1, n)
    filled = [[grid[r][k] for r in body if grid[r][k] is not None] for k in range(m)]
    is_num = [bool(f) and sum(map(_numeric, f)) > cfg.table_numeric_share * len(f) for f in filled]
    colon = [sum(c.text.rstrip().endswith(":") for c in f) > len(f) / 2 if f else False for f in filled]
    header_col = next(
        (
            k
            for k in range(m)
            if len(filled[k]) >= cfg.table_label_fill * len(body)
            and not any(map(_numeric, filled[k]))
            and (colon[k] or (len(body) >= 2 and any(is_num[k + 1 :])))
        ),
        None,
    )
    if header_col is not None and colon[header_col] and m > 2:
        parts = [(0, header_col), (header_col, header_col + 2), (header_col + 2, m)]
        return [t for a, b in parts if b > a for t in _grid_tables([row[a:b] for row in grid], cys, cfg)]
    header_row = None
    top = [grid[0][k] for k in range(m) if k != header_col and grid[0][k] is not None]
    if top and not any(map(_numeric, top)) and not (header_col is not None and colon[header_col]):  # (key/value)
        rest = [grid[r][k] for r in body for k in range(m) if k != header_col and grid[r][k] is not None]
        by_numbers = any(is_num[k] for k in range(m) if k != header_col)
        larger = bool(rest) and (
            np.median([_cw(c.text, c.box) for c in top])
            >= cfg.table_header_size * np.median([_cw(c.text, c.box) for c in rest])
        )
        steps = [b - a for a, b in zip(cys[1:], cys[2:], strict=False)]
        separated = bool(steps) and cys[1] - cys[0] >= cfg.table_header_gap * float(np.median(steps))
        colons = all(c.text.rstrip().endswith(":") for c in top) and not any(colon)  # "Bill to:  Ship to:"
        caps = all(map(_caps, top)) and not all(map(_caps, rest))  # "NAME  CITY" over "Ada Byron  London"
        if by_numbers or larger or separated or colons or caps:
            header_row = 0
    if header_row is None and header_col is None:  # nothing names its cells: words that happen to align
        return []
    cells = tuple(tuple(None if c is None else c.boxes[0] for c in row) for row in grid)
    extents = tuple(
        (min(c.box[0] for c in col), max(c.box[2] for c in col))
        for col in ([grid[r][k] for r in range(n) if grid[r][k] is not None] for k in range(m))
    )
    parts = tuple(c.boxes for row in grid for c in row if c is not None and len(c.boxes) > 1)
    box = _union([c.box for row in grid for c in row if c is not None])
    return [Table(cells, extents, header_row, header_col, box, parts)]
