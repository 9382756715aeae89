"""The page layout's data: boxes, the thresholds (:class:`PageLayoutConfig`), lines, blocks, sections, tables and
the :class:`Layout` that holds them, the text patterns the analysis reads, and the box helpers (:func:`as_pairs`,
widths per character, unions). Moved from :mod:`.structure` unchanged; :mod:`.structure` re-exports every name."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

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
