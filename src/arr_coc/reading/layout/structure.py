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

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from .page import (  # noqa: F401  (re-exported: moved from this module)
    _CODE_RE,
    _END_PUNCT,
    _NUMBER_RE,
    _SECTION_NUMBER_RE,
    HEAD_WIDTH,
    PROSE_WORDS,
    Block,
    Box,
    Layout,
    Line,
    PageLayoutConfig,
    Section,
    Table,
    Word,
    _cw,
    _height,
    _median_cw,
    _union,
    as_pairs,
)
from .tables import _tables  # noqa: F401  (re-exported: moved from this module)

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
