"""A named section's extent on a multi-column page: the heading line a question names, and the lines it governs.

"Which year is mentioned in the section titled 'Multiple Domains'?", "the word after 'such' in the Nested Trace
Tree Formation section", "the last word of the section headed 'Correctness'" name a section by its title. A heading
governs the lines below it in ITS column (not the neighbouring one) up to the next heading, and when the column ends
first, the lines at the top of the next column. ``named_extent`` finds that extent on a ``Layout`` from the OCR
boxes alone:

- the heading line: the line whose words spell the title best (a section number before it, "4.3", "IV.", is
  allowed; a line holding many more words than the title is a sentence that mentions it, not its heading); it need
  not have been classed a heading (a body-size bold title reads like any short line);
- the extent: the lines after it in reading order (its column top to bottom, then the next columns top to bottom;
  lines that cross the gutter are skipped), up to the next *real* heading: a heading block of the layout, or a
  numbered heading-like line, that stands above prose (the line under it holds a sentence's words). A table's
  header cell or a figure's label read as a "heading" stands above numbers or other labels, and does not end the
  section.

``Extent.words`` are indices into ``Layout.words`` in that reading order; ``Extent.last_lines`` the lines holding the
section's last word (its last line, and its last line of prose when a caption or table closes the extent).

Example:
    >>> from arr_coc.reading.layout.structure import analyse
    >>> ext = named_extent(analyse(boxes), "Multiple Domains")
    >>> ext.heading, len(ext.lines)
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from ..text import fold
from .column_split import NARROW, PROSE_SHARE, _gutter_cuts, separate_columns, unshift
from .page import _END_PUNCT, HEAD_WIDTH, PROSE_WORDS, Layout
from .section_ends import (
    cut_word_open,
    ends_sentence,
    figure_label,
    line_runs,
    list_item,
    long_section_name,
    opens_list,
    out_of_outline,
    outline,
    question_title,
    row_fragment,
    taller_title,
)

__all__ = ["Extent", "named_extent", "words_of", "match_phrase", "long_section_name", "separate_columns"]

MATCH_MIN = 0.75  # share of the title's words a heading line must spell
EXTRA_WORDS = 2  # a heading line may hold this many words besides the title's (and its section number)
HEAD_MAX_WORDS = 10  # a heading line is at most this long
BELOW_PITCH = 3.0  # the line under a heading lies within this many of its heights
FOOTNOTE_HEIGHT = 0.92  # a footnote's lines are lower than this share of the body's line height
MIN_COLUMN = 6.0  # a layout column at least this many body line heights wide
OPEN_WIDTH = 0.85  # a line of prose this wide (a share of its column's widest) that ends mid-sentence goes on below
FORMULA_SKIP = 3  # a heading may stand above this many lines of a display formula, then prose (round 10)
SPACED_ANY = False  # round 10: a spaced title-case title ends a section (off: loses one of round 3's held out)
SPACED_HEAD = 0.5  # a spaced heading has white space above it of at least this share of its height
_FOOTNOTE_MARK_RE = re.compile(r"\s*\d{1,2}\s+[^\W\d_]")  # "13 We experimented ..."
_CAPTION_RE = re.compile(r"^\s*(?:fig(?:ure)?|table|tab|algorithm|listing)\.?\s*\d", re.I)
_NUM_HEAD_RE = re.compile(r"^\s*(?:\d{1,2}(?:\.\d{1,2})*\.?|[IVX]{1,5}\.|[A-H]\.\d{0,2})\s+\S")
_NUMBER_STRIP_RE = re.compile(
    r"^\s*(?:\d{1,2}(?:\.\d{1,2})*\.?|[IVX]{1,5}\.|[A-H]\.\d{0,2})\s*(?=[^\W\d_])"
)  # "8 ", "4.2 "


@dataclass(frozen=True)
class Extent:
    """A named section on a page."""

    heading: int  # index into Layout.lines of the heading line
    lines: tuple[int, ...]  # the lines it governs, reading order (heading excluded)
    words: tuple[int, ...]  # indices into Layout.words of those lines, reading order
    last_lines: tuple[int, ...]  # the line(s) that may hold its last word
    score: float  # how well the heading line spells the title (0-1)


def words_of(text: str) -> list[str]:
    """Lower-case alphanumeric tokens (the text path's ``fold``)."""
    return re.findall(r"[a-z0-9]+", fold(text))


def tok_eq(a: str, b: str) -> float:
    """How far two folded tokens are the same word: 1 equal, 0.8 one a prefix of the other (4+ letters) or one OCR
    slip apart, else 0 (also ``structural_query``'s phrase match)."""
    if a == b:
        return 1.0
    if len(a) >= 4 and len(b) >= 4 and (a.startswith(b) or b.startswith(a)):
        return 0.8
    if len(a) >= 4 and len(a) == len(b) and sum(x != y for x, y in zip(a, b, strict=True)) == 1:
        return 0.8  # one OCR slip
    return 0.0


def _title_score(line: str, name: str) -> float:
    """How well ``line`` reads as the heading ``name``: the share of the name's words it holds (each once, OCR
    slips allowed), 0 when it holds more than ``EXTRA_WORDS`` other words (after a section number)."""
    want = words_of(name)
    have = words_of(_NUMBER_STRIP_RE.sub("", line))
    if not want or not have or len(have) > len(want) + EXTRA_WORDS or len(have) > HEAD_MAX_WORDS:
        return 0.0
    # a name with letters spaced out by the text layer ("L A T E X") or glued by the OCR: compare without spaces
    if "".join(want) == "".join(have):
        return 1.0
    got = sum(max(tok_eq(w, h) for h in have) for w in want) / len(want)
    return got * (1.0 - 0.05 * max(0, len(have) - len(want)))


def line_columns(layout: Layout) -> list[int]:
    """Each line's column (-1: it crosses a gutter), from the gutters of the page's NARROW lines (under
    ``NARROW`` of the text's width): the lines of a title, an author block or a wide figure that cross the gutter
    hide it from ``Layout.columns`` on a paper's first page, not from these. Used only where the layout found one
    column; the layout's columns otherwise, and where the narrow lines show no gutter either."""
    lines = layout.lines
    h = max(1.0, layout.body_height)
    if sum(c[1] - c[0] >= MIN_COLUMN * h for c in layout.columns) >= 2:  # a margin stamp's strip is no column
        return [ln.column for ln in lines]
    x0 = min(ln.box[0] for ln in lines)
    x1 = max(ln.box[2] for ln in lines)
    width = x1 - x0
    narrow = [ln for ln in lines if ln.box[2] - ln.box[0] < NARROW * width]
    if len(narrow) < 8 or width < 4 * h:
        return [ln.column for ln in lines]
    cuts = _gutter_cuts(narrow, x0, width, h)
    if not cuts:  # a figure's labels may cross the gutter: the column's prose lines alone (near the usual length)
        usual = float(np.median([ln.box[2] - ln.box[0] for ln in narrow]))
        prose = [ln for ln in narrow if ln.box[2] - ln.box[0] >= PROSE_SHARE * usual]
        cuts = _gutter_cuts(prose, x0, width, h) if len(prose) >= 8 else []
    if not cuts:
        return [ln.column for ln in lines]
    edges = [x0, *cuts, x1]
    out = []
    for ln in lines:
        cx = (ln.box[0] + ln.box[2]) / 2
        k = next((c for c in range(len(edges) - 1) if edges[c] <= cx <= edges[c + 1]), 0)
        out.append(-1 if ln.box[0] < edges[k] - h or ln.box[2] > edges[k + 1] + h else k)
    return out


def _reading_order(layout: Layout, cols: list[int]) -> list[int]:
    """Line indices: each column top to bottom, columns left to right (lines crossing a gutter left out)."""
    return sorted(
        (i for i in range(len(layout.lines)) if cols[i] >= 0), key=lambda i: (cols[i], *layout.lines[i].box[1::-1])
    )


def _block_of(layout: Layout) -> dict[int, int]:
    return {i: k for k, b in enumerate(layout.blocks) for i in b.lines}


def _below(layout: Layout, order: list[int], pos: int, cols: list[int]) -> int | None:
    """The next line after ``order[pos]`` in its column, if it lies close under it."""
    i = order[pos]
    if pos + 1 >= len(order):
        return None
    j = order[pos + 1]
    a, b = layout.lines[i], layout.lines[j]
    h = a.box[3] - a.box[1]
    if cols[j] != cols[i] or b.box[1] - a.box[3] > BELOW_PITCH * h:
        return None
    return j


def _prose(text: str) -> bool:
    return len(text.split()) >= PROSE_WORDS and sum(c.isalpha() for c in text) >= 0.6 * len(text.replace(" ", ""))


def _heads_prose(layout: Layout, order: list[int], pos: int, cols: list[int], depth: int = 0) -> bool:
    """The line at ``order[pos]`` stands above a line of prose (or is its column's last line: a heading at a
    column's foot whose text goes on in the next column)."""
    j = _below(layout, order, pos, cols)
    if j is None:
        nxt = order[pos + 1] if pos + 1 < len(order) else None
        return nxt is not None and cols[nxt] != cols[order[pos]]
    skip = 0
    while skip < FORMULA_SKIP and _formula(layout.lines[j].text):  # a display formula under it
        k = _below(layout, order, pos + skip + 1, cols)
        if k is None:
            break
        j, skip = k, skip + 1
    pos += skip
    nxt = layout.lines[j].text.strip()
    two_line = nxt and len(nxt.split()) < PROSE_WORDS and nxt[-1] not in _END_PUNCT and _wordy(nxt)
    if depth < 1 and two_line:
        return _heads_prose(layout, order, pos + 1, cols, depth + 1)  # a heading on two lines
    return _prose(layout.lines[j].text)


def _open_above(layout: Layout, order: list[int], pos: int, cols: list[int], blocks: dict[int, int]) -> bool:
    """The line ``order[pos]``, as wide as the column, goes on with the full line of a paragraph right above it that
    leaves its sentence open ("the ratio is no more than" / "2. All other algorithms have an average ratio"): it
    heads nothing. A short line there is a heading all the same (the reader may have dropped a full stop above it);
    a caption above a heading is no paragraph."""
    if pos == 0 or cols[order[pos - 1]] != cols[order[pos]]:
        return False
    a, b = layout.lines[order[pos - 1]], layout.lines[order[pos]]
    text = a.text.strip()
    if not text or not (text[-1].isalnum() or text[-1] in ",;-") or not _prose(text) or _CAPTION_RE.match(text):
        return False
    k = blocks.get(order[pos - 1])
    if k is not None and layout.blocks[k].role != "paragraph":
        return False
    width = OPEN_WIDTH * _column_width(layout, order[pos - 1])  # both full lines: a heading is short
    full = a.box[2] - a.box[0] >= width and b.box[2] - b.box[0] >= width
    return full and b.box[1] - a.box[3] <= BELOW_PITCH * (a.box[3] - a.box[1])


def _heading_like(text: str) -> bool:
    t = text.strip()
    return (
        0 < len(t.split()) <= HEAD_MAX_WORDS
        and t[-1] not in _END_PUNCT
        and _NUMBER_STRIP_RE.sub("", t)[:1].isupper()
        and not _CAPTION_RE.match(t)
        and _wordy(t)
    )


def _wordy(text: str) -> bool:
    """Holds a word (three letters running), not only a subscript, a figure's label or numbers ("R", "x1", "12")."""
    return re.search(r"[^\W\d_]{3}", text) is not None


def _formula(text: str) -> bool:
    """A display formula's line (round 10): no word (three letters running) and a relation sign ("a 2 + b 2 = c 2");
    a table's row of numbers has none."""
    return not _wordy(text) and re.search(r"[=<>\u2264\u2265\u2248\u221d\u2208]", text) is not None


def _caps(text: str) -> bool:
    """A line set in capitals ("RIVER TRADE", "2 FIELD SITES"): a word of three letters, no lower-case letter."""
    letters = [c for c in text if c.isalpha()]
    return _wordy(text) and all(c.isupper() for c in letters)


def _is_stop(
    layout: Layout, order: list[int], pos: int, cols: list[int], blocks: dict[int, int], numbered: bool,
    caps: bool = False,
) -> bool:  # fmt: skip
    """Whether the line at ``order[pos]`` is the next section's heading: a heading of the layout, or a line in the
    named heading's own form (numbered; in capitals) that stands above prose."""
    i = order[pos]
    text = layout.lines[i].text
    if not (_heading_like(text) or question_title(text)):  # "5.2 Where to include ELMo?"
        return False
    k = blocks.get(i)
    role = layout.blocks[k].role if k is not None else "paragraph"
    flagged = role in ("heading", "title") or (numbered and _NUM_HEAD_RE.match(text) is not None)
    flagged = flagged or (caps and _caps(text))
    if not flagged or _hanging(layout, order, pos, cols):
        return False
    if list_item(text):  # "I. Statistical: uses one or more ..."
        return False
    if ROW_FRAGMENT and _row_fragment(layout, order, pos, cols):  # "First, although" | "|A|" | "is exponential ..."
        return False
    nxt = layout.lines[order[pos + 1]] if pos + 1 < len(order) and cols[order[pos + 1]] == cols[i] else None
    if FIGURE_LABEL and figure_label(layout.lines[i].box, nxt and (nxt.box, nxt.text)):  # an axis's "Recall"
        return False
    return _heads_prose(layout, order, pos, cols) and not _open_above(layout, order, pos, cols, blocks)


ROW_FRAGMENT = True  # round 11: a line with prose beside it on its row is no heading
LINE_RUNS = True  # round 11: the words kept around a phrase as one box a line, the spaces between them included
FIGURE_LABEL = TALLER_TITLE = True  # round 12: a figure's label is no heading; the tallest of equal title lines


def _row_fragment(layout: Layout, order: list[int], pos: int, cols: list[int]) -> bool:
    """The line at ``order[pos]`` has a run of words beside it on its row, in its column (``row_fragment``)."""
    i = order[pos]
    beside = [(layout.lines[j].box, layout.lines[j].text) for j in order if cols[j] == cols[i] and j != i]
    return row_fragment(layout.lines[i].box, beside)


def _hanging(layout: Layout, order: list[int], pos: int, cols: list[int]) -> bool:
    """The line at ``order[pos]`` is the last line of a list entry set with a hanging indent (a reference's "Plant J
    25:305-314"): it starts where the line above it starts, both indented from the line under it (the next entry's
    first line) by half a line's height or more."""
    if pos == 0 or pos + 1 >= len(order) or len({cols[order[q]] for q in (pos - 1, pos, pos + 1)}) != 1:
        return False
    a, b, c = (layout.lines[order[q]].box for q in (pos - 1, pos, pos + 1))
    h = b[3] - b[1]
    return abs(a[0] - b[0]) <= 0.25 * h and b[0] - c[0] >= 0.5 * h


def _small_footnote(layout: Layout, block, i: int, before: list[int]) -> bool:
    """Whether line ``i`` of ``block`` is a footnote's: the block is one and the line is set smaller than the
    section's lines ``before`` it (the page's body where none); a column's foot in the body's size is running text
    the layout may have joined to the other column's footnotes."""
    if block.role != "footnote":
        return False
    ref = np.median([layout.lines[j].box[3] - layout.lines[j].box[1] for j in before]) if before else None
    box = layout.lines[i].box
    own = box[3] - box[1]
    if _FOOTNOTE_MARK_RE.match(layout.lines[i].text):  # a footnote's marker raises its first line
        own = min(own, float(np.median([layout.lines[j].box[3] - layout.lines[j].box[1] for j in block.lines])))
    return own < FOOTNOTE_HEIGHT * float(ref if ref is not None else layout.body_height)


_RUNIN_SMALL = {"of", "and", "the", "in", "on", "for", "to", "a", "an", "with", "at", "by"}
RUNIN_MAX_WORDS = 6  # a run-in head ("Results.", "Data Collection.") is at most this many words
PREFIX_DROP = 2  # an unquoted name may have run on into this many of the question's words ("called Soil mention")


def _runin_score(text: str, name: str) -> tuple[float, int]:
    """(score, words) where ``text`` opens with the title ``name`` as a run-in head: the title's words (after a
    section number) end in "." or ":" and more text follows on the line ("Results. The harbour ..."); ``words``
    is how many of the line's words the head takes (its number included). (0, 0) otherwise."""
    want = words_of(name)
    raw = text.split()
    numbered = bool(raw) and _NUM_HEAD_RE.match(text) is not None and _NUMBER_STRIP_RE.match(text) is not None
    toks = raw[1:] if numbered and re.fullmatch(r"[\dIVXA-H.]+", raw[0]) else raw
    n = len(want)
    if not want or n > RUNIN_MAX_WORDS or len(toks) <= n or toks[n - 1][-1:] not in (".", ":"):
        return 0.0, 0
    have = [" ".join(words_of(t)) for t in toks[:n]]
    got = sum(tok_eq(w, h) for w, h in zip(want, have, strict=True)) / n
    return got, n + len(raw) - len(toks)


def _runin_head(layout: Layout, order: list[int], pos: int) -> bool:
    """The line at ``order[pos]`` opens a paragraph with a run-in head: up to ``RUNIN_MAX_WORDS`` capitalised words
    (small words between them aside) ending in "." or ":", then a capitalised word, and the line above it in its
    column (if any) ends a sentence."""
    toks = _NUMBER_STRIP_RE.sub("", layout.lines[order[pos]].text).split()
    k = next((j for j, t in enumerate(toks[:RUNIN_MAX_WORDS]) if t[-1] in ".:"), None)
    if k is None or k + 1 >= len(toks) or not toks[k + 1][:1].isupper():
        return False
    head = toks[: k + 1]
    if not all(t[:1].isupper() or (0 < j and t.lower() in _RUNIN_SMALL) for j, t in enumerate(head)):
        return False
    if len(head) == 1 and len(re.sub(r"\W", "", head[0])) < 4:  # "A." "Fig." "No."
        return False
    if _CAPTION_RE.match(layout.lines[order[pos]].text):
        return False
    prev = layout.lines[order[pos - 1]].text.strip() if pos > 0 else ""
    return not prev or prev[-1] in _END_PUNCT


def _furniture(layout: Layout, order: list[int], pos: int, cols: list[int]) -> bool:
    """The line at ``order[pos]`` is a page number or a running header's folio ("205", "pp. 396-496"): a column's
    first or last line without a word (three letters running) or a year in it."""
    i = order[pos]
    edge = pos == 0 or cols[order[pos - 1]] != cols[i] or pos + 1 == len(order) or cols[order[pos + 1]] != cols[i]
    text = layout.lines[i].text
    return edge and not _wordy(text) and not _YEAR_RE.search(text)


def _running_head(layout: Layout, order: list[int], pos: int, cols: list[int], last: int, gap: float) -> bool:
    """The line at ``order[pos]`` is a running header ("Rehabilitation Research and Practice") above a column the
    section goes on in: the column's first line with a word in it, heading-like, set apart from the text under it
    (3 usual gaps and a line's height), and either the line under it opens in lower case where the section's
    ``last`` line (the previous column's foot) left a sentence open, or it lies above every other column's first
    line."""
    i = order[pos]
    if pos + 1 >= len(order) or cols[order[pos + 1]] != cols[i]:
        return False
    above = [order[q] for q in range(pos) if cols[order[q]] == cols[i]]
    if not _heading_like(layout.lines[i].text) or any(_wordy(layout.lines[j].text) for j in above):
        return False
    if cols[last] == cols[i]:
        return False
    box, nxt = layout.lines[i].box, layout.lines[order[pos + 1]].box
    if nxt[1] - box[3] < max(3 * gap, box[3] - box[1]):  # set apart from the text under it
        return False
    below, prev = layout.lines[order[pos + 1]].text.strip(), layout.lines[last].text.strip()
    if below and below[0].islower() and prev and prev[-1] not in _END_PUNCT:
        return True
    tops = {}
    for j in order:
        if cols[j] != cols[i] and _wordy(layout.lines[j].text):
            tops.setdefault(cols[j], layout.lines[j].box[1])
    return bool(tops) and box[3] < min(tops.values())


def _title_wrap(layout: Layout, order: list[int], pos: int, cols: list[int]) -> bool:
    """The line right under the heading at ``order[pos]`` is its title's second line ("2 CHARACTERIZING EXPOSITORY"
    / "WRITING"): close under it in its column, as tall, short, in the same case, with no section number."""
    j = _below(layout, order, pos, cols)
    if j is None or j != order[pos + 1]:
        return False
    a, b = layout.lines[order[pos]], layout.lines[j]
    ha, hb = a.box[3] - a.box[1], b.box[3] - b.box[1]
    return (
        _heading_like(b.text)
        and _NUM_HEAD_RE.match(b.text) is None
        and len(b.text.split()) <= 4
        and abs(ha - hb) <= 0.2 * ha
        and b.box[1] - a.box[3] <= 0.5 * ha
        and _caps(a.text) == _caps(b.text)
    )


def _line_gap(layout: Layout, order: list[int], cols: list[int]) -> float:
    """The page's usual white space between a line and the next one in its column (the median)."""
    gaps = [
        layout.lines[j].box[1] - layout.lines[i].box[3]
        for i, j in zip(order, order[1:], strict=False)
        if cols[i] == cols[j] and layout.lines[j].box[1] > layout.lines[i].box[1]
    ]
    return float(np.median(gaps)) if gaps else 0.0


def _spaced(layout: Layout, order: list[int], pos: int, cols: list[int], gap: float) -> bool:
    """The line at ``order[pos]`` is a short line set apart from the line above it in its column by white space
    (more than twice the page's usual gap and half a line): a heading's form that the layout need not class as one
    (a body-size bold title joined to the paragraphs around it)."""
    i = order[pos]
    if pos == 0 or cols[order[pos - 1]] != cols[i] or not _heading_like(layout.lines[i].text):
        return False
    a, b = layout.lines[order[pos - 1]].box, layout.lines[i].box
    h = b[3] - b[1]
    return b[1] - a[3] >= max(2.0 * gap, SPACED_HEAD * h) and b[2] - b[0] <= HEAD_WIDTH * _column_width(layout, i)


def _paragraph_line(layout: Layout, i: int) -> bool:
    text, box = layout.lines[i].text.strip(), layout.lines[i].box
    return text[-1:] in ".!?" or box[2] - box[0] >= HEAD_WIDTH * _column_width(layout, i)


def _column_width(layout: Layout, i: int) -> float:
    """The width of the widest line of prose in line ``i``'s layout column (its own width where none)."""
    col = layout.lines[i].column
    ws = [ln.box[2] - ln.box[0] for ln in layout.lines if ln.column == col and _prose(ln.text)]
    return float(max(ws, default=layout.lines[i].box[2] - layout.lines[i].box[0]))


def _spaced_stop(layout: Layout, order: list[int], pos: int, cols: list[int], gap: float) -> bool:
    """Where the named heading is a spaced short line, the next one in that form, with a sentence ended above it and
    prose under it, heads the next section."""
    if not (_spaced(layout, order, pos, cols, gap) or _spaced_title(layout, order, pos, cols, gap)):
        return False
    prev = layout.lines[order[pos - 1]].text.strip()
    if not prev or prev[-1] not in _END_PUNCT or not _heads_prose(layout, order, pos, cols):
        return False
    below = layout.lines[order[pos + 1]].box  # prose under it: a paragraph's line, not a figure's label
    return below[2] - below[0] >= HEAD_WIDTH * _column_width(layout, order[pos + 1])


def _listed(
    layout: Layout, order: list[int], pos: int, cols: list[int], head: int, lines: list[int], gap: float
) -> bool:
    """The line at ``order[pos]`` cannot head the next section (round 10): the section's text so far ends in a colon
    that opens a list or a formula, or the line's number is out of the outline (``section_ends.out_of_outline``)."""
    if not LISTED:
        return False
    if lines and opens_list(layout.lines[lines[-1]].text):
        return True
    i = order[pos]
    if outline(layout.lines[i].text) is None:  # not numbered: no outline to be out of (and no O(n^2) look below)
        return False
    h = layout.lines[i].box[3] - layout.lines[i].box[1]
    above = _gap_above(layout, order, pos, cols)  # an entry of the same list is set with the same space above it
    inside = [
        layout.lines[j].text for j in lines if abs(_gap_above(layout, order, order.index(j), cols) - above) <= 0.5 * h
    ]
    return out_of_outline(layout.lines[i].text, layout.lines[head].text, inside)


def _gap_above(layout: Layout, order: list[int], pos: int, cols: list[int]) -> float:
    """The white space between the line at ``order[pos]`` and the line above it in its column (0 at a column's top)."""
    if pos == 0 or cols[order[pos - 1]] != cols[order[pos]]:
        return 0.0
    return max(0.0, layout.lines[order[pos]].box[1] - layout.lines[order[pos - 1]].box[3])


LISTED = True  # round 10's list rules (switched off in the leave-one-group-out runs)
TOP_STOP = True  # round 10's title at a column's top


def _top_stop(layout: Layout, order: list[int], pos: int, cols: list[int], last: list[int]) -> bool:
    """The line at ``order[pos]`` is a short title at the top of the column the section would go on in ("Limitations"
    over "Our systematic review has ..."): its column's first line (a running header set apart above it aside),
    heading-like and short; the last line of prose of the section so far (``last``: its lines, ending in the
    previous column) ends a sentence; the line close under it opens a paragraph, indented by half a line's height
    or more, as wide as a paragraph's line and holding prose."""
    i = order[pos]
    if not TOP_STOP or cols[last[-1]] == cols[i]:  # the section has not reached this column yet
        return False
    above = [order[q] for q in range(pos) if cols[order[q]] == cols[i]]
    if len(above) > 1 or (
        above and _gap_above(layout, order, pos, cols) < layout.lines[above[0]].box[3] - layout.lines[above[0]].box[1]
    ):
        return False  # the column's first line (a running header set apart above it aside)
    text, box = layout.lines[i].text, layout.lines[i].box
    if not _heading_like(text) or box[2] - box[0] > HEAD_WIDTH * _column_width(layout, i):
        return False
    prose = [j for j in last if _prose(layout.lines[j].text)]
    if not prose or not ends_sentence(layout.lines[prose[-1]].text):  # a page's foot ("www.annals.org") aside
        return False
    j = _below(layout, order, pos, cols)
    if j is None or not _prose(layout.lines[j].text):
        return False
    b = layout.lines[j].box
    h = box[3] - box[1]
    return b[0] - box[0] >= 0.5 * h and b[2] - b[0] >= HEAD_WIDTH * _column_width(layout, j)


def _title_case(text: str) -> bool:
    """Most of the line's words of four letters or more open with a capital ("Surveillance Systems Collecting Other
    Kinds of Data"), and it has three of them."""
    long = [t for t in text.split() if sum(c.isalpha() for c in t) >= 4]
    return len(long) >= 3 and sum(t[:1].isupper() for t in long) >= 0.8 * len(long)


def _spaced_title(layout: Layout, order: list[int], pos: int, cols: list[int], gap: float) -> bool:
    """A spaced title too wide for ``_spaced`` (round 10): white space above it as ``_spaced`` asks, set in title
    case, and the line close under it opens a paragraph indented by half a line's height or more."""
    i = order[pos]
    if not SPACED_ANY or pos == 0 or pos + 1 >= len(order) or cols[order[pos - 1]] != cols[i]:
        return False
    text = _NUMBER_STRIP_RE.sub("", layout.lines[i].text)
    if not _heading_like(text) or not _title_case(text) or re.search(r"\d|\.\s", text):  # "J. Goodman. 2003. ..."
        return False
    a, b = layout.lines[order[pos - 1]].box, layout.lines[i].box
    h = b[3] - b[1]
    if b[1] - a[3] < max(2.0 * gap, SPACED_HEAD * h):
        return False
    j = _below(layout, order, pos, cols)
    return j is not None and layout.lines[j].box[0] - b[0] >= 0.5 * h


def _find_heading(layout: Layout, order: list[int], name: str) -> tuple[float, int, int]:
    """(score, position in ``order``, run-in words) of the line that heads the section ``name``: a line that reads
    as the title; else a paragraph opening with it as a run-in head ("Results. The ..."); else the same for the
    name without its last one or two words (an unquoted name in a question runs on: "the section called Soil
    mention"). ``run-in words``: 0 for a heading line, else how many of the line's words the run-in head takes."""
    names = [name]
    toks = name.split()
    names += [" ".join(toks[:-d]) for d in range(1, PREFIX_DROP + 1) if len(toks) - d >= 1]
    for cand in names:
        scored = [(_title_score(layout.lines[i].text, cand), -p, p) for p, i in enumerate(order)]
        best, _, pos = max(scored)
        if best >= MATCH_MIN:
            tall = [
                (p, layout.lines[order[p]].box[3] - layout.lines[order[p]].box[1]) for s, _, p in scored if s == best
            ]
            return best, taller_title(tall, pos) if TALLER_TITLE else pos, 0
        runs = [(*_runin_score(layout.lines[i].text, cand), -p, p) for p, i in enumerate(order)]
        best, n, _, pos = max(runs)
        if best >= MATCH_MIN:
            return best, pos, n
    return 0.0, 0, 0


def named_extent(layout: Layout, name: str) -> Extent | None:
    """The section titled ``name`` on ``layout`` (None when no line reads as that title well enough)."""
    if not layout.lines or not words_of(name):
        return None
    cols = line_columns(layout)
    order = _reading_order(layout, cols)
    if not order:
        return None
    best, pos, runin = _find_heading(layout, order, name)
    if best < MATCH_MIN:
        return None
    head = order[pos]
    numbered = _NUM_HEAD_RE.match(layout.lines[head].text) is not None
    caps = not runin and _caps(layout.lines[head].text)
    blocks = _block_of(layout)
    gap = _line_gap(layout, order, cols)
    spaced = not runin and _spaced(layout, order, pos, cols, gap)
    lines: list[int] = []
    for p in range(pos + 1, len(order)):
        if lines and _running_head(layout, order, p, cols, lines[-1], gap):
            continue
        if p == pos + 1 and not runin and _title_wrap(layout, order, pos, cols):
            continue
        k = blocks.get(order[p])
        small = k is not None and _small_footnote(layout, layout.blocks[k], order[p], lines)
        cut = bool(lines) and cut_word_open(layout.lines[lines[-1]].text)  # "in all set-": the word goes on
        cut = cut or _listed(layout, order, p, cols, head, lines, gap)
        if not small and not cut and _is_stop(layout, order, p, cols, blocks, numbered, caps):  # "13 We experimented"
            break
        if (spaced or SPACED_ANY) and not cut and _spaced_stop(layout, order, p, cols, gap):
            break
        if lines and not cut and _top_stop(layout, order, p, cols, lines):
            break
        if runin and _runin_head(layout, order, p):
            break
        if _furniture(layout, order, p, cols):
            continue
        if not small:  # a footnote's lines are not running text
            lines.append(order[p])
    if runin:  # the head line's words after the run-in title are the section's first words
        lines.insert(0, head)
    if not lines:
        return None
    line_pos = {i: n for n, i in enumerate(lines)}
    words = sorted(
        (k for k, w in enumerate(layout.words) if w.line in line_pos), key=lambda k: line_pos[layout.words[k].line]
    )
    if runin:
        words = words[runin:]
    # its last word: the extent's last line, and its last line of prose when a caption, a table or a figure's
    # labels close the extent
    last = [lines[-1]]
    if not _wordy(layout.lines[lines[-1]].text):  # a page number or a formula's tail closes the extent
        last += [i for i in lines if _wordy(layout.lines[i].text)][-1:]
    prose = [i for i in lines if not _CAPTION_RE.match(layout.lines[i].text) and _prose_block(layout, blocks, i)]
    if prose and prose[-1] != lines[-1]:  # a paragraph's line: as wide as the column, or ending a sentence
        prose = [i for i in prose if _paragraph_line(layout, i)] or prose
    if prose and prose[-1] != lines[-1]:
        last.append(prose[-1])
    if not any(ends_sentence(layout.lines[i].text) for i in last):  # a formula closes it: its last sentence's end
        last += [i for i in lines if ends_sentence(layout.lines[i].text)][-1:]
    return Extent(head, tuple(lines), tuple(words), tuple(last), best)


def _prose_block(layout: Layout, blocks: dict[int, int], i: int) -> bool:
    """Line ``i`` belongs to a paragraph of prose (a block whose longest line holds a sentence's words)."""
    k = blocks.get(i)
    if k is None:
        return _prose(layout.lines[i].text)
    b = layout.blocks[k]
    return b.role == "paragraph" and any(_prose(layout.lines[j].text) for j in b.lines)


def match_phrase(layout: Layout, ids: tuple[int, ...] | list[int], phrase: str) -> tuple[int, int] | None:
    """(first, last) positions in ``ids`` (indices into ``layout.words``) of the best occurrence of ``phrase`` (the
    most of its tokens in order, OCR slips allowed; ties to the earliest), or None under 0.6."""
    target = words_of(phrase)
    if not target or not ids:
        return None
    toks = [" ".join(words_of(layout.words[k].text)) for k in ids]
    n = len(target)
    best, at = 0.0, None
    for p in range(0, max(1, len(toks) - n + 1)):
        window = toks[p : p + n]
        s = sum(tok_eq(a, b) for a, b in zip(window, target, strict=False)) / n
        if s > best + 1e-9:
            best, at = s, p
    if at is None or best < 0.6:
        return None
    return at, min(at + n - 1, len(ids) - 1)


AFTER_WORDS = 3  # words kept after (before) the phrase, as ``structural_query.AFTER_PHRASE_WORDS``
_YEAR_RE = re.compile(r"\W*(1[5-9]\d\d|20\d\d)(?:s|'s)?[a-z]?\W*")


def named_evidence(layout: Layout, sq) -> tuple[str, list, str] | None:
    """``(rule, regions, detail)`` for a question about a named section (``sq``: a ``StructuralQuery`` with
    ``named`` and one of ``after`` / ``before`` / ``year`` / ``word_of``), searched ONLY in that section's extent;
    the heading line is kept too. None when the section is not found or the asked item is not in it (the caller
    falls back to its page-wide rules)."""
    if not sq.named or not (sq.after or sq.before or sq.year or sq.word_of):
        return None
    sep = separate_columns(layout)
    if sep is not None:  # lines of two columns read as one: the page again with its columns moved apart
        got = _named_evidence(sep[0], sq)
        if got is not None:
            return got[0], [unshift(r, sep[1]) for r in got[1]], got[2] + ", columns separated"
    return _named_evidence(layout, sq)


def _named_evidence(layout: Layout, sq) -> tuple[str, list, str] | None:
    ext = named_extent(layout, sq.named)
    if ext is None:
        return None
    head = [layout.lines[ext.heading].box]
    title = layout.lines[ext.heading].text
    if sq.after or sq.before:
        span = match_phrase(layout, ext.words, sq.after or sq.before)
        if span is None:
            return None
        a, b = span
        pos = range(a, b + 1 + AFTER_WORDS) if sq.after else range(max(0, a - AFTER_WORDS), b + 1)
        kept = [layout.words[ext.words[p]] for p in pos if 0 <= p < len(ext.words)]
        regions = line_runs([(w.line, w.box) for w in kept]) if LINE_RUNS else [w.box for w in kept]
        return "after-phrase", regions + head, f"section {title!r} (extent), phrase at word {ext.words[a]}"
    if sq.year:
        years = [k for k in ext.words if _YEAR_RE.fullmatch(fold(layout.words[k].text))]
        if not years:
            return None
        regions = [layout.words[k].box for k in years]
        return "year-in-unit", regions + head, f"section {title!r} (extent), {len(years)} year(s)"
    target = ext.last_lines if sq.word_of == "last" else ext.lines[:1]
    regions = [layout.lines[i].box for i in target]
    return "word-of-unit", regions + head, f"section {title!r} (extent), {sq.word_of} word"
